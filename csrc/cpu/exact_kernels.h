// The fast path of kernel="exact" on the CPU (exact.h says what it computes): the passes
// of the plan, read in place like the auto kernels (sum_kernels.h, whose task sizes and
// helpers this file shares), each output summed in double lanes into a CertifiedSum:
// - float16, bfloat16 and float32 elements widened to double in vector registers and
//   added, their absolute values added in float alongside (the bound of a rounded sum),
//   and the smallest exponent among them kept (which often proves the sum exact);
// - float64 elements through TwoSum, lane by lane.
// Rows of a few dozen elements are certified several at a time in vector registers.
// Partial sums (lanes, chunks of a row, chunks of columns, passes) merge with combine();
// the last pass certifies each output and writes it, or hands it to the caller as
// uncertified, to be recomputed exactly (exact_cpu.cpp). Certification makes the result
// independent of how the work was cut, so threads never change a bit.
//
// Included by each sum_kernels_<isa>.cpp after sum_kernels.h, into the same namespace.
#pragma once

#ifndef WARPREDUCE_CPU_SUM_KERNELS
#error "include sum_kernels.h (which checks how the TU is laid out) before this header"
#endif

namespace warpreduce::cpu {
namespace [[gnu::visibility("hidden")]] CPU_CAPABILITY {

using exact::CertifiedSum;
using VecD = Vectorized<double>;
constexpr int64_t kDoubleLanes = VecD::size();
constexpr int kLog2DoubleLanes = kDoubleLanes == 8 ? 3 : kDoubleLanes == 4 ? 2 : 1;
static_assert(kDoubleLanes == 1 << kLog2DoubleLanes);

// Columns of one tile of a columns pass: the running sums of each column (a double and a
// float for the rounded sums, three doubles for TwoSum) stay in L1.
constexpr int64_t kExactTileBytes = 16384;

// ---- float16, bfloat16, float32 as doubles ---------------------------------------------
// Each step reads 2 * kDoubleLanes elements as one vector of floats (float16 and bfloat16
// widened exactly), adds them to two vectors of double sums, adds their absolute values
// to a vector of float absolute sums (half the work of doubles; certified_rounded_sum
// allows for its roundings), and keeps the smallest "lsb key" of the elements: for an
// element with float bits b, (b & 0x7fffffff) - 1 as unsigned, whose exponent field is at
// most the element's (zeros wrap around to the largest key and never count). The
// conversions to double bound the speed: one vector of doubles a cycle on AVX2 cores.

#if defined(CPU_CAPABILITY_AVX512)
using FloatVec = __m512;
using KeyVec = __m512i;
#elif defined(CPU_CAPABILITY_AVX2)
using FloatVec = __m256;
using KeyVec = __m256i;
#else
struct FloatVec {
  float v[2 * kDoubleLanes];
};
struct KeyVec {
  uint32_t v[2 * kDoubleLanes];
};
#endif

// A row's running sums: double sums, float absolute sums, smallest lsb key.
struct RoundedLanes {
  VecD s0, s1;
  FloatVec a;
  KeyVec key;
};

// 2 * kDoubleLanes elements of T at p as floats (exact). The AVX-512 and AVX2 branches
// have the same shape on purpose: the same steps in each ISA's own intrinsics.
template <typename T>
C10_ALWAYS_INLINE FloatVec load_floats(const T* p) {
#if defined(CPU_CAPABILITY_AVX512)
  if constexpr (std::is_same_v<T, float>) {
    return _mm512_loadu_ps(p);
  } else {
    const __m256i raw = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
    if constexpr (std::is_same_v<T, c10::Half>) return _mm512_cvtph_ps(raw);
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(raw), 16));  // bfloat16
  }
#elif defined(CPU_CAPABILITY_AVX2)
  if constexpr (std::is_same_v<T, float>) {
    return _mm256_loadu_ps(p);
  } else {
    const __m128i raw = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
    if constexpr (std::is_same_v<T, c10::Half>) return _mm256_cvtph_ps(raw);
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(raw), 16));
  }
#else
  FloatVec f;
  for (int64_t j = 0; j < 2 * kDoubleLanes; ++j) f.v[j] = static_cast<float>(p[j]);
  return f;
#endif
}

// The first n < 2 * kDoubleLanes elements at p, zeros after them.
template <typename T>
C10_ALWAYS_INLINE FloatVec load_floats_partial(const T* p, int64_t n) {
  T padded[2 * kDoubleLanes] = {};
  std::memcpy(padded, p, n * sizeof(T));
  return load_floats(padded);
}

// The floats of f as two vectors of doubles.
C10_ALWAYS_INLINE void to_doubles(const FloatVec& f, VecD& low, VecD& high) {
#if defined(CPU_CAPABILITY_AVX512)
  low = _mm512_cvtps_pd(_mm512_castps512_ps256(f));
  high = _mm512_cvtps_pd(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(f), 1)));
#elif defined(CPU_CAPABILITY_AVX2)
  low = _mm256_cvtps_pd(_mm256_castps256_ps128(f));
  high = _mm256_cvtps_pd(_mm256_extractf128_ps(f, 1));
#else
  alignas(64) double d[2 * kDoubleLanes];
  for (int64_t j = 0; j < 2 * kDoubleLanes; ++j) d[j] = f.v[j];
  low = VecD::loadu(d);
  high = VecD::loadu(d + kDoubleLanes);
#endif
}

// |f| added to a vector of float absolute sums.
C10_ALWAYS_INLINE FloatVec add_abs(const FloatVec& a, const FloatVec& f) {
#if defined(CPU_CAPABILITY_AVX512)
  return _mm512_add_ps(a, _mm512_castsi512_ps(_mm512_and_si512(_mm512_castps_si512(f),
                                                               _mm512_set1_epi32(0x7fffffff))));
#elif defined(CPU_CAPABILITY_AVX2)
  return _mm256_add_ps(a, _mm256_castsi256_ps(_mm256_and_si256(_mm256_castps_si256(f),
                                                               _mm256_set1_epi32(0x7fffffff))));
#else
  FloatVec r;
  for (int64_t j = 0; j < 2 * kDoubleLanes; ++j) r.v[j] = a.v[j] + std::fabs(f.v[j]);
  return r;
#endif
}

C10_ALWAYS_INLINE FloatVec zero_floats() {
#if defined(CPU_CAPABILITY_AVX512)
  return _mm512_setzero_ps();
#elif defined(CPU_CAPABILITY_AVX2)
  return _mm256_setzero_ps();
#else
  return FloatVec{};
#endif
}

// The lsb keys of f's elements into `key` (the smallest kept), and the smallest of a
// vector of keys.
C10_ALWAYS_INLINE void min_keys(KeyVec& key, const FloatVec& f) {
#if defined(CPU_CAPABILITY_AVX512)
  const __m512i magnitude = _mm512_and_si512(_mm512_castps_si512(f), _mm512_set1_epi32(0x7fffffff));
  key = _mm512_min_epu32(key, _mm512_sub_epi32(magnitude, _mm512_set1_epi32(1)));
#elif defined(CPU_CAPABILITY_AVX2)
  const __m256i magnitude = _mm256_and_si256(_mm256_castps_si256(f), _mm256_set1_epi32(0x7fffffff));
  key = _mm256_min_epu32(key, _mm256_sub_epi32(magnitude, _mm256_set1_epi32(1)));
#else
  for (int64_t j = 0; j < 2 * kDoubleLanes; ++j)
    key.v[j] = std::min(key.v[j], exact::lsb_key(f.v[j]));
#endif
}
C10_ALWAYS_INLINE KeyVec no_keys() {
#if defined(CPU_CAPABILITY_AVX512)
  return _mm512_set1_epi32(-1);
#elif defined(CPU_CAPABILITY_AVX2)
  return _mm256_set1_epi32(-1);
#else
  KeyVec k;
  for (int64_t j = 0; j < 2 * kDoubleLanes; ++j) k.v[j] = exact::kNoLsbKey;
  return k;
#endif
}
C10_ALWAYS_INLINE uint32_t smallest_key(const KeyVec& key) {
#if defined(CPU_CAPABILITY_AVX512)
  return _mm512_reduce_min_epu32(key);
#elif defined(CPU_CAPABILITY_AVX2)
  __m128i k = _mm_min_epu32(_mm256_castsi256_si128(key), _mm256_extracti128_si256(key, 1));
  k = _mm_min_epu32(k, _mm_shuffle_epi32(k, 0x4e));
  k = _mm_min_epu32(k, _mm_shuffle_epi32(k, 0xb1));
  return static_cast<uint32_t>(_mm_cvtsi128_si32(k));
#else
  uint32_t k = exact::kNoLsbKey;
  for (int64_t j = 0; j < 2 * kDoubleLanes; ++j) k = std::min(k, key.v[j]);
  return k;
#endif
}

C10_ALWAYS_INLINE void clear(RoundedLanes& l) {
  l.s0 = l.s1 = VecD(0.0);
  l.a = zero_floats();
  l.key = no_keys();
}

// One step: f's elements into the double sums of l, their absolute values into `a`, their
// lsb keys into `key` (l's own, or another set's: contiguous_rounded_sum shares them).
C10_ALWAYS_INLINE void add_step(RoundedLanes& l, FloatVec& a, KeyVec& key, const FloatVec& f) {
  VecD low, high;
  to_doubles(f, low, high);
  l.s0 = l.s0 + low;
  l.s1 = l.s1 + high;
  a = add_abs(a, f);
  min_keys(key, f);
}

// p[0, 2 * kDoubleLanes) += f, or = f where `first`.
C10_ALWAYS_INLINE void accumulate_floats(float* p, const FloatVec& f, bool first) {
#if defined(CPU_CAPABILITY_AVX512)
  _mm512_storeu_ps(p, first ? f : _mm512_add_ps(_mm512_loadu_ps(p), f));
#elif defined(CPU_CAPABILITY_AVX2)
  _mm256_storeu_ps(p, first ? f : _mm256_add_ps(_mm256_loadu_ps(p), f));
#else
  for (int64_t j = 0; j < 2 * kDoubleLanes; ++j) p[j] = first ? f.v[j] : p[j] + f.v[j];
#endif
}

// Lanes a, b merged into a (the sums lane by lane: one more rounded addition each).
C10_ALWAYS_INLINE void merge_into(RoundedLanes& a, const RoundedLanes& b) {
  a.s0 = a.s0 + b.s0;
  a.s1 = a.s1 + b.s1;
#if defined(CPU_CAPABILITY_AVX512)
  a.a = _mm512_add_ps(a.a, b.a);
  a.key = _mm512_min_epu32(a.key, b.key);
#elif defined(CPU_CAPABILITY_AVX2)
  a.a = _mm256_add_ps(a.a, b.a);
  a.key = _mm256_min_epu32(a.key, b.key);
#else
  for (int64_t j = 0; j < 2 * kDoubleLanes; ++j) {
    a.a.v[j] += b.a.v[j];
    a.key.v[j] = std::min(a.key.v[j], b.key.v[j]);
  }
#endif
}

// The lanes reduced: the sum (pairwise, depth 1 + kLog2DoubleLanes), the absolute sum
// (pairwise, depth 1 + kLog2DoubleLanes in float), the smallest key.
struct LaneTotals {
  double sum;
  float abs_sum;
  uint32_t key;
};

C10_ALWAYS_INLINE LaneTotals reduce_lanes(const RoundedLanes& l) {
  LaneTotals t;
  const VecD s = l.s0 + l.s1;
#if defined(CPU_CAPABILITY_AVX512) || defined(CPU_CAPABILITY_AVX2)
#if defined(CPU_CAPABILITY_AVX512)
  const __m256d s4 = _mm256_add_pd(_mm512_castpd512_pd256(s), _mm512_extractf64x4_pd(s, 1));
  __m256 a8 = _mm256_add_ps(_mm512_castps512_ps256(l.a),
                            _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(l.a), 1)));
#else
  const __m256d s4 = s;
  __m256 a8 = l.a;
#endif
  t.key = smallest_key(l.key);
  const __m128d s2 = _mm_add_pd(_mm256_castpd256_pd128(s4), _mm256_extractf128_pd(s4, 1));
  t.sum = _mm_cvtsd_f64(_mm_add_sd(s2, _mm_unpackhi_pd(s2, s2)));
  __m128 a4 = _mm_add_ps(_mm256_castps256_ps128(a8), _mm256_extractf128_ps(a8, 1));
  a4 = _mm_add_ps(a4, _mm_movehl_ps(a4, a4));
  t.abs_sum = _mm_cvtss_f32(_mm_add_ss(a4, _mm_movehdup_ps(a4)));
#else
  alignas(64) double lanes[kDoubleLanes];
  s.store(lanes);
  for (int64_t half = kDoubleLanes / 2; half >= 1; half /= 2) {
    for (int64_t j = 0; j < half; ++j) lanes[j] += lanes[j + half];
  }
  t.sum = lanes[0];
  float a[2 * kDoubleLanes];
  std::memcpy(a, l.a.v, sizeof a);
  for (int64_t half = kDoubleLanes; half >= 1; half /= 2) {
    for (int64_t j = 0; j < half; ++j) a[j] += a[j + half];
  }
  t.abs_sum = a[0];
  t.key = smallest_key(l.key);
#endif
  return t;
}

using exact::lsb_exponent;

// Lanes that added at most `rounds` steps each, as a certified sum.
template <typename T>
CertifiedSum certified_lanes(const RoundedLanes& l, int64_t rounds) {
  const LaneTotals t = reduce_lanes(l);
  const double depth = static_cast<double>(rounds + 1 + kLog2DoubleLanes);
  return exact::certified_rounded_sum<T>(t.sum, exact::float_abs_sum_bound(t.abs_sum, depth), depth,
                                         lsb_exponent<T>(t.key));
}

// Long rows ask for the data this far ahead of the loads: the hardware prefetchers alone
// left the exact loop, which consumes data slower than auto's, further behind memory
// (2^24 floats from DRAM, one thread: about 10% faster with it, on a noisy machine).
constexpr int64_t kAheadBytes = 1024;

// n contiguous elements: three sets of double sums (six chains of additions in flight,
// enough for the add latency), sharing two float absolute sums and one lsb key, so that
// everything stays in the 16 vector registers of AVX2 (four whole sets of lanes spilled
// to the stack), merged at the end.
template <typename T>
CertifiedSum contiguous_rounded_sum(const T* x, int64_t n) {
  constexpr int64_t kStep = 2 * kDoubleLanes;
  constexpr int kSets = 3;
  RoundedLanes l[kSets];
  for (auto& lanes : l) clear(lanes);
  int64_t i = 0;
  for (; i + kSets * kStep <= n; i += kSets * kStep) {
    __builtin_prefetch(reinterpret_cast<const char*>(x + i) + kAheadBytes);
    add_step(l[0], l[0].a, l[0].key, load_floats(x + i));
    add_step(l[1], l[1].a, l[0].key, load_floats(x + i + kStep));
    add_step(l[2], l[0].a, l[0].key, load_floats(x + i + 2 * kStep));
  }
  int k = 0;
  for (; i + kStep <= n; i += kStep, ++k) add_step(l[k], l[k].a, l[k].key, load_floats(x + i));
  if (i < n) add_step(l[k], l[k].a, l[k].key, load_floats_partial(x + i, n - i));
  merge_into(l[0], l[1]);
  merge_into(l[0], l[2]);
  // A lane's additions: at most two a round (the shared absolute sum), two of the rest,
  // two merges.
  return certified_lanes<T>(l[0], 2 * (n / (kSets * kStep)) + 4);
}

// ---- Short rows: certified kDoubleLanes at a time ----------------------------------------
// A row of a few dozen elements costs less to add than to certify one at a time (2^20
// rows of 32 floats, one thread: 2.9x auto's time so, 1.6x batched): rows this short are
// summed one after the other into one set of lanes, and certified kDoubleLanes rows at a
// time, in vector registers, by the test of exact::certify.
template <typename T>
constexpr int64_t kShortRow = 16 * kDoubleLanes;

// s rounded to T lane by lane (through float: the candidate may be the wrong neighbour
// where float rounding meets a T midpoint, which certification then refuses), an exact
// zero as +0.0; the first `count` written to y, and all returned as doubles.
template <typename T>
C10_ALWAYS_INLINE VecD round_candidates(const VecD& s, T* y, int64_t count) {
#if defined(CPU_CAPABILITY_AVX512) || defined(CPU_CAPABILITY_AVX2)
#if defined(CPU_CAPABILITY_AVX512)
  const __m256 f = _mm256_add_ps(_mm512_cvtpd_ps(s), _mm256_setzero_ps());  // -0 to +0
  using IntVec = __m256i;
#define WR_CAST_SI _mm256_castps_si256
#define WR_EPI32(op) _mm256_##op##_epi32
#define WR_SI(op) _mm256_##op##_si256
#define WR_TO_DOUBLES(x) _mm512_cvtps_pd(x)
#else
  const __m128 f = _mm_add_ps(_mm256_cvtpd_ps(s), _mm_setzero_ps());
  using IntVec = __m128i;
#define WR_CAST_SI _mm_castps_si128
#define WR_EPI32(op) _mm_##op##_epi32
#define WR_SI(op) _mm_##op##_si128
#define WR_TO_DOUBLES(x) _mm256_cvtps_pd(x)
#endif
  alignas(64) T out[kDoubleLanes];
  VecD rounded;
  if constexpr (std::is_same_v<T, float>) {
    std::memcpy(out, &f, sizeof out);
    rounded = WR_TO_DOUBLES(f);
  } else if constexpr (std::is_same_v<T, c10::BFloat16>) {
    // Round to nearest even at bit 16 of the float; a result of magnitude 0 is +0.
    const IntVec b = WR_CAST_SI(f);
    const IntVec odd = WR_SI (and)(WR_EPI32(srli)(b, 16), WR_EPI32(set1)(1));
    IntVec r = WR_EPI32(add)(b, WR_EPI32(add)(WR_EPI32(set1)(0x7fff), odd));
    r = WR_SI (and)(r, WR_EPI32(set1)(static_cast<int>(0xffff0000u)));
    const IntVec zero =
        WR_EPI32(cmpeq)(WR_SI (and)(r, WR_EPI32(set1)(0x7fffffff)), WR_SI(setzero)());
    r = WR_SI(andnot)(zero, r);
    alignas(64) uint32_t words[kDoubleLanes];
    std::memcpy(words, &r, sizeof words);
    for (int64_t j = 0; j < kDoubleLanes; ++j) out[j].x = static_cast<uint16_t>(words[j] >> 16);
#if defined(CPU_CAPABILITY_AVX512)
    rounded = WR_TO_DOUBLES(_mm256_castsi256_ps(r));
#else
    rounded = WR_TO_DOUBLES(_mm_castsi128_ps(r));
#endif
  } else {  // float16
#if defined(CPU_CAPABILITY_AVX512)
    __m128i h = _mm256_cvtps_ph(f, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
#else
    __m128i h = _mm_cvtps_ph(f, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
#endif
    const __m128i zero =
        _mm_cmpeq_epi16(_mm_and_si128(h, _mm_set1_epi16(0x7fff)), _mm_setzero_si128());
    h = _mm_andnot_si128(zero, h);
    std::memcpy(out, &h, sizeof out);
#if defined(CPU_CAPABILITY_AVX512)
    rounded = WR_TO_DOUBLES(_mm256_cvtph_ps(h));
#else
    rounded = WR_TO_DOUBLES(_mm_cvtph_ps(h));
#endif
  }
#undef WR_CAST_SI
#undef WR_EPI32
#undef WR_SI
#undef WR_TO_DOUBLES
#else
  alignas(64) double lanes[kDoubleLanes];
  s.store(lanes);
  T out[kDoubleLanes];
  for (int64_t j = 0; j < kDoubleLanes; ++j) {
    out[j] = exact::round_double_to<T>(lanes[j]);
    if ((exact::Format<T>::to_bits(out[j]) & ~exact::FormatConstants<T>::kSignBit) == 0) {
      out[j] = exact::Format<T>::from_bits(0);
    }
    lanes[j] = static_cast<double>(static_cast<float>(out[j]));
  }
  const VecD rounded = VecD::loadu(lanes);
#endif
  std::memcpy(y, out, count * sizeof(T));
  return rounded;
}

// Rows first_row, ..., first_row + count - 1 (count <= kDoubleLanes), with sums `s`,
// abs_bound >= their sums of |x|, `depth` and lsb_exponent as certified_rounded_sum
// takes them: each written to y, and listed as uncertified unless certified (the test
// of exact::certify, lane by lane).
template <typename T>
C10_ALWAYS_INLINE void certify_rows(const VecD& s, const VecD& abs_bound, double depth,
                                    int lsb_exponent, T* y, int64_t count, int64_t first_row,
                                    UncertifiedOutputs* uncertified) {
  using C = exact::FormatConstants<T>;
  const int e = std::min(std::max(lsb_exponent, C::kQuantum), 1023 - 53);
  const VecD exact_below(exact::double_from_bits(static_cast<uint64_t>(53 + e + 1023) << 52));
  const VecD bound =
      VecD::blendv(abs_bound * VecD(exact::gamma(depth)), VecD(0.0), abs_bound <= exact_below);
  const VecD r = round_candidates(s, y, count);
  const VecD rho = bound * VecD(exact::kBoundSlack);
  const VecD d = s.abs() - r.abs();
  // ulp(r) in T: 2^(r's exponent, at least T's smallest normal one - (precision - 1)).
  const VecD exponent_bits(exact::double_from_bits(uint64_t{0x7ff} << 52));
  const VecD fraction_bits(exact::double_from_bits((uint64_t{1} << 52) - 1));
  const VecD power = at::vec::maximum(
      r.abs() & exponent_bits,
      VecD(exact::double_from_bits(static_cast<uint64_t>(C::kMinExponent + 1023) << 52)));
  const VecD ulp =
      power *
      VecD(exact::double_from_bits(static_cast<uint64_t>(1023 - (C::kPrecision - 1)) << 52));
  const VecD power_of_two = (r & fraction_bits) == VecD(0.0);
  const VecD above = VecD(2.0) * (d + rho);
  const VecD below = VecD::blendv(VecD(2.0), VecD(4.0), power_of_two) * (rho - d);
  // Strictly inside r's rounding interval, or on its boundary for an exact sum (a tie,
  // which the candidate, rounded from an exact float, breaks to even).
  // Or rounded to infinity, as every value allowed is (exact::certify says why).
  const VecD threshold(C::overflow_threshold());
  const VecD overflow =
      (r.abs() == VecD(INFINITY)) &
      ((s.abs() - rho > threshold) | ((rho == VecD(0.0)) & (s.abs() >= threshold)));
  const VecD certified = ((above < ulp) & (below < ulp)) |
                         ((rho == VecD(0.0)) & (above <= ulp) & (below <= ulp)) | overflow;
  int failed = certified.zero_mask() & ((1 << count) - 1);
  for (; failed != 0; failed &= failed - 1) uncertified->add(first_row + __builtin_ctz(failed));
}

// A rows pass of contiguous rows of at most kShortRow elements, certified into y.
template <typename T>
void short_rows_pass(const T* x, const ReductionPass& pass, T* y, UncertifiedOutputs* uncertified) {
  constexpr int64_t kStep = 2 * kDoubleLanes;
  const int64_t rows = pass.outer_size, length = pass.length;
  const int64_t whole = length / kStep * kStep;
  const auto depth = static_cast<double>(ceil_div(length, kStep) + 1 + kLog2DoubleLanes);
  const double abs_factor = exact::float_abs_sum_bound(1.0f, depth);
  const int64_t prefetch_bytes =
      std::min<int64_t>(kShortRowPrefetchBytes, length * static_cast<int64_t>(sizeof(T)));
  for_each_task(ceil_div(rows, kDoubleLanes), kDoubleLanes * length, [&](int64_t group) {
    const int64_t first = group * kDoubleLanes, count = std::min(kDoubleLanes, rows - first);
    alignas(64) double sums[kDoubleLanes] = {}, abs_sums[kDoubleLanes] = {};
    uint32_t key = exact::kNoLsbKey;
    for (int64_t j = 0; j < count; ++j) {
      const int64_t row = first + j;
      if (row + kShortRowsAhead < rows) {  // as the auto kernels' short rows
        const char* ahead =
            reinterpret_cast<const char*>(x + pass.outer.offset(row + kShortRowsAhead));
        for (int64_t b = 0; b < prefetch_bytes; b += 64) __builtin_prefetch(ahead + b);
      }
      const T* p = x + pass.outer.offset(row);
      RoundedLanes l;
      clear(l);
      for (int64_t i = 0; i < whole; i += kStep) add_step(l, l.a, l.key, load_floats(p + i));
      if (whole < length) add_step(l, l.a, l.key, load_floats_partial(p + whole, length - whole));
      const LaneTotals t = reduce_lanes(l);
      sums[j] = t.sum;
      abs_sums[j] = t.abs_sum;
      key = std::min(key, t.key);
    }
    certify_rows(VecD::loadu(sums), VecD::loadu(abs_sums) * VecD(abs_factor), depth,
                 lsb_exponent<T>(key), y + first, count, first, uncertified);
  });
}

// n elements `stride` apart: four scalar chains.
template <typename T>
CertifiedSum strided_rounded_sum(const T* x, int64_t n, int64_t stride) {
  double s[4] = {}, a[4] = {};
  int64_t i = 0;
  for (; i + 4 <= n; i += 4) {
    for (int k = 0; k < 4; ++k) {
      const auto v = static_cast<double>(static_cast<float>(x[(i + k) * stride]));
      s[k] += v;
      a[k] += std::fabs(v);
    }
  }
  for (int k = 0; i < n; ++i, ++k) {
    const auto v = static_cast<double>(static_cast<float>(x[i * stride]));
    s[k] += v;
    a[k] += std::fabs(v);
  }
  const double depth = static_cast<double>(n / 4 + 3);
  return exact::certified_rounded_sum<T>((s[0] + s[1]) + (s[2] + s[3]),
                                         exact::abs_sum_bound((a[0] + a[1]) + (a[2] + a[3]), depth),
                                         depth);
}

// ---- float64: TwoSum chains ------------------------------------------------------------

// One TwoSum step on every lane: (hi, e) = TwoSum(hi, x), lo += e, abs_sum += |x|.
C10_ALWAYS_INLINE void two_sum_step(VecD& hi, VecD& lo, VecD& abs_sum, const VecD& x) {
  const VecD s = hi + x;
  const VecD b_virtual = s - hi;
  lo = lo + ((hi - (s - b_virtual)) + (x - b_virtual));
  hi = s;
  abs_sum = abs_sum + x.abs();
}

// Lsb keys of doubles, as exact::lsb_key's of floats, in 63 bits so that a signed
// minimum keeps the smallest: (bits & 0x7fff...) - 1, a zero's wrapped to the largest.
using VecI = Vectorized<int64_t>;
constexpr int64_t kNoDoubleKey = std::numeric_limits<int64_t>::max();
C10_ALWAYS_INLINE VecI double_lsb_keys(const VecD& x) {
  const VecI magnitude = at::vec::cast<int64_t>(x) & VecI(kNoDoubleKey);
  return (magnitude - VecI(1)) & VecI(kNoDoubleKey);
}
// The exponent of the last significand bit of elements whose smallest key is `key`, or
// less (a subnormal's: -1074).
inline int double_lsb_exponent(int64_t key) {
  const int field = static_cast<int>(key >> 52);
  return (field > 1 ? field : 1) - 1075;
}

// Whether a TwoSum chain of `rounds` steps over elements that are all multiples of
// 2^lsb_exponent, their magnitudes adding up to abs_sum (as computed), kept its errors'
// sum exactly: each error is a multiple of 2^lsb_exponent of magnitude at most 2^-53
// times the running sum, so all partial sums of the errors are multiples of it below
// rounds 2^-52 abs_sum (twice the computed abs_sum covers its own rounding), and every
// such sum below 2^(lsb_exponent + 53) is a double. (A factor 2 more for this product's
// rounding.)
inline bool errors_summed_exactly(double abs_sum, int64_t rounds, int lsb_exponent) {
  return std::ldexp(static_cast<double>(rounds) * abs_sum, -104) < std::ldexp(1.0, lsb_exponent);
}

// The lanes of K chains of `rounds` TwoSum steps each, as one certified sum; `key`, the
// elements' smallest lsb key: lanes that kept their errors exactly get a bound of 0
// (exact::certify then rounds their exact sum directly, ties included).
template <int K>
CertifiedSum merge_chains(const VecD (&hi)[K], const VecD (&lo)[K], const VecD (&abs_sum)[K],
                          int64_t rounds, int64_t key) {
  CertifiedSum total = exact::zero_sum();
  const int lsb_exponent = double_lsb_exponent(key);
  for (int k = 0; k < K; ++k) {
    alignas(64) double h[kDoubleLanes], l[kDoubleLanes], a[kDoubleLanes];
    hi[k].store(h);
    lo[k].store(l);
    abs_sum[k].store(a);
    for (int64_t j = 0; j < kDoubleLanes; ++j) {
      CertifiedSum lane = exact::certified_two_sum_chain(h[j], l[j], a[j], rounds);
      if (errors_summed_exactly(a[j], rounds, lsb_exponent)) lane.bound = 0;
      total = exact::combine(total, lane);
    }
  }
  return total;
}

// n contiguous doubles: three chains of TwoSum vectors (the next step of a chain waits
// only on its one add into hi; three cover the add latency on AVX2 cores).
// The elements' smallest lsb key goes along: float32 values stored as float64 sum
// exactly in their TwoSum chains, and a sum of 2^20 of them landed exactly on a tie of
// float64 about one time in 12, which a nonzero bound can never certify (the fallback then
// took 30x the time: 5.4 ms, not 0.17, one thread).
inline CertifiedSum contiguous_two_sum(const double* x, int64_t n) {
  constexpr int K = 3;
  VecD hi[K], lo[K], abs_sum[K];
  VecI key(kNoDoubleKey);
  for (int k = 0; k < K; ++k) hi[k] = lo[k] = abs_sum[k] = VecD(0.0);
  int64_t i = 0;
  for (; i + K * kDoubleLanes <= n; i += K * kDoubleLanes) {
    __builtin_prefetch(reinterpret_cast<const char*>(x + i) + kAheadBytes);
    for (int k = 0; k < K; ++k) {
      const VecD v = VecD::loadu(x + i + k * kDoubleLanes);
      two_sum_step(hi[k], lo[k], abs_sum[k], v);
      key = at::vec::minimum(key, double_lsb_keys(v));
    }
  }
  int64_t rounds = i / (K * kDoubleLanes);
  if (i < n) {
    ++rounds;
    for (int k = 0; i < n; ++k, i += kDoubleLanes) {
      const VecD v = VecD::loadu(x + i, std::min(kDoubleLanes, n - i));  // zeros past it
      two_sum_step(hi[k], lo[k], abs_sum[k], v);
      key = at::vec::minimum(key, double_lsb_keys(v));
    }
  }
  alignas(64) int64_t keys[kDoubleLanes];
  key.store(keys);
  return merge_chains(hi, lo, abs_sum, rounds, *std::min_element(keys, keys + kDoubleLanes));
}

inline CertifiedSum strided_two_sum(const double* x, int64_t n, int64_t stride) {
  double hi = 0, lo = 0, abs_sum = 0;
  for (int64_t i = 0; i < n; ++i) exact::two_sum_step(hi, lo, abs_sum, x[i * stride]);
  return exact::certified_two_sum_chain(hi, lo, abs_sum, static_cast<double>(n));
}

// Short rows of doubles, certified kDoubleLanes rows at a time like the others: each row
// one chain of TwoSum vectors; then the rows' lanes, transposed, merged by vector TwoSum,
// one row a lane. A row of W lanes of `steps` TwoSum steps each is exactly
// sum_k (hi_k + E_k), E_k the exact sum of lane k's errors, which lo_k approximates within
// gamma(steps)^2 (1 + 2 gamma(steps)) a_k (exact::certified_two_sum_chain); merging the
// hi_k by TwoSum is exact, and the lo_k and the merge's errors, added up in double
// through at most 2 W additions, are off by at most gamma(2 W) times the sum of their
// magnitudes. (2^20 rows of 32 doubles, one thread: 7.4x auto's time one row at a time.)
inline void short_double_rows_pass(const double* x, const ReductionPass& pass, double* y,
                                   UncertifiedOutputs* uncertified) {
  constexpr int64_t W = kDoubleLanes;
  const int64_t rows = pass.outer_size, length = pass.length;
  const int64_t whole = length / W * W;
  const auto steps = static_cast<double>(ceil_div(length, W));
  const double g = exact::gamma(steps);
  // The lanes' bounds (their absolute sums added up through W more additions).
  const VecD lane_factor(g * g * (1 + 2 * g) * (1 + 2 * exact::gamma(W)));
  const VecD merge_factor(exact::gamma(2 * W));
  const VecD slack(exact::kBoundSlack);
  const VecD exponent_bits(exact::double_from_bits(uint64_t{0x7ff} << 52));
  const VecD fraction_bits(exact::double_from_bits((uint64_t{1} << 52) - 1));
  const int64_t prefetch_bytes =
      std::min<int64_t>(kShortRowPrefetchBytes, length * static_cast<int64_t>(sizeof(double)));
  for_each_task(ceil_div(rows, W), W * length, [&](int64_t group) {
    const int64_t first = group * W, count = std::min(W, rows - first);
    // hi[k][j]: lane k of row j (transposed), and the same for lo and the |x| sums.
    alignas(64) double hi[W][W] = {}, lo[W][W] = {}, abs_sum[W][W] = {};
    for (int64_t j = 0; j < count; ++j) {
      const int64_t row = first + j;
      if (row + kShortRowsAhead < rows) {
        const char* ahead =
            reinterpret_cast<const char*>(x + pass.outer.offset(row + kShortRowsAhead));
        for (int64_t b = 0; b < prefetch_bytes; b += 64) __builtin_prefetch(ahead + b);
      }
      const double* p = x + pass.outer.offset(row);
      VecD h(0.0), l(0.0), a(0.0);
      for (int64_t i = 0; i < whole; i += W) two_sum_step(h, l, a, VecD::loadu(p + i));
      if (whole < length) two_sum_step(h, l, a, VecD::loadu(p + whole, length - whole));
      alignas(64) double lanes[3][W];
      h.store(lanes[0]);
      l.store(lanes[1]);
      a.store(lanes[2]);
      for (int64_t k = 0; k < W; ++k) {
        hi[k][j] = lanes[0][k];
        lo[k][j] = lanes[1][k];
        abs_sum[k][j] = lanes[2][k];
      }
    }
    VecD s = VecD::loadu(hi[0]), l = VecD::loadu(lo[0]), a = VecD::loadu(abs_sum[0]);
    VecD magnitudes = l.abs();
    for (int64_t k = 1; k < W; ++k) {
      const VecD h = VecD::loadu(hi[k]), lk = VecD::loadu(lo[k]);
      const VecD sum = s + h;
      const VecD b_virtual = sum - s;
      const VecD e = (s - (sum - b_virtual)) + (h - b_virtual);
      s = sum;
      l = l + (lk + e);
      magnitudes = magnitudes + (lk.abs() + e.abs());
      a = a + VecD::loadu(abs_sum[k]);
    }
    const VecD bound = lane_factor * a + merge_factor * magnitudes;
    // The row's sum s + l rounded (TwoSum), and certified as exact::certify does.
    const VecD r = s + l;
    const VecD b_virtual = r - s;
    const VecD e = (s - (r - b_virtual)) + (l - b_virtual);
    const VecD rho = (e.abs() + bound) * slack;
    const VecD power = at::vec::maximum(
        r.abs() & exponent_bits, VecD(exact::double_from_bits(uint64_t{1} << 52)));  // 2^-1022
    const VecD ulp = power * VecD(0x1p-52);
    const VecD power_of_two = (r & fraction_bits) == VecD(0.0);
    const VecD certified =
        (r.abs() < VecD(INFINITY)) &
        ((VecD::blendv(VecD(2.0), VecD(4.0), power_of_two) * rho < ulp) | (rho == VecD(0.0)));
    alignas(64) double out[W];
    (r + VecD(0.0)).store(out);  // an exact 0 as +0.0
    std::memcpy(y + first, out, count * sizeof(double));
    int failed = certified.zero_mask() & ((1 << count) - 1);
    for (; failed != 0; failed &= failed - 1) uncertified->add(first + __builtin_ctz(failed));
  });
}

template <typename T>
CertifiedSum certified_row(const T* x, int64_t n, int64_t stride) {
  if constexpr (std::is_same_v<T, double>) {
    return stride == 1 ? contiguous_two_sum(x, n) : strided_two_sum(x, n, stride);
  } else {
    return stride == 1 ? contiguous_rounded_sum(x, n) : strided_rounded_sum(x, n, stride);
  }
}

// ---- Where a pass's sums go --------------------------------------------------------------

// To the next pass.
struct CarrySink {
  CertifiedSum* carry;
  void put(int64_t o, const CertifiedSum& c) const { carry[o] = c; }
};

// To the output, certified; what is not is left for the fallback.
template <typename T>
struct CertifySink {
  T* y;
  UncertifiedOutputs* uncertified;
  void put(int64_t o, const CertifiedSum& c) const {
    if (!exact::certify(c, y + o)) uncertified->add(o);
  }
};

// ---- Rows pass ---------------------------------------------------------------------------
// A task sums one chunk of one row (kRowChunk elements, as the auto kernels cut them);
// chunks of a row merge in order.
template <typename T, typename Sink>
void exact_rows_pass(const T* x, const ReductionPass& pass, const Sink& sink) {
  const int64_t rows = pass.outer_size, length = pass.length, stride = pass.reduced_stride;
  const int64_t chunks = ceil_div(length, kRowChunk);
  auto chunk_sum = [&](int64_t row, int64_t chunk) {
    const int64_t start = chunk * kRowChunk;
    return certified_row(x + pass.outer.offset(row) + start * stride,
                         std::min(kRowChunk, length - start), stride);
  };
  if constexpr (std::is_same_v<Sink, CertifySink<T>>) {
    if (stride == 1 && length <= kShortRow<T>) {
      if constexpr (std::is_same_v<T, double>) {
        return short_double_rows_pass(x, pass, sink.y, sink.uncertified);
      } else {
        return short_rows_pass(x, pass, sink.y, sink.uncertified);
      }
    }
  }
  if (chunks == 1) {
    const bool prefetch = stride == 1 && length * static_cast<int64_t>(sizeof(T)) < 4096;
    for_each_task(rows, length, [&](int64_t row) {
      if (prefetch && row + kShortRowsAhead < rows) {  // as the auto kernels' short rows
        const char* ahead =
            reinterpret_cast<const char*>(x + pass.outer.offset(row + kShortRowsAhead));
        for (int64_t b = 0; b < std::min<int64_t>(kShortRowPrefetchBytes, length * sizeof(T));
             b += 64) {
          __builtin_prefetch(ahead + b);
        }
      }
      sink.put(row, chunk_sum(row, 0));
    });
    return;
  }
  std::unique_ptr<CertifiedSum[]> partial(new CertifiedSum[rows * chunks]);
  for_each_task(rows * chunks, kRowChunk,
                [&](int64_t task) { partial[task] = chunk_sum(task / chunks, task % chunks); });
  for_each_task(rows, chunks, [&](int64_t row) {
    CertifiedSum c = partial[row * chunks];
    for (int64_t k = 1; k < chunks; ++k) c = exact::combine(c, partial[row * chunks + k]);
    sink.put(row, c);
  });
}

// ---- Columns pass ------------------------------------------------------------------------
// A task sums one chunk of kChunkRows rows of one tile of adjacent columns (as the auto
// kernels cut them), each column a serial chain down the rows, kept in L1; a block of
// kBlockRows rows is summed in registers first. Chunks of a column merge in order.

// The running sums of one tile's columns.
template <typename T>
struct ColumnTile {
  static constexpr bool kTwoSum = std::is_same_v<T, double>;
  static constexpr int64_t kWidth = kTwoSum ? kExactTileBytes / 24 : kExactTileBytes / 12 / 32 * 32;
  // The sums, TwoSum's errors and the absolute sums (in float for the rounded sums, as
  // rows keep them), with room for the whole vectors of a last group of columns.
  static constexpr int64_t kPadded = kWidth + 4 * kDoubleLanes;
  using Abs = std::conditional_t<kTwoSum, double, float>;
  alignas(64) double hi[kPadded];
  alignas(64) double lo[kTwoSum ? kPadded : 1];
  alignas(64) Abs abs_sum[kPadded];
  // The smallest lsb key of all the tile's elements (rounded sums): one for every column,
  // which each column's sum is a multiple of too. Without it a short column of floats
  // that lands on a tie could not certify: 8 x 2^21 float32 over dim 0 ran at 0.03x auto
  // on the dev machine, its outputs recomputed one by one.
  uint32_t key = exact::kNoLsbKey;
};

// K steps of columns (K * 2 * kDoubleLanes of them, from column c; the last step
// `last` columns wide) down a block of rows, into the tile (set by the first block). The
// width of the last step is a template choice, not a test at every load (the auto
// kernels measured why).
template <int K, bool kWholeLast, typename T>
C10_ALWAYS_INLINE void add_column_steps(const T* b, int64_t row_stride, int64_t block_rows,
                                        int64_t c, int64_t last, bool first_block,
                                        ColumnTile<T>& tile) {
  constexpr int64_t kStep = 2 * kDoubleLanes;
  VecD s[2 * K];
  FloatVec a[K];
  KeyVec key = no_keys();
  for (int k = 0; k < K; ++k) {
    s[2 * k] = s[2 * k + 1] = VecD(0.0);
    a[k] = zero_floats();
  }
  for (int64_t r = 0; r < block_rows; ++r) {
    const T* row = b + r * row_stride + c;
    // The row's columns two groups on, asked for now: this loop's work a row kept too few
    // rows' loads in flight for the prefetchers (every row's first load missed L1:
    // perf, bfloat16 4096 x 4096 over dim 0).
    const char* ahead = reinterpret_cast<const char*>(row + 2 * K * kStep);
    for (int64_t byte = 0; byte < K * kStep * int64_t{sizeof(T)}; byte += 64) {
      __builtin_prefetch(ahead + byte);
    }
    for (int k = 0; k < K; ++k) {
      const FloatVec f = (kWholeLast || k + 1 < K) ? load_floats(row + k * kStep)
                                                   : load_floats_partial(row + k * kStep, last);
      VecD low, high;
      to_doubles(f, low, high);
      s[2 * k] = s[2 * k] + low;
      s[2 * k + 1] = s[2 * k + 1] + high;
      a[k] = add_abs(a[k], f);
      min_keys(key, f);
    }
  }
  tile.key = std::min(tile.key, smallest_key(key));
  for (int k = 0; k < 2 * K; ++k) {  // the tile has room for whole vectors
    double* hi = tile.hi + c + k * kDoubleLanes;
    (first_block ? s[k] : VecD::loadu(hi) + s[k]).store(hi);
  }
  for (int k = 0; k < K; ++k) accumulate_floats(tile.abs_sum + c + k * kStep, a[k], first_block);
}

// Rows [0, rows) of the tile's columns [0, width), row_stride apart, contiguous columns:
// blocks of kBlockRows rows, and in each, four steps of columns at a time (every row read
// as a run of 128 bytes of floats), then the rest a step at a time.
template <typename T>
void rounded_column_tile(const T* x, int64_t row_stride, int64_t rows, int64_t width,
                         ColumnTile<T>& tile) {
  constexpr int64_t kStep = 2 * kDoubleLanes;
  constexpr int kSteps = 4;
  const int64_t grouped = width / (kSteps * kStep) * (kSteps * kStep);
  for (int64_t block = 0; block < rows; block += kBlockRows) {
    const int64_t block_rows = std::min(kBlockRows, rows - block);
    const T* b = x + block * row_stride;
    const bool first = block == 0;
    int64_t c = 0;
    for (; c < grouped; c += kSteps * kStep) {
      add_column_steps<kSteps, true>(b, row_stride, block_rows, c, kStep, first, tile);
    }
    for (; c + kStep <= width; c += kStep) {
      add_column_steps<1, true>(b, row_stride, block_rows, c, kStep, first, tile);
    }
    if (c < width) add_column_steps<1, false>(b, row_stride, block_rows, c, width - c, first, tile);
  }
}

// The same for doubles: each column a TwoSum chain down the rows, continued in
// registers through a block of rows, two vectors of columns at a time.
inline void two_sum_column_tile(const double* x, int64_t row_stride, int64_t rows, int64_t width,
                                ColumnTile<double>& tile) {
  for (int64_t block = 0; block < rows; block += kBlockRows) {
    const int64_t block_rows = std::min(kBlockRows, rows - block);
    const double* b = x + block * row_stride;
    for (int64_t c = 0; c < width; c += 2 * kDoubleLanes) {
      const int64_t n0 = std::min(kDoubleLanes, width - c);
      const int64_t n1 = std::min(kDoubleLanes, width - c - n0);
      VecD hi[2], lo[2], abs_sum[2];
      for (int k = 0; k < 2; ++k) {
        if (block == 0) {
          hi[k] = lo[k] = abs_sum[k] = VecD(0.0);
        } else {  // the tile has room for whole vectors
          hi[k] = VecD::loadu(tile.hi + c + k * kDoubleLanes);
          lo[k] = VecD::loadu(tile.lo + c + k * kDoubleLanes);
          abs_sum[k] = VecD::loadu(tile.abs_sum + c + k * kDoubleLanes);
        }
      }
      for (int64_t r = 0; r < block_rows; ++r) {
        const double* p = b + r * row_stride + c;
        two_sum_step(hi[0], lo[0], abs_sum[0], VecD::loadu(p, n0));
        if (n1 > 0) two_sum_step(hi[1], lo[1], abs_sum[1], VecD::loadu(p + kDoubleLanes, n1));
      }
      for (int k = 0; k < 2; ++k) {
        hi[k].store(tile.hi + c + k * kDoubleLanes);
        lo[k].store(tile.lo + c + k * kDoubleLanes);
        abs_sum[k].store(tile.abs_sum + c + k * kDoubleLanes);
      }
    }
  }
}

// Columns col_stride apart: scalar chains.
template <typename T>
void strided_column_tile(const T* x, int64_t row_stride, int64_t col_stride, int64_t rows,
                         int64_t width, ColumnTile<T>& tile) {
  for (int64_t c = 0; c < width; ++c) {
    tile.hi[c] = tile.abs_sum[c] = 0;
    if constexpr (ColumnTile<T>::kTwoSum) tile.lo[c] = 0;
  }
  for (int64_t r = 0; r < rows; ++r) {
    const T* row = x + r * row_stride;
    for (int64_t c = 0; c < width; ++c) {
      const auto v = static_cast<double>(row[c * col_stride]);
      if constexpr (ColumnTile<T>::kTwoSum) {
        exact::two_sum_step(tile.hi[c], tile.lo[c], tile.abs_sum[c], v);
      } else {
        tile.hi[c] += v;
        tile.abs_sum[c] += std::fabs(static_cast<float>(v));
        tile.key = std::min(tile.key, exact::lsb_key(static_cast<float>(v)));
      }
    }
  }
}

template <typename T>
CertifiedSum certified_column(const ColumnTile<T>& tile, int64_t c, int64_t rows) {
  if constexpr (ColumnTile<T>::kTwoSum) {
    return exact::certified_two_sum_chain(tile.hi[c], tile.lo[c], tile.abs_sum[c],
                                          static_cast<double>(rows));
  } else {
    // The absolute sums are floats (each element through at most rows + 1 additions).
    const auto depth = static_cast<double>(rows);
    return exact::certified_rounded_sum<T>(tile.hi[c],
                                           exact::float_abs_sum_bound(tile.abs_sum[c], depth + 1),
                                           depth, lsb_exponent<T>(tile.key));
  }
}

template <typename T, typename Sink>
void exact_columns_pass(const T* x, const ReductionPass& pass, const Sink& sink) {
  constexpr int64_t kWidth = ColumnTile<T>::kWidth;
  const int64_t outer = pass.outer_size, inner = pass.inner, length = pass.length;
  const int64_t chunks = ceil_div(length, kChunkRows);
  const int64_t tiles = ceil_div(inner, kWidth);
  const int64_t outputs = outer * inner;
  std::unique_ptr<CertifiedSum[]> partial(chunks > 1 ? new CertifiedSum[chunks * outputs]
                                                     : nullptr);
  const int64_t task_elements = std::min(length, kChunkRows) * std::min(inner, kWidth);
  for_each_task(outer * chunks * tiles, task_elements, [&](int64_t task) {
    const auto [o, chunk, tile_index] = column_task(task, chunks, tiles);
    const int64_t c0 = tile_index * kWidth, width = std::min(kWidth, inner - c0);
    const int64_t r0 = chunk * kChunkRows, rows = std::min(kChunkRows, length - r0);
    const T* base = x + pass.outer.offset(o) + r0 * pass.reduced_stride + c0 * pass.inner_stride;
    ColumnTile<T> tile;
    if (pass.inner_stride != 1) {
      strided_column_tile(base, pass.reduced_stride, pass.inner_stride, rows, width, tile);
    } else if constexpr (ColumnTile<T>::kTwoSum) {
      two_sum_column_tile(base, pass.reduced_stride, rows, width, tile);
    } else {
      rounded_column_tile(base, pass.reduced_stride, rows, width, tile);
    }
    const int64_t first_output = o * inner + c0;
    if constexpr (std::is_same_v<Sink, CertifySink<T>> && !ColumnTile<T>::kTwoSum) {
      // Whole columns certified kDoubleLanes at a time in vector registers, as short rows
      // are (the test of certified_column and exact::certify): one at a time, the
      // certificates cost more than the additions of short columns (8 x 2^21 float32
      // over dim 0, one thread, dev machine: 0.29x auto's speed so).
      if (chunks == 1) {
        const auto depth = static_cast<double>(rows);
        const double abs_factor = exact::float_abs_sum_bound(1.0f, depth + 1);
        const int lsb = lsb_exponent<T>(tile.key);
        // Whole vectors from the tile (it has room for them; lanes past `width` are not
        // stored or listed): partial loads through memory stalled on store forwarding.
        for (int64_t c = 0; c < width; c += 2 * kDoubleLanes) {
          VecD abs_sums[2];
          to_doubles(load_floats(tile.abs_sum + c), abs_sums[0], abs_sums[1]);
          for (int k = 0; k < 2; ++k) {
            const int64_t first = c + k * kDoubleLanes;
            const int64_t count = std::min(kDoubleLanes, width - first);
            if (count <= 0) break;
            certify_rows(VecD::loadu(tile.hi + first), abs_sums[k] * VecD(abs_factor), depth, lsb,
                         sink.y + first_output + first, count, first_output + first,
                         sink.uncertified);
          }
        }
        return;
      }
    }
    for (int64_t c = 0; c < width; ++c) {
      const CertifiedSum s = certified_column(tile, c, rows);
      if (chunks == 1) {
        sink.put(first_output + c, s);
      } else {
        partial[chunk * outputs + first_output + c] = s;
      }
    }
  });
  if (chunks == 1) return;
  for_each_task(outputs, chunks, [&](int64_t j) {
    CertifiedSum c = partial[j];
    for (int64_t k = 1; k < chunks; ++k) c = exact::combine(c, partial[k * outputs + j]);
    sink.put(j, c);
  });
}

// ---- Passes after the first: certified sums merged --------------------------------------

template <typename Sink>
void exact_carry_pass(const CertifiedSum* x, const ReductionPass& pass, const Sink& sink) {
  for_each_task(pass.outputs(), pass.length, [&](int64_t j) {
    const CertifiedSum* p =
        x + pass.outer.offset(j / pass.inner) + (j % pass.inner) * pass.inner_stride;
    CertifiedSum c = p[0];
    for (int64_t r = 1; r < pass.length; ++r) c = exact::combine(c, p[r * pass.reduced_stride]);
    sink.put(j, c);
  });
}

template <typename T, typename Sink>
void run_exact_pass(const T* x, const ReductionPass& pass, const Sink& sink) {
  if constexpr (std::is_same_v<T, CertifiedSum>) {
    exact_carry_pass(x, pass, sink);
  } else if (pass.is_rows()) {
    exact_rows_pass(x, pass, sink);
  } else {
    exact_columns_pass(x, pass, sink);
  }
}

// The passes of plan in order (pass_chain.h), each after the first merging the last one's
// certified sums (carried as 3 doubles an output); the last certifies into `out`.
inline void exact_launch(const SumPlan& plan, at::Tensor& out, UncertifiedOutputs& uncertified) {
  static_assert(sizeof(CertifiedSum) == 3 * sizeof(double));
  WARPREDUCE_DISPATCH_FLOATS(plan.input.scalar_type(), "warpreduce_exact_cpu", [&] {
    using T = scalar_t;
    run_pass_chain<CertifiedSum>(
        plan, plan.input.const_data_ptr<T>(), out.mutable_data_ptr<T>(), out,
        [&](const auto* x, const ReductionPass& pass, auto* y) {
          if constexpr (std::is_same_v<std::remove_pointer_t<decltype(y)>, CertifiedSum>) {
            run_exact_pass(x, pass, CarrySink{y});
          } else {
            run_exact_pass(x, pass, CertifySink<T>{y, &uncertified});
          }
        });
  });
}

}  // namespace CPU_CAPABILITY
}  // namespace warpreduce::cpu
