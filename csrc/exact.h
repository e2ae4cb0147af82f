// Exact sums (kernel="exact"): the arithmetic that the CPU and CUDA kernels share, host and
// device code, no ATen. Every output is the exact sum of its inputs rounded once to the
// output's format, round to nearest, ties to even; so it is the same bits whatever the
// order of the additions: batch, layout, thread count, device or number of GPUs.
//
// How a kernel uses it:
// 1. The common path sums in whatever order it likes into a CertifiedSum: an
//    approximation hi + lo of the exact sum S with a bound on its error,
//    |S - (hi + lo)| <= bound. float16, bfloat16 and float32 elements (exact in a
//    double) are added into plain double accumulators alongside their absolute values,
//    and the classic bound of a rounded sum (Higham, "Accuracy and Stability of Numerical
//    Algorithms", 2002, section 4.2) certifies them: certified_rounded_sum. float64
//    elements go through TwoSum, which keeps each addition's error exactly, and only the
//    sum of those errors is rounded: certified_two_sum_chain. Partial results (lanes,
//    threads, blocks, chunks, passes, ranks) merge with combine(), exactly up to two tiny
//    errors that go into the bound; any order of merging is fine.
// 2. certify<T>() rounds the CertifiedSum to T and succeeds when every value its bound
//    allows rounds to the same T: then that is the correctly rounded exact sum.
// 3. Where certification fails (cancellation near a rounding boundary, ties, NaN and
//    infinities, overflow), the output is recomputed from its elements with a
//    Superaccumulator, which adds them exactly as integers (Neal, "Fast exact summation
//    using small and large superaccumulators", 2015: the small superaccumulator) and
//    rounds once. Its digits also travel between ranks: int64 digits that an all-reduce
//    adds without rounding.
//
// Special values follow IEEE addition: NaN if any element is NaN or both infinities
// occur, else an infinity if one occurs; a finite sum that rounds beyond the format's
// largest value is an infinity of its sign. An exact sum of 0 is +0.0 (torch.sum's sum of
// -0.0s is +0.0 too).
#pragma once

#include <c10/util/BFloat16.h>
#include <c10/util/Half.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <type_traits>

#ifndef WARPREDUCE_HOST_DEVICE  // as geometry.h defines it
#if defined(__CUDACC__)
#define WARPREDUCE_HOST_DEVICE __host__ __device__
#else
#define WARPREDUCE_HOST_DEVICE
#endif
#endif

namespace warpreduce::exact {

// ---- Bits -----------------------------------------------------------------------------

// The bits of a value as another type of the same size: memcpy, which compiles to a
// register move on the host and on the device (no aliasing through pointers).
template <typename To, typename From>
WARPREDUCE_HOST_DEVICE inline To bits_as(const From& from) {
  static_assert(sizeof(To) == sizeof(From));
  To to;
  memcpy(&to, &from, sizeof to);
  return to;
}

WARPREDUCE_HOST_DEVICE inline uint64_t double_bits(double x) { return bits_as<uint64_t>(x); }
WARPREDUCE_HOST_DEVICE inline double double_from_bits(uint64_t bits) {
  return bits_as<double>(bits);
}

// Leading zero bits of x, which is not 0.
WARPREDUCE_HOST_DEVICE inline int count_leading_zeros(uint64_t x) {
#if defined(__CUDA_ARCH__)
  return __clzll(static_cast<long long>(x));
#elif defined(__GNUC__) || defined(__clang__)
  return __builtin_clzll(x);
#else
  int n = 0;
  for (uint64_t top = uint64_t{1} << 63; !(x & top); top >>= 1) ++n;
  return n;
#endif
}

// Not NaN and not an infinity (a bit test: right under any floating-point flags).
WARPREDUCE_HOST_DEVICE inline bool is_finite(double x) {
  return ((double_bits(x) >> 52) & 0x7ff) != 0x7ff;
}

// ---- The formats a sum rounds to ------------------------------------------------------
// Format<T>: binary floating point with kPrecision significand bits (the hidden bit
// counted), exponents of normal numbers up to kMaxExponent, kBits bits in all.

template <typename T>
struct Format;

template <>
struct Format<double> {
  static constexpr int kPrecision = 53, kMaxExponent = 1023, kBits = 64;
  WARPREDUCE_HOST_DEVICE static uint64_t to_bits(double x) { return double_bits(x); }
  WARPREDUCE_HOST_DEVICE static double from_bits(uint64_t b) { return double_from_bits(b); }
};

template <>
struct Format<float> {
  static constexpr int kPrecision = 24, kMaxExponent = 127, kBits = 32;
  WARPREDUCE_HOST_DEVICE static uint64_t to_bits(float x) { return bits_as<uint32_t>(x); }
  WARPREDUCE_HOST_DEVICE static float from_bits(uint64_t b) {
    return bits_as<float>(static_cast<uint32_t>(b));
  }
};

// The 16-bit formats: c10's types hold their bits in .x.
template <typename T, int Precision, int MaxExponent>
struct Format16 {
  static constexpr int kPrecision = Precision, kMaxExponent = MaxExponent, kBits = 16;
  WARPREDUCE_HOST_DEVICE static uint64_t to_bits(T x) { return x.x; }
  WARPREDUCE_HOST_DEVICE static T from_bits(uint64_t b) {
    return T(static_cast<unsigned short>(b), T::from_bits());
  }
};
template <>
struct Format<c10::Half> : Format16<c10::Half, 11, 15> {};
template <>
struct Format<c10::BFloat16> : Format16<c10::BFloat16, 8, 127> {};

// What follows from a format's parameters.
template <typename T>
struct FormatConstants {
  using F = Format<T>;
  static constexpr int kPrecision = F::kPrecision;
  static constexpr int kMaxExponent = F::kMaxExponent;
  static constexpr int kMinExponent = 1 - kMaxExponent;  // of the normal numbers
  // The exponent of the smallest subnormal: every value of T is a multiple of 2^kQuantum.
  static constexpr int kQuantum = kMinExponent - (kPrecision - 1);
  static constexpr int kExponentBits = F::kBits - kPrecision;
  static constexpr uint64_t kSignBit = uint64_t{1} << (F::kBits - 1);
  static constexpr uint64_t kInfinityBits = ((uint64_t{1} << kExponentBits) - 1)
                                            << (kPrecision - 1);
  static constexpr uint64_t kNanBits = kInfinityBits | (uint64_t{1} << (kPrecision - 2));
  static constexpr uint64_t kFractionMask = (uint64_t{1} << (kPrecision - 1)) - 1;
  // max + ulp(max) / 2 = (2 - 2^-kPrecision) 2^kMaxExponent, as a double (none for double
  // itself): the least magnitude that rounds to infinity.
  static constexpr int kShift = kPrecision < 53 ? 52 - kPrecision : 0;
  static constexpr uint64_t kOverflowThresholdBits =
      (static_cast<uint64_t>(kMaxExponent + 1023) << 52) |
      (((uint64_t{1} << kPrecision) - 1) << kShift);
  WARPREDUCE_HOST_DEVICE static double overflow_threshold() {
    return double_from_bits(kOverflowThresholdBits);
  }
};

// ---- Rounding, with integer operations only -------------------------------------------

// The bits of T nearest to (m + f) * 2^e, ties to even, with the sign `negative`: f in
// [0, 1) is the part below m's last bit, and `sticky` says whether it is nonzero (the
// rounding position is at least 11 bits above m's last bit once m is normalized, so that
// is all the rounding needs to know of it). Subnormals, and overflow to infinity at the
// threshold round to nearest sets (max + ulp(max) / 2), come out of the same integer
// arithmetic: the exponent field and the significand are added, so a significand that
// rounds up to the next power of two carries into the exponent.
template <typename T>
WARPREDUCE_HOST_DEVICE inline uint64_t round_to_bits(bool negative, uint64_t m, int e,
                                                     bool sticky) {
  using C = FormatConstants<T>;
  const uint64_t sign = negative ? C::kSignBit : 0;
  if (m == 0) return sign;
  const int lead = count_leading_zeros(m);
  m <<= lead;  // bit 63 set; the value is m * 2^e
  e -= lead;
  const int top = e + 63;  // the value is in [2^top, 2^(top + 1))
  if (top > C::kMaxExponent) return sign | C::kInfinityBits;
  int quantum = top - (C::kPrecision - 1);  // the weight of the result's last bit
  if (quantum < C::kQuantum) quantum = C::kQuantum;  // subnormal
  const int shift = quantum - e;  // bits of m below the result's last bit: >= 11
  uint64_t kept = 0;
  if (shift <= 64) {  // else the value is below half the smallest subnormal: zero
    const uint64_t rest = shift == 64 ? m : m & ((uint64_t{1} << shift) - 1);
    const uint64_t half = uint64_t{1} << (shift - 1);
    kept = shift == 64 ? 0 : m >> shift;
    if (rest > half || (rest == half && (sticky || (kept & 1)))) ++kept;
  }
  uint64_t bits = (static_cast<uint64_t>(quantum - C::kQuantum) << (C::kPrecision - 1)) + kept;
  if (bits > C::kInfinityBits) bits = C::kInfinityBits;
  return sign | bits;
}

// x rounded to T, to nearest, ties to even, straight from the double (through float
// first would round twice); NaN stays NaN, infinities and signed zeros stay.
// Integer operations only: right in any floating-point environment.
template <typename T>
WARPREDUCE_HOST_DEVICE inline T round_double_to(double x) {
  if constexpr (std::is_same_v<T, double>) {
    return x;
  } else {
    using C = FormatConstants<T>;
    const uint64_t bits = double_bits(x);
    const bool negative = (bits >> 63) != 0;
    const int exponent_field = static_cast<int>((bits >> 52) & 0x7ff);
    const uint64_t fraction = bits & ((uint64_t{1} << 52) - 1);
    if (exponent_field == 0x7ff) {
      return Format<T>::from_bits(fraction ? C::kNanBits
                                           : (negative ? C::kSignBit : 0) | C::kInfinityBits);
    }
    const uint64_t m = exponent_field ? fraction | (uint64_t{1} << 52) : fraction;
    const int e = exponent_field ? exponent_field - 1075 : -1074;
    return Format<T>::from_bits(round_to_bits<T>(negative, m, e, /*sticky=*/false));
  }
}

// round_double_to in the default floating-point environment (round to nearest,
// subnormals kept), the one every certified sum assumes: on the host, float takes the
// processor's conversion, which is then the same and several times cheaper. On the
// device the conversions name their rounding (cvt.rn, no .ftz: to nearest even,
// subnormals kept, one rounding from double), one instruction where the integer rounding
// took about thirty in every certification, once an output; bfloat16 has one from sm_90
// on.
template <typename T>
WARPREDUCE_HOST_DEVICE inline T round_double_to_nearest(double x) {
#if defined(__CUDA_ARCH__)
  if constexpr (std::is_same_v<T, float>) return __double2float_rn(x);
  if constexpr (std::is_same_v<T, c10::Half>) {
    unsigned short bits;
    asm("cvt.rn.f16.f64 %0, %1;" : "=h"(bits) : "d"(x));
    return Format<T>::from_bits(bits);
  }
#if __CUDA_ARCH__ >= 900
  if constexpr (std::is_same_v<T, c10::BFloat16>) {
    unsigned short bits;
    asm("cvt.rn.bf16.f64 %0, %1;" : "=h"(bits) : "d"(x));
    return Format<T>::from_bits(bits);
  }
#endif
#else
  if constexpr (std::is_same_v<T, float>) return static_cast<float>(x);
#endif
  return round_double_to<T>(x);
}

// ---- Error-free transformations -------------------------------------------------------

// s + e == a + b exactly, s = fl(a + b) (Knuth's TwoSum: 6 additions, any a and b). Not
// exact only where s overflows, and then s, or e, or what e feeds, is not finite.
WARPREDUCE_HOST_DEVICE inline void two_sum(double a, double b, double& s, double& e) {
  s = a + b;
  const double b_virtual = s - a;
  e = (a - (s - b_virtual)) + (b - b_virtual);
}

// The same in 3 additions, where |a| >= |b| or a == 0 (Dekker's Fast2Sum).
WARPREDUCE_HOST_DEVICE inline void fast_two_sum(double a, double b, double& s, double& e) {
  s = a + b;
  e = b - (s - a);
}

// ---- Certified sums -------------------------------------------------------------------

constexpr double kUnitRoundoff = 0x1p-53;  // u: a rounded result is off by at most u |x|

// The exact sum S of some elements as hi + lo, with |S - (hi + lo)| <= bound. Plain data
// (no constructor), so that it can live in registers, shared memory and tensors of 3
// doubles. Not finite anywhere: no certificate (specials or overflow on the way).
struct CertifiedSum {
  double hi;
  double lo;
  double bound;
};

WARPREDUCE_HOST_DEVICE inline CertifiedSum zero_sum() { return {0.0, 0.0, 0.0}; }

// gamma(n) = n u / (1 - n u): a result of n rounded operations on exact inputs is off by
// a factor within 1 +- gamma(n). Infinite, certifying nothing, past n u = 2^-10.
// (Bounded without a division, which costs dozens of instructions on a GPU: for
// x <= 1/2, 1 / (1 - x) <= 1 + 2x.)
WARPREDUCE_HOST_DEVICE inline double gamma(double n) {
  const double nu = n * kUnitRoundoff;
  return nu < 0x1p-10 ? nu * (1 + 2 * nu) : INFINITY;
}

// Bounds are computed in round to nearest too, a few operations at each step and merge;
// certify() widens them by this factor, which covers the roundings of any computation of
// a bound of fewer than 2^30 operations (each off by a factor of at most 1 + 2^-53).
constexpr double kBoundSlack = 1 + 0x1p-20;

// An upper bound of sum |x| from abs_sum, the |x| added up in double along chains of at
// most `depth` rounded additions each (its roundings shrink it by at most a factor
// 1 - gamma(depth)).
WARPREDUCE_HOST_DEVICE inline double abs_sum_bound(double abs_sum, double depth) {
  return abs_sum * (1 + 2 * gamma(depth));
}

// The same for |x| added up in float (unit roundoff u = 2^-24): cheaper where elements
// are float16, bfloat16 or float32; infinite, certifying nothing, if it overflowed. Each
// rounded addition of nonnegative values returns at least (1 - u) times the exact sum, so
// the float sum is at least (1 - u)^depth >= 1 - depth u times sum |x|: a bound for
// chains of up to 2^23 additions (a thread's chain of a long column passes 2^14, where
// the tighter gamma form of abs_sum_bound gives up).
WARPREDUCE_HOST_DEVICE inline double float_abs_sum_bound(float abs_sum, double depth) {
  const double nu = depth * 0x1p-24;
  return nu <= 0.5 ? static_cast<double>(abs_sum) * (1 + 2 * nu) : INFINITY;  // (see gamma)
}

// The smallest exponent of the elements' last significand bits, kept as a "lsb key": for
// an element as a float with bits b, (b & 0x7fffffff) - 1 as unsigned, whose exponent
// field is at most the element's (one less for a power of two); the smallest key over
// the elements is kept, and zeros wrap around to the largest key, so they never count.
constexpr uint32_t kNoLsbKey = 0xffffffffu;
WARPREDUCE_HOST_DEVICE inline uint32_t lsb_key(float x) {
  return (bits_as<uint32_t>(x) & 0x7fffffffu) - 1;
}
// The exponent of the last significand bit of the elements whose smallest lsb key is
// `key`, or less: the key's exponent field, less T's fraction bits (a float exponent
// field of 0, a subnormal, counts as 1). For certified_rounded_sum.
template <typename T>
WARPREDUCE_HOST_DEVICE inline int lsb_exponent(uint32_t key) {
  if (key == kNoLsbKey) return 1023;  // no nonzero element
  const int field = static_cast<int>(key >> 23);
  return (field > 1 ? field : 1) - 127 - (Format<T>::kPrecision - 1);
}

// Whether every partial sum of elements that are multiples of 2^lsb_exponent, their
// magnitudes adding up to at most abs_bound, is exact in double, whatever the order (see
// certified_rounded_sum).
template <typename T>
WARPREDUCE_HOST_DEVICE inline bool exact_in_double(double abs_bound, int lsb_exponent) {
  int e = lsb_exponent > FormatConstants<T>::kQuantum ? lsb_exponent : FormatConstants<T>::kQuantum;
  e = e < 1023 - 53 ? e : 1023 - 53;
  return abs_bound <= double_from_bits(static_cast<uint64_t>(53 + e + 1023) << 52);
}

// A certified sum of elements of T (each exact as a double) added in double in any
// order: `sum` of the elements, no element having gone through more than `depth` rounded
// additions on its way (k elements added in turn into a lane, then 2^h lanes added
// pairwise: depth k - 1 + h, or anything larger), and abs_bound >= sum |x| (see
// abs_sum_bound). The error of such a sum is at most gamma(depth) sum |x| (Higham,
// "Accuracy and Stability of Numerical Algorithms", 2002, section 4.2).
//
// And often none: every element is a multiple of 2^lsb_exponent (2^kQuantum for any
// value of T; callers that track the smallest exponent of their elements pass more), so
// is every partial sum, and a double holds all of them exactly while they stay below
// 2^(53 + lsb_exponent) in magnitude: then the bound is 0. Short and moderate rows of
// ordinary data are exact this way (and certify even where they land on a tie), and so
// are float16 sums below 2^29.
template <typename T>
WARPREDUCE_HOST_DEVICE inline CertifiedSum certified_rounded_sum(
    double sum, double abs_bound, double depth, int lsb_exponent = FormatConstants<T>::kQuantum) {
  if (exact_in_double<T>(abs_bound, lsb_exponent)) return {sum, 0.0, 0.0};
  const double g = gamma(depth);
  double bound = g * abs_bound;
  if (bound < 0x1p-1022) bound += 0x1p-1074;  // a subnormal product rounds by up to this
  return {sum, 0.0, bound};
}

// One element of a TwoSum chain (float64 elements): hi the running sum, lo its errors
// added up (rounded), abs_sum the |x| added up in the same order.
WARPREDUCE_HOST_DEVICE inline void two_sum_step(double& hi, double& lo, double& abs_sum, double x) {
  double e;
  two_sum(hi, x, hi, e);
  lo += e;
  abs_sum += fabs(x);
}

// A certified sum of a TwoSum chain of k elements, started from hi = lo = abs_sum = 0.
// Exactly, S = hi + sum e_j, and only lo, the sum of the k errors, is rounded: it is off
// by at most gamma(k) sum |e_j|. Each |e_j| <= u |hi_j| <= u (sum |x| + sum |e_i|), so
// sum |e_j| <= gamma(k) sum |x|, and the bound is gamma(k)^2 sum |x|, with sum |x| <=
// abs_sum (1 + 2 gamma(k)) as above: about k^2 2^-106 of sum |x|, which certifies all
// but extreme cancellation.
WARPREDUCE_HOST_DEVICE inline CertifiedSum certified_two_sum_chain(double hi, double lo,
                                                                   double abs_sum, double k) {
  if (abs_sum <= 0x1p-1022) return {hi, lo, 0.0};  // no addition rounded (see above)
  const double g = gamma(k);
  double bound = g * g * (1 + 2 * g) * abs_sum;
  if (bound < 0x1p-1022) bound += 0x1p-1074;
  return {hi, lo, bound};
}

// a + b: exact but for the errors of two additions of the small parts, which go into
// the bound. Commutative, and certification makes the order of merging irrelevant.
// Where neither has a small part (sums exact in double, the common case of the trees
// over lanes and threads), one TwoSum is all: s + e == a.hi + b.hi exactly.
WARPREDUCE_HOST_DEVICE inline CertifiedSum combine(const CertifiedSum& a, const CertifiedSum& b) {
  if (a.lo == 0 && b.lo == 0) {
    CertifiedSum r;
    two_sum(a.hi, b.hi, r.hi, r.lo);
    r.bound = a.bound + b.bound;
    return r;
  }
  double s, e, t, e1, l, e2;
  two_sum(a.hi, b.hi, s, e);
  two_sum(a.lo, b.lo, t, e1);
  two_sum(t, e, l, e2);
  CertifiedSum r;
  two_sum(s, l, r.hi, r.lo);  // a + b == r.hi + r.lo + e1 + e2
  r.bound = (a.bound + b.bound) + (fabs(e1) + fabs(e2));
  return r;
}

// ---- Certification --------------------------------------------------------------------

// The exact sum S of c's elements, all values of T, rounded to T, if c proves it: true
// and *out set when every value within c's bound of hi + lo rounds to the same T. False
// means "not proven", for the fallback to decide: a bound too wide near a rounding
// boundary (an exact tie under a nonzero bound among them), a non-finite c (NaN or
// infinite elements, overflow on the way), a sum that rounds to infinity.
//
// How: s = fl(hi + lo), with error e, and r = s rounded to T. S lies within
// rho = |e| + bound of s, and s - r is exact (the bits of s that r drops), so with
// d = |s| - |r|, |S| - |r| lies within rho of d. S rounds to r when that stays below half
// the gap to r's neighbour on each side: ulp(r) away from zero, and toward zero ulp(r),
// or ulp(r) / 2 below a power of two. With rho == 0, S == s and r is its rounding, ties
// included. Like all of a certified sum's arithmetic, this assumes the default
// floating-point environment (round to nearest, subnormals kept), which the CPU launcher
// checks; comparisons of rounded values against the powers of two ulp / 2 and ulp / 4
// hold for the exact values too, rounding being monotonic.
template <typename T>
WARPREDUCE_HOST_DEVICE inline bool certify(const CertifiedSum& c, T* out) {
  using C = FormatConstants<T>;
  double s = c.hi, e = 0;
  if (c.lo != 0) two_sum(c.hi, c.lo, s, e);
  if (!is_finite(s)) return false;
  const T r = round_double_to_nearest<T>(s);
  const uint64_t bits = Format<T>::to_bits(r) & ~C::kSignBit;
  // For a double result, a bound of 0 makes hi + lo the exact sum and s its correct
  // rounding, a tie to even included: nothing is left to test. (float32 values stored as
  // float64 sum exactly and land on ties; a TwoSum chain that proves it gets bound 0.)
  const double rho =
      std::is_same_v<T, double> && c.bound == 0 ? 0 : (fabs(e) + c.bound) * kBoundSlack;
  if (bits >= C::kInfinityBits) {
    // s rounds to infinity (never for double, whose s is finite): so does S if all of
    // [|s| - rho, |s| + rho] lies past the threshold max + ulp(max) / 2 (a tie there
    // goes to infinity too).
    if (!(rho == 0 || fabs(s) - rho > C::overflow_threshold())) return false;
    *out = r;
    return true;
  }
  if (!(rho == 0)) {  // (NaN: not certified)
    // ulp(r) as a double: 2^(kQuantum + max(exponent field, 1) - 1).
    const int exponent_field = static_cast<int>(bits >> (C::kPrecision - 1));
    const int ulp_exponent = C::kQuantum + (exponent_field > 1 ? exponent_field : 1) - 1;
    const double ulp = ulp_exponent >= -1022
                           ? double_from_bits(static_cast<uint64_t>(ulp_exponent + 1023) << 52)
                           : double_from_bits(uint64_t{1} << (ulp_exponent + 1074));
    const bool power_of_two = (bits & C::kFractionMask) == 0 && exponent_field > 0;
    const double d = fabs(s) - fabs(static_cast<double>(r));
    if (!(2 * (d + rho) < ulp && (power_of_two ? 4 : 2) * (rho - d) < ulp)) return false;
  }
  *out = bits == 0 ? Format<T>::from_bits(0) : r;  // an exact 0 is +0.0
  return true;
}

// ---- The exact fallback: a superaccumulator -------------------------------------------

// The exact sum of any number of values of T as a fixed-point integer: digit i holds 32
// bits of weight 2^(32 i + kQuantum) in a signed 64-bit word, the 32 bits above being
// headroom for carries, so that adding an element touches at most 3 digits with no carry
// propagation (Neal's small superaccumulator). The digits span T's whole range, 64 bits
// for element counts, and one digit to spare: the top digit holds only the sign. NaN and
// infinities are counted apart.
//
// Adds: 2^29 between normalizations (done by add() itself): every add moves a digit by
// less than 2^33, so a digit stays below 2^62 in magnitude. Digits exported by
// to_digits() are normalized; up to 2^30 such exports can be added (by an all-reduce)
// and read back by from_digits().
template <typename T>
struct Superaccumulator {
  using C = FormatConstants<T>;
  static constexpr int kDigits = (C::kMaxExponent + 1 - C::kQuantum + 64 + 31) / 32 + 1;
  static constexpr int kExported = kDigits + 3;  // digits, then NaNs, +inf and -inf counts
  static constexpr int64_t kAddsPerNormalize = int64_t{1} << 29;

  int64_t digit[kDigits];  // digit 0 the lowest
  int64_t nans, positive_infinities, negative_infinities;
  int64_t adds;  // since the last normalization

  WARPREDUCE_HOST_DEVICE void clear() {
    for (int i = 0; i < kDigits; ++i) digit[i] = 0;
    nans = positive_infinities = negative_infinities = adds = 0;
  }

  WARPREDUCE_HOST_DEVICE void add(T x) {
    const uint64_t bits = Format<T>::to_bits(x);
    const bool negative = (bits & C::kSignBit) != 0;
    const int exponent_field =
        static_cast<int>((bits >> (C::kPrecision - 1)) & ((uint64_t{1} << C::kExponentBits) - 1));
    uint64_t m = bits & C::kFractionMask;
    if (exponent_field == (1 << C::kExponentBits) - 1) {
      if (m != 0) {
        ++nans;
      } else if (negative) {
        ++negative_infinities;
      } else {
        ++positive_infinities;
      }
      return;
    }
    // The value is m * 2^(kQuantum + shift): subnormals have exponent field 0, shift 0.
    int shift = 0;
    if (exponent_field != 0) {
      m |= uint64_t{1} << (C::kPrecision - 1);
      shift = exponent_field - 1;
    }
    if (m == 0) return;
    const int i = shift >> 5, b = shift & 31;
    const uint64_t low = (m & 0xffffffffu) << b;  // m << b, which may pass 64 bits, in
    const uint64_t high = (m >> 32) << b;         // two parts: low + high * 2^32
    const auto d0 = static_cast<int64_t>(low & 0xffffffffu);
    const auto d1 = static_cast<int64_t>((low >> 32) + (high & 0xffffffffu));
    const auto d2 = static_cast<int64_t>(high >> 32);
    if (negative) {
      digit[i] -= d0;
      digit[i + 1] -= d1;
      digit[i + 2] -= d2;
    } else {
      digit[i] += d0;
      digit[i + 1] += d1;
      digit[i + 2] += d2;
    }
    if (++adds == kAddsPerNormalize) normalize();
  }

  // Carries propagated: digits 0 to kDigits - 2 in [0, 2^32), the top one signed.
  WARPREDUCE_HOST_DEVICE void normalize() {
    for (int i = 0; i + 1 < kDigits; ++i) {
      const int64_t carry = digit[i] >> 32;  // floor(digit / 2^32)
      digit[i] -= carry * (int64_t{1} << 32);
      digit[i + 1] += carry;
    }
    adds = 0;
  }

  // this += other, exactly.
  WARPREDUCE_HOST_DEVICE void merge(const Superaccumulator& other) {
    Superaccumulator o = other;
    o.normalize();
    normalize();
    for (int i = 0; i < kDigits; ++i) digit[i] += o.digit[i];
    nans += o.nans;
    positive_infinities += o.positive_infinities;
    negative_infinities += o.negative_infinities;
    adds = 2;  // each digit moved by less than 2^33, as two adds would
  }

  // kExported int64s: the normalized digits, then the three counts.
  WARPREDUCE_HOST_DEVICE void to_digits(int64_t* out) {
    normalize();
    for (int i = 0; i < kDigits; ++i) out[i] = digit[i];
    out[kDigits] = nans;
    out[kDigits + 1] = positive_infinities;
    out[kDigits + 2] = negative_infinities;
  }

  // What to_digits() wrote, or the sum of up to 2^30 such exports.
  WARPREDUCE_HOST_DEVICE void from_digits(const int64_t* in) {
    for (int i = 0; i < kDigits; ++i) digit[i] = in[i];
    nans = in[kDigits];
    positive_infinities = in[kDigits + 1];
    negative_infinities = in[kDigits + 2];
    normalize();
  }

  // The sum rounded to T, to nearest, ties to even (IEEE specials as the header says).
  WARPREDUCE_HOST_DEVICE T finalize() {
    if (nans > 0 || (positive_infinities > 0 && negative_infinities > 0)) {
      return Format<T>::from_bits(C::kNanBits);
    }
    if (positive_infinities > 0) return Format<T>::from_bits(C::kInfinityBits);
    if (negative_infinities > 0) return Format<T>::from_bits(C::kSignBit | C::kInfinityBits);
    normalize();
    // The magnitude, normalized the same way (the top digit then not negative).
    const bool negative = digit[kDigits - 1] < 0;
    int64_t d[kDigits];
    for (int i = 0; i < kDigits; ++i) d[i] = negative ? -digit[i] : digit[i];
    for (int i = 0; i + 1 < kDigits; ++i) {
      const int64_t carry = d[i] >> 32;
      d[i] -= carry * (int64_t{1} << 32);
      d[i + 1] += carry;
    }
    int j = kDigits - 1;  // the highest nonzero digit
    while (j >= 0 && d[j] == 0) --j;
    if (j < 0) return Format<T>::from_bits(0);  // an exact 0: +0.0
    if (d[j] >> 32 != 0) {  // beyond every digit: only from digits read back, and infinite
      return Format<T>::from_bits((negative ? C::kSignBit : 0) | C::kInfinityBits);
    }
    // The top 64 bits, from digits j, j - 1 and j - 2, and whether any bit below is set.
    const auto top = static_cast<uint64_t>(d[j]);
    const int top_bits = 64 - count_leading_zeros(top);  // 1 to 32
    uint64_t m = top << (64 - top_bits);
    bool sticky = false;
    if (j >= 1) m |= static_cast<uint64_t>(d[j - 1]) << (32 - top_bits);
    if (j >= 2) {
      const auto below = static_cast<uint64_t>(d[j - 2]);
      m |= below >> top_bits;
      sticky = (below & ((uint64_t{1} << top_bits) - 1)) != 0;
      for (int i = 0; i < j - 2 && !sticky; ++i) sticky = d[i] != 0;
    }
    const int e = 32 * (j - 2) + top_bits + C::kQuantum;  // the weight of m's last bit
    return Format<T>::from_bits(round_to_bits<T>(negative, m, e, sticky));
  }
};

}  // namespace warpreduce::exact
