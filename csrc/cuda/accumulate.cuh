// What the fast kernels add in, as a policy each kernel takes (rows.cuh, slabs.cuh,
// columns.cuh): the same loops and trees serve kernel="auto" and kernel="exact".
//
// A policy P gives:
//   P::Sum              what lanes, threads and blocks combine (shuffles, shared memory,
//                       the partials of split kernels);
//   P::Lanes            a thread's running sums of a stream of 16-byte vectors and single
//                       elements (add(vector), add_value(element), total() -> Sum);
//   P::Acc              a running sum of one output, element by element (add(acc, x),
//                       sum_of(acc) -> Sum);
//   p.store(y, q, sum)  output q from its sum, through `y` (auto: where p.order puts
//                       it, the last pass of some sums writing torch.sum's result at
//                       once, plan.h's output_order);
//   exact policies also P::certificate(sum) -> CertifiedSum and p.recomputed(q).
//
// AutoSums: short chains of acc_t<T> per lane, combined in combine_t<T> (sum_traits.h,
// rows.cuh say why). ExactSums (floats only): certified sums (exact.h): elements added in
// double with their magnitudes, combined without losing more than a bound; store()
// rounds once when the bound proves the correctly rounded value, else recomputes the
// output exactly (a superaccumulator) from the elements that ExactSource locates.
// ExactRoundedSums (16- and 32-bit floats, outputs short enough): the same, certified
// once an output instead of at every level of the trees.
#pragma once

#include <type_traits>

#include "../exact.h"
#include "block_reduce.cuh"

namespace warpreduce {

namespace exact {

// Certified sums combine with +, and shuffle field by field, so that every shuffle and
// tree of block_reduce.cuh works on them as on numbers (found by argument lookup).
__host__ __device__ inline CertifiedSum operator+(const CertifiedSum& a, const CertifiedSum& b) {
  return combine(a, b);
}
__host__ __device__ inline CertifiedSum& operator+=(CertifiedSum& a, const CertifiedSum& b) {
  return a = combine(a, b);
}
__device__ __forceinline__ CertifiedSum shfl_xor(const CertifiedSum& v, unsigned offset,
                                                 unsigned mask = kFullMask) {
  return {__shfl_xor_sync(mask, v.hi, offset), __shfl_xor_sync(mask, v.lo, offset),
          __shfl_xor_sync(mask, v.bound, offset)};
}
__device__ __forceinline__ CertifiedSum shfl_down(const CertifiedSum& v, unsigned offset,
                                                  unsigned mask = kFullMask, int width = 32) {
  return {__shfl_down_sync(mask, v.hi, offset, width), __shfl_down_sync(mask, v.lo, offset, width),
          __shfl_down_sync(mask, v.bound, offset, width)};
}

}  // namespace exact

using exact::CertifiedSum;

// n / d and n % d for a divisor fixed at launch, by a multiplication (Granlund and
// Montgomery, "Division by invariant integers using multiplication", 1994), for n < 2^31:
// the tile kernel maps thousands of outputs a tile to their segments.
struct FastDivmod {
  unsigned divisor = 1, multiplier = 0, shift = 0;
  FastDivmod() = default;
  explicit FastDivmod(unsigned d) : divisor(d) {
    while ((1ull << shift) < d) ++shift;
    multiplier = static_cast<unsigned>(((1ull << 32) * ((1ull << shift) - d)) / d + 1);
  }
  __device__ __forceinline__ unsigned div(unsigned n) const {
    return (__umulhi(n, multiplier) + n) >> shift;
  }
};

// Where a pass writes output q: at q, or on the last pass of a sum that writes torch.sum's
// result in place (SumPlan::output_order: kept dims out of the tensor's order, a kept dim
// broadcast), at the result's offset of q's digits (fewer than 2^31 outputs: 32-bit
// FastDivmods, a multiply and a shift a digit), `copies` times along a broadcast dim.
struct OutputOrder {
  int ndim = 0;  // 0: at q
  FastDivmod sizes[kMaxOuterDims];  // innermost last
  int64_t strides[kMaxOuterDims] = {};
  int64_t copies = 1, copy_stride = 0;

  OutputOrder() = default;
  OutputOrder(const OuterDims& order, int64_t copies_, int64_t copy_stride_)
      : ndim(order.ndim), copies(copies_), copy_stride(copy_stride_) {
    for (int d = 0; d < ndim; ++d) {
      sizes[d] = FastDivmod(static_cast<unsigned>(order.sizes[d]));
      strides[d] = order.strides[d];
    }
  }
  // Output q's value, stored where it goes.
  template <typename Out>
  __device__ __forceinline__ void put(Out* y, int64_t q, const Out& value) const {
    if (ndim == 0) {
      y[q] = value;
      return;
    }
    Out* at = y + offset(q);
    for (int64_t c = 0; c < copies; ++c) at[c * copy_stride] = value;
  }
  __device__ __forceinline__ int64_t offset(int64_t q) const {
    if (ndim == 0) return q;
    unsigned o = static_cast<unsigned>(q);
    int64_t off = 0;
#pragma unroll
    for (int d = kMaxOuterDims - 1; d > 0; --d) {
      if (d < ndim) {
        const unsigned next = sizes[d].div(o);
        off += static_cast<int64_t>(o - next * sizes[d].divisor) * strides[d];
        o = next;
      }
    }
    return off + static_cast<int64_t>(o) * strides[0];
  }
};

// ---- auto ---------------------------------------------------------------------------

// A thread's kVec adjacent columns (columns.cuh) as a policy adds them, a row's kVec
// elements at a time: each column its own P::Acc.
template <typename P, int kVec>
struct ColumnAccumulators {
  typename P::Acc acc[kVec] = {};
  template <typename T>
  __device__ __forceinline__ void add(const T (&row)[kVec]) {
#pragma unroll
    for (int j = 0; j < kVec; ++j) P::add(acc[j], row[j]);
  }
  __device__ __forceinline__ typename P::Sum sum(int j) const { return P::sum_of(acc[j]); }
};

// What auto combines a thread's lanes, a block's threads and the blocks' partials in.
// The stream adds in acc_t (float for float32 and 16-bit types), where each lane's chain
// is short and its values small; the combining levels add the large values, and for
// float32, rounding each of them to float, as torch.sum does, costs more than the stream.
// Over 24 random inputs a size (benchmarks/accuracy.py, H200), auto's mean float32 error
// against float64 was 1.10-1.38x torch.sum's from 2^20 to 2^28 elements combining in
// float, and 0.51-0.90x at every size from 2^11 to 2^28 combining in double, at the same
// speed. 16-bit results gained nothing (their own rounding dominates: equal to torch.sum
// on every input either way) and lost 0.3-0.9 us at 2^23-2^24 bfloat16 (fewer registers,
// a fourth block an SM), so they combine in float; integers in unsigned 64-bit, as acc_t.
template <typename T>
using combine_t = std::conditional_t<std::is_same_v<T, float>, double, acc_t<T>>;

// kShort: sums kept in acc_t<T> to the end, for kernels of short rows (rows_vectors,
// slabs): a float32 row of 8 combined in double spent more time converting than
// reading. kFull: float32's exact lanes (LaneSums), which only the full reduction takes.
template <typename T, bool kShort = false, bool kFull = false>
struct AutoSums {
  using Element = T;
  using Sum = std::conditional_t<kShort, acc_t<T>, combine_t<T>>;
  using Lanes = LaneSums<T, kFull>;
  using Acc = acc_t<T>;
  using Short = AutoSums<T, true, false>;  // for rows_vectors and slabs
  using Full = AutoSums<T, false, true>;   // for the full reduction
  static constexpr bool kExact = false;

  template <int kVec>
  using Columns = ColumnAccumulators<AutoSums, kVec>;

  int64_t repeat = 1;  // each output is its sum times this (ReductionPass::repeat)
  OutputOrder order;

  __device__ __forceinline__ static void add(Acc& acc, T x) { acc += static_cast<Acc>(x); }
  __device__ __forceinline__ static Sum sum_of(const Acc& acc) { return static_cast<Sum>(acc); }
  // Output q's value from its sum (integers: Sum is unsigned, and wraps as the repeated
  // sum would), and the value stored.
  template <typename Out>
  __device__ __forceinline__ Out output(const Sum& sum) const {
    return static_cast<Out>(sum * static_cast<Sum>(repeat));
  }
  template <typename Out>
  __device__ __forceinline__ void store(Out* y, int64_t q, const Sum& sum) const {
    order.put(y, q, output<Out>(sum));
  }
};

// ---- exact --------------------------------------------------------------------------

// Where output q's elements are, for recomputing it exactly: the kept dims map q to the
// first element (the outer dims by q / inner, the inner dim by q % inner), the reduced
// dims (up to 4, each with its stride) span the rest. One pass: its own geometry; a sum
// of several passes: the input's (the last pass reads partial sums, not elements).
template <typename T>
struct ExactSource {
  static constexpr int kMaxReducedDims = 4;
  const T* x;
  OuterDims outer;
  int64_t inner;
  int64_t inner_stride;
  int reduced_ndim;
  int64_t reduced_sizes[kMaxReducedDims];
  int64_t reduced_strides[kMaxReducedDims];

  __device__ __forceinline__ const T* first(int64_t q) const {
    return x + outer.offset(q / inner) + (q % inner) * inner_stride;
  }
  __device__ __forceinline__ int64_t count() const {
    int64_t n = 1;
    for (int d = 0; d < reduced_ndim; ++d) n *= reduced_sizes[d];
    return n;
  }
  // Element k of output q's elements (in any fixed order).
  __device__ __forceinline__ T element(const T* base, int64_t k) const {
    int64_t offset = 0;
    for (int d = reduced_ndim - 1; d >= 0; --d) {
      offset += (k % reduced_sizes[d]) * reduced_strides[d];
      k /= reduced_sizes[d];
    }
    return base[offset];
  }
};

// Output q of `source`, exactly, by one thread. The rare path: a sum whose certificate
// failed (heavy cancellation near a rounding boundary, a tie, NaN or infinities, overflow).
template <typename T>
__device__ __noinline__ T exact_output(const ExactSource<T>& source, int64_t q) {
  exact::Superaccumulator<T> acc;
  acc.clear();
  const T* base = source.first(q);
  const int64_t n = source.count();
  for (int64_t k = 0; k < n; ++k) acc.add(source.element(base, k));
  return acc.finalize();
}

// The same by all kThreads threads of a block, each adding every kThreads-th element
// into its own superaccumulator; the digits are then added over the block (int64 sums of
// normalized digits: exact) and thread 0 gets the result.
template <unsigned kThreads, typename T>
__device__ __noinline__ T exact_output_by_block(const ExactSource<T>& source, int64_t q) {
  using Acc = exact::Superaccumulator<T>;
  Acc acc;
  acc.clear();
  const T* base = source.first(q);
  const int64_t n = source.count();
  for (int64_t k = threadIdx.x; k < n; k += kThreads) acc.add(source.element(base, k));
  int64_t digits[Acc::kExported];
  acc.to_digits(digits);
  for (int i = 0; i < Acc::kExported; ++i) {
    digits[i] =
        static_cast<int64_t>(block_sum<kThreads>(static_cast<unsigned long long>(digits[i])));
    __syncthreads();  // block_sum's shared slots are reused by the next digit
  }
  acc.from_digits(digits);
  return acc.finalize();
}

// Output q of an exact sum from its certified sum: the last pass writes T, correctly
// rounded (recomputed from `source` where the certificate fails); a pass before it
// writes the certified sum for the next (Out = CertifiedSum).
template <typename T, typename Out>
__device__ __forceinline__ void store_exact(const ExactSource<T>& source, Out* y, int64_t q,
                                            const CertifiedSum& sum) {
  if constexpr (std::is_same_v<Out, CertifiedSum>) {
    y[q] = sum;
  } else {
    T value;
    y[q] = exact::certify<T>(sum, &value) ? value : exact_output(source, q);
  }
}

// A running certified sum of one chain of elements: 16- and 32-bit floats add exactly
// into a double, their magnitudes into a float (exact.h bounds the error from both);
// doubles go through TwoSum, their errors kept in lo.
//
// The smallest lsb key of the elements makes a sum that a double holds exactly certify
// with a zero bound, ties of T included: without it 9% of the sums of 8 random float32
// values (0.5% at 4096) landed on a tie under a nonzero bound and went to the fallback,
// which ran the named dim sums at 0.02-0.90x auto on the H100. Every kChunk elements (a
// few more where checked a vector at a time) the chain folds its sum into `folded`
// (combine: exact but for the roundings of the small parts): a chunk of ordinary data is
// exact in double, where one chain of 2^19 N(0, 1) float32 values had a rounded-sum bound
// of ~1/4 ulp and certified 7% of the time. (Host simulation of two chains an output,
// csrc/exact.h compiled for the CPU: with both, 100% of normal, uniform and log-normal
// sums of 8 to 2^22 elements certify.)
template <typename T>
struct ExactChain {
  using Element = T;
  using Sum = CertifiedSum;
  static constexpr int kChunk = 1024;
  double sum = 0;
  float magnitude = 0;
  uint32_t key = exact::kNoLsbKey;
  int count = 0;
  bool has_folded = false;
  CertifiedSum folded = {0.0, 0.0, 0.0};

  __device__ __forceinline__ void add(T x) {
    const float f = static_cast<float>(x);
    sum += static_cast<double>(f);
    magnitude += fabsf(f);
    key = min(key, exact::lsb_key(f));
    ++count;
  }
  // After an element, or a vector's elements (the check a vector, not an element):
  // chunks of kChunk to kChunk + 15 elements.
  __device__ __forceinline__ void fold_if_full() {
    if (count >= kChunk) fold();
  }
  // Inlined, though rare: a call would put the chain in local memory.
  __device__ __forceinline__ void fold() {
    folded = has_folded ? exact::combine(folded, chunk()) : chunk();
    has_folded = true;
    sum = 0;
    magnitude = 0;
    key = exact::kNoLsbKey;
    count = 0;
  }
  __device__ __forceinline__ CertifiedSum chunk() const {
    return exact::certified_rounded_sum<T>(sum, exact::float_abs_sum_bound(magnitude, count), count,
                                           exact::lsb_exponent<T>(key));
  }
  __device__ __forceinline__ CertifiedSum certified() const {
    return has_folded ? exact::combine(folded, chunk()) : chunk();
  }
  __device__ __forceinline__ CertifiedSum result() const { return certified(); }
  __device__ __forceinline__ static CertifiedSum certificate(const CertifiedSum& s) { return s; }
  // a and b as one certified sum: added as rounded sums (one more rounded addition for
  // every element) and certified once, unless either has folded.
  __device__ __forceinline__ static CertifiedSum merged(const ExactChain& a, const ExactChain& b) {
    if (a.has_folded || b.has_folded) return exact::combine(a.certified(), b.certified());
    const double depth = (a.count > b.count ? a.count : b.count) + 1;
    return exact::certified_rounded_sum<T>(
        a.sum + b.sum, exact::float_abs_sum_bound(a.magnitude + b.magnitude, depth), depth,
        exact::lsb_exponent<T>(min(a.key, b.key)));
  }
};
template <>
struct ExactChain<double> {
  using Element = double;
  using Sum = CertifiedSum;
  double hi = 0, lo = 0, magnitude = 0;
  int count = 0;
  __device__ __forceinline__ void add(double x) {
    exact::two_sum_step(hi, lo, magnitude, x);
    ++count;
  }
  __device__ __forceinline__ void fold_if_full() {}  // a TwoSum chain certifies at any length
  __device__ __forceinline__ CertifiedSum certified() const {
    return exact::certified_two_sum_chain(hi, lo, magnitude, count);
  }
  __device__ __forceinline__ CertifiedSum result() const { return certified(); }
  __device__ __forceinline__ static CertifiedSum certificate(const CertifiedSum& s) { return s; }
  __device__ __forceinline__ static CertifiedSum merged(const ExactChain& a, const ExactChain& b) {
    return exact::combine(a.certified(), b.certified());
  }
};

// A thread's stream of 16-byte vectors, in two chains (independent adds) of an exact
// policy's Chain (ExactChain, which folds full chunks, or RoundedChain, which does not).
template <typename Chain>
struct TwoChains {
  using value_t = typename Chain::Element;
  static constexpr int kLanes = 16 / sizeof(value_t);
  Chain chains[2];
  __device__ __forceinline__ void add(const uint4& raw) {
    value_t lanes[kLanes];
    memcpy(lanes, &raw, sizeof(raw));
#pragma unroll
    for (int j = 0; j < kLanes; ++j) chains[j * 2 / kLanes].add(lanes[j]);
    chains[0].fold_if_full();
    chains[1].fold_if_full();
  }
  __device__ __forceinline__ void add_value(value_t x) {
    chains[0].add(x);
    chains[0].fold_if_full();
  }
  template <typename C>
  __device__ __forceinline__ auto total() const {
    return Chain::merged(chains[0], chains[1]);
  }
};

// ---- exact, certified once an output ------------------------------------------------

namespace exact {

// What the kernels of an exact sum of 16- or 32-bit floats combine where its outputs are
// short enough (exact_passes says when): a rounded sum, certified once, at its output,
// rather than a certified sum at every lane and level of the trees (a TwoSum, its
// branches and three doubles each). `sum`: the elements added in double, in any order;
// `magnitude`: at least sum |x| (float, every addition rounded up); `mark`: the
// complement of the smallest lsb key (combined by max, so that a zeroed RoundedSum, the
// trees' zero, holds no element); `depth`: the most rounded additions any element went
// through, a chain's additions not counted where exact_in_double proves them exact.
struct RoundedSum {
  double sum;
  float magnitude;
  uint32_t mark;
  uint32_t depth;
};
__device__ __forceinline__ RoundedSum operator+(const RoundedSum& a, const RoundedSum& b) {
  return {a.sum + b.sum, __fadd_ru(a.magnitude, b.magnitude), max(a.mark, b.mark),
          max(a.depth, b.depth) + 1};
}
__device__ __forceinline__ RoundedSum& operator+=(RoundedSum& a, const RoundedSum& b) {
  return a = a + b;
}
__device__ __forceinline__ RoundedSum shfl_xor(const RoundedSum& v, unsigned offset,
                                               unsigned mask = kFullMask) {
  return {__shfl_xor_sync(mask, v.sum, offset), __shfl_xor_sync(mask, v.magnitude, offset),
          __shfl_xor_sync(mask, v.mark, offset), __shfl_xor_sync(mask, v.depth, offset)};
}
__device__ __forceinline__ RoundedSum shfl_down(const RoundedSum& v, unsigned offset,
                                                unsigned mask = kFullMask, int width = 32) {
  return {__shfl_down_sync(mask, v.sum, offset, width),
          __shfl_down_sync(mask, v.magnitude, offset, width),
          __shfl_down_sync(mask, v.mark, offset, width),
          __shfl_down_sync(mask, v.depth, offset, width)};
}
__device__ __forceinline__ RoundedSum load_coherent(const RoundedSum* p) {
  return {__ldcg(&p->sum), __ldcg(&p->magnitude), __ldcg(&p->mark), __ldcg(&p->depth)};
}

// The certified sum a RoundedSum of elements of T stands for (certified_rounded_sum).
template <typename T>
__device__ __forceinline__ CertifiedSum certified(const RoundedSum& r) {
  return certified_rounded_sum<T>(r.sum, r.magnitude, r.depth, lsb_exponent<T>(~r.mark));
}

}  // namespace exact

using exact::RoundedSum;

// A thread's chain of elements into a RoundedSum: ExactChain without the folds (a chain
// that exact_in_double does not prove exact counts its length as its depth).
template <typename T>
struct RoundedChain {
  static_assert(!std::is_same_v<T, double>);  // float64 takes TwoSum chains (ExactChain)
  using Element = T;
  using Sum = RoundedSum;
  double sum = 0;
  float magnitude = 0;
  uint32_t key = exact::kNoLsbKey;
  uint32_t count = 0;

  __device__ __forceinline__ void add(T x) {
    const float f = static_cast<float>(x);
    sum += static_cast<double>(f);
    magnitude = __fadd_ru(magnitude, fabsf(f));
    key = min(key, exact::lsb_key(f));
    ++count;
  }
  __device__ __forceinline__ void fold_if_full() {}  // no chunks (run_pass.cuh, certify_once)
  __device__ __forceinline__ RoundedSum result() const {
    const bool exact = exact::exact_in_double<T>(magnitude, exact::lsb_exponent<T>(key));
    return {sum, magnitude, ~key, exact ? 0u : count};
  }
  // a and b as one chain (one more addition for every element).
  __device__ __forceinline__ static RoundedSum merged(const RoundedChain& a,
                                                      const RoundedChain& b) {
    const float magnitude = __fadd_ru(a.magnitude, b.magnitude);
    const uint32_t key = min(a.key, b.key);
    const bool exact = exact::exact_in_double<T>(magnitude, exact::lsb_exponent<T>(key));
    return {a.sum + b.sum, magnitude, ~key, exact ? 0u : max(a.count, b.count) + 1};
  }
  __device__ __forceinline__ static CertifiedSum certificate(const RoundedSum& r) {
    return exact::certified<T>(r);
  }
};

// ColumnAccumulators for rounded exact sums: a double sum a column, the certificate's
// fields shared where they can be (the rows added, and for 16-bit elements the magnitude
// and the lsb key too: a bound and a key that hold for every column hold for each). A
// RoundedChain a column (five registers) held a thread to 8-byte vectors, half the bytes
// in flight of auto's columns; these take 16 (one block an SM: columns.cuh,
// kColumnMinBlocks). float32 columns keep their own magnitude and key: they are proved
// exact in double to about 2^14 rows (run_pass.cuh, certify_once), a key or magnitude
// shared by k columns takes log2(k) bits of that margin, and a failed certificate costs a
// recomputation of the column by one thread.
template <typename T, int kVec>
struct RoundedColumns {
  static constexpr int kCertificates = sizeof(T) == 2 ? 1 : kVec;
  double sums[kVec] = {};
  float magnitude[kCertificates] = {};
  uint32_t key[kCertificates];
  uint32_t rows = 0;

  __device__ __forceinline__ RoundedColumns() {
#pragma unroll
    for (int k = 0; k < kCertificates; ++k) key[k] = exact::kNoLsbKey;
  }
  __device__ __forceinline__ void add(const T (&row)[kVec]) {
#pragma unroll
    for (int j = 0; j < kVec; ++j) {
      const int k = j * kCertificates / kVec;
      const float f = static_cast<float>(row[j]);
      sums[j] += static_cast<double>(f);
      magnitude[k] = __fadd_ru(magnitude[k], fabsf(f));
      key[k] = min(key[k], exact::lsb_key(f));
    }
    ++rows;
  }
  __device__ __forceinline__ RoundedSum sum(int j) const {
    const int k = j * kCertificates / kVec;
    const bool exact = exact::exact_in_double<T>(magnitude[k], exact::lsb_exponent<T>(key[k]));
    return {sums[j], magnitude[k], ~key[k], exact ? 0u : rows};
  }
};

// kernel="exact" for the float dtypes: a policy over the chain a thread adds its elements
// in. ExactSums: ExactChain, certified sums at every level; ExactRoundedSums:
// RoundedChain, rounded sums certified once an output (16- and 32-bit floats, where
// run_pass.cuh's certify_once says so).
template <typename Chain>
struct ExactPolicy {
  using Element = typename Chain::Element;
  static_assert(std::is_floating_point_v<Element> || std::is_same_v<Element, c10::Half> ||
                std::is_same_v<Element, c10::BFloat16>);
  using Sum = typename Chain::Sum;
  using Lanes = TwoChains<Chain>;
  using Acc = Chain;
  using Short = ExactPolicy;
  using Full = ExactPolicy;
  static constexpr bool kExact = true;

  template <int kVec>
  using Columns = std::conditional_t<std::is_same_v<Sum, RoundedSum>, RoundedColumns<Element, kVec>,
                                     ColumnAccumulators<ExactPolicy, kVec>>;

  ExactSource<Element> source;  // for recomputing an output whose certificate fails

  __device__ __forceinline__ static void add(Acc& acc, Element x) {
    acc.add(x);
    acc.fold_if_full();
  }
  __device__ __forceinline__ static Sum sum_of(const Acc& acc) { return acc.result(); }
  __device__ __forceinline__ static CertifiedSum certificate(const Sum& sum) {
    return Chain::certificate(sum);
  }
  template <typename Out>
  __device__ __forceinline__ void store(Out* y, int64_t q, const Sum& sum) const {
    store_exact(source, y, q, certificate(sum));
  }
  __device__ __forceinline__ Element recomputed(int64_t q) const { return exact_output(source, q); }
};
template <typename T>
using ExactSums = ExactPolicy<ExactChain<T>>;
template <typename T>
using ExactRoundedSums = ExactPolicy<RoundedChain<T>>;

// A partial sum another block left (the finish of split kernels): read from L2, where
// that block's store went.
template <typename V>
__device__ __forceinline__ V load_coherent(const V* p) {
  return __ldcg(p);
}
namespace exact {
__device__ __forceinline__ CertifiedSum load_coherent(const CertifiedSum* p) {
  return {__ldcg(&p->hi), __ldcg(&p->lo), __ldcg(&p->bound)};
}
}  // namespace exact

}  // namespace warpreduce
