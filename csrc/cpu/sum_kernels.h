// The CPU kernels of warpreduce::sum, written once with at::vec::Vectorized (ATen's
// vector type: AVX-512, AVX2 or plain C++ depending on how the file including this one is
// compiled) and compiled once per instruction set: sum_kernels_<isa>.cpp defines
// CPU_CAPABILITY (DEFAULT, AVX2, AVX512), turns that instruction set on and includes this
// header, which puts everything into warpreduce::cpu::CPU_CAPABILITY
// (sum_kernels_prelude.h says how a TU must be laid out so that nothing it shares with
// others is compiled for the wider ISA). sum_cpu.cpp picks one at run time.
//
// Each pass of the reduction geometry (geometry.h) is read in place, never copied:
// - ROWS (inner == 1): each output sums `length` elements, vector loads along the row;
// - COLUMNS (inner > 1): the outputs are adjacent, vector loads across them, the reduced
//   dim walked in the outer loop, a tile of partial sums kept in L1.
// Work is cut into tasks of a size fixed by the shape alone (never by the thread count),
// each task writes its own partial sums, and partial sums are combined in a fixed
// pairwise order: the result is the same bits for any number of threads.
//
// Float error: every sum is a cascade (a few serial adds per lane at the bottom, pairwise
// above), like ATen's cascade sum, so the error grows with log(length), not length.
#pragma once

#if !defined(CPU_CAPABILITY) || !defined(WARPREDUCE_CPU_KERNELS_PRELUDE)
#error "include sum_kernels_prelude.h, then define CPU_CAPABILITY, before this header"
#endif
#define WARPREDUCE_CPU_SUM_KERNELS 1  // for exact_kernels.h, which comes after

#include <ATen/cpu/vec/functional.h>
#include <ATen/cpu/vec/vec.h>

// Hidden: calls between the kernels go straight to them, not through the PLT (a row of 32
// floats paid a PLT call), and no other library's copy of a name can stand in for one.
namespace warpreduce::cpu {
namespace [[gnu::visibility("hidden")]] CPU_CAPABILITY {

using at::vec::Vectorized;

// ---- Tuning, in one place ------------------------------------------------------------
// Each float cascade leaf is kAccumulators independent vector accumulators, each adding
// kLeafRounds vectors: enough independent adds in flight to cover the add latency (4
// cycles, 2 a cycle on AVX-512 and AVX2 cores: 8 chains), and 8 serial adds per lane keep
// the leaf error below ATen's cascade, whose serial runs are 16.
constexpr int kAccumulators = 8;
constexpr int kLeafRounds = 8;
// Elements of a row one task sums; longer rows are cut into chunks of this size, summed
// in parallel and combined pairwise. Fixed so that results do not depend on threads.
constexpr int64_t kRowChunk = int64_t{1} << 14;
// Column tiles: rows of a tile are summed kBlockRows at a time in registers (a balanced
// tree), block sums are added into an L1-resident tile of partial sums (16 at most: a
// chunk is kChunkRows rows; ATen's cascade has serial runs of 16), and chunks are combined
// pairwise.
constexpr int64_t kBlockRows = 16;
constexpr int64_t kChunkRows = 256;
constexpr int64_t kTileBytes = 8192;  // partial sums of one tile: 2048 floats, in L1
template <typename A>
constexpr int64_t kTileWidth = kTileBytes / sizeof(A);
template <typename A>
constexpr int64_t kTilePad = 64 / sizeof(A);  // room for a whole last vector
// Tiles of at least this many columns where a pass narrows them (column_tile_width).
constexpr int64_t kMinTileWidth = 256;
constexpr int kColumnVectors = 4;  // vectors of columns summed side by side in a block
static_assert(kColumnVectors == 4, "float_column_tile's switch covers 1 to 4 vectors");
// Short rows are each too little work for the out-of-order core to keep enough loads in
// flight (rows of 32 floats streamed at half the bandwidth of a full sum of the same
// tensor): each row asks for the head of the row kShortRowsAhead further on. 20.4 ->
// 12.4 ms for 2^20 rows of 32 floats, on one thread.
constexpr int64_t kShortRowsAhead = 16;
constexpr int64_t kShortRowPrefetchBytes = 256;
// Tasks smaller than this many elements are grouped, and a pass of fewer elements runs on
// the calling thread: waking the pool costs more than it saves below it. (On the 2-core
// dev machine a second thread never paid, one core already reading memory at its limit;
// 2^16, twice ATen's grain, leaves a 2^20-element sum 16 pieces for a larger host.)
constexpr int64_t kMinParallelElements = int64_t{1} << 16;

// What partial sums are combined in once the elements are added up: double for float32
// (a chunk's lanes, chunks, passes: few values, so the wider adds cost nothing, and the
// combine adds no error of its own: float combining erred 1.36x torch.sum's mean at 2^24
// elements, over 18 inputs), else the accumulator type itself.
template <typename A>
using combine_t = std::conditional_t<std::is_same_v<A, float>, double, A>;

inline int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// Runs fn(task) for task in [0, tasks), tasks of about `task_elements` elements each,
// spread over the threads. Which thread runs a task never changes what the task computes.
template <typename Fn>
void for_each_task(int64_t tasks, int64_t task_elements, const Fn& fn) {
  const int64_t grain =
      std::max<int64_t>(1, kMinParallelElements / std::max<int64_t>(1, task_elements));
  at::parallel_for(0, tasks, grain, [&](int64_t begin, int64_t end) {
    for (int64_t t = begin; t < end; ++t) fn(t);
  });
}

// ---- Loads: a float type as vectors of its accumulator type --------------------------
// float and double load as they are; float16 and bfloat16 are widened to float in vector
// registers (one load of Vectorized<float>::size() 16-bit values, then a conversion).
template <typename T>
struct VecLoad {
  using Acc = T;
  using Vec = Vectorized<T>;
  static constexpr int64_t kWidth = Vec::size();
  static Vec full(const T* p) { return Vec::loadu(p); }
  static Vec partial(const T* p, int64_t n) { return Vec::loadu(p, n); }
};

template <typename T>
struct WidenedVecLoad {
  using Acc = float;
  using Vec = Vectorized<float>;
  static constexpr int64_t kWidth = Vec::size();
  static Vec full(const T* p) {
    Vec v;
    if constexpr (std::is_same_v<T, c10::BFloat16>) {
      at::vec::load_fp32_from_bf16(p, v);
    } else {
      at::vec::load_fp32_from_fp16(p, v);
    }
    return v;
  }
  static Vec partial(const T* p, int64_t n) {
    T padded[kWidth] = {};  // zeros past the end
    std::memcpy(padded, p, n * sizeof(T));
    return full(padded);
  }
};
template <>
struct VecLoad<c10::BFloat16> : WidenedVecLoad<c10::BFloat16> {};
template <>
struct VecLoad<c10::Half> : WidenedVecLoad<c10::Half> {};

// ---- Pairwise combination ------------------------------------------------------------
// Items pushed in order are summed as a balanced binary tree (a binary counter: the
// k-th push merges as many times as k has trailing ones), so that the error of a sum of
// m items grows with log2(m). V: an accumulator vector or scalar. The levels are raw
// bytes: Vectorized's constructor zeroes, and zeroing 64 levels (4 KiB) on every call
// cost more than summing a 4096-element row.
template <typename V>
class PairwiseSum {
 public:
  void push(V v) {
    for (int64_t c = count_; c & 1; c >>= 1) v = level(--depth_) + v;
    set_level(depth_++, v);
    ++count_;
  }
  V total() const {  // at least one push
    V s = level(depth_ - 1);
    for (int d = depth_ - 2; d >= 0; --d) s = level(d) + s;
    return s;
  }

 private:
  static constexpr int kMaxDepth = 64;  // 2^64 items
  V level(int d) const {
    V v;
    std::memcpy(&v, bytes_ + d * sizeof(V), sizeof(V));
    return v;
  }
  void set_level(int d, const V& v) { std::memcpy(bytes_ + d * sizeof(V), &v, sizeof(V)); }

  alignas(64) unsigned char bytes_[kMaxDepth * sizeof(V)];
  int depth_ = 0;
  int64_t count_ = 0;
};

template <typename V>
V tree_sum(const V (&acc)[kAccumulators]) {
  static_assert(kAccumulators == 8);
  return ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]));
}

// lanes[first], lanes[first + step], ... (count of them: a power of two, at most a
// vector's lanes) summed pairwise, in combine_t: at each level item j takes in item j +
// half, the halves from count / 2 down to 1. Unrolled for each count, its items in
// registers: as a loop over an array, GCC vectorized the adds, whose wide loads of the
// array then waited on its narrow stores (store forwarding fails): 29% of the time of
// 91932 folded slices of 24 floats (float32 3 x 8 x 91932 permuted over dim 1, perf, the
// dev machine).
template <int kHalf, int kCount, int kJ, typename C, typename A>
C pairwise_items(const A* lanes, int64_t first, int64_t step) {
  if constexpr (kHalf == kCount) {
    return static_cast<C>(lanes[first + kJ * step]);
  } else {
    return pairwise_items<2 * kHalf, kCount, kJ, C>(lanes, first, step) +
           pairwise_items<2 * kHalf, kCount, kJ + kHalf, C>(lanes, first, step);
  }
}

template <typename A>
combine_t<A> pairwise_lanes(const A* lanes, int64_t first, int64_t step, int64_t count) {
  using C = combine_t<A>;
  switch (count) {
    case 1:
      return pairwise_items<1, 1, 0, C>(lanes, first, step);
    case 2:
      return pairwise_items<1, 2, 0, C>(lanes, first, step);
    case 4:
      return pairwise_items<1, 4, 0, C>(lanes, first, step);
    case 8:
      return pairwise_items<1, 8, 0, C>(lanes, first, step);
    case 16:
      return pairwise_items<1, 16, 0, C>(lanes, first, step);
    default:
      TORCH_INTERNAL_ASSERT(count == 32, "warpreduce: pairwise_lanes of ", count);
      return pairwise_items<1, 32, 0, C>(lanes, first, step);
  }
}

// The lanes of v summed pairwise, in combine_t; with a lane step s (a power of two that
// divides the width), only lanes 0, s, 2s, ...: those of a row read with stride s.
template <typename A>
combine_t<A> horizontal_sum(const Vectorized<A>& v, int64_t lane_step = 1) {
  constexpr int64_t kWidth = Vectorized<A>::size();
  alignas(64) A stored[kWidth];
  v.store(stored);
  return pairwise_lanes(stored, 0, lane_step, kWidth / lane_step);
}

// ---- One row: n elements, contiguous or strided --------------------------------------

// The lanes of v summed, for a short row: float lanes with at::vec's shuffles.
template <typename A>
combine_t<A> short_horizontal_sum(const Vectorized<A>& v, int64_t lane_step) {
  if constexpr (std::is_same_v<A, float>) {
    if (lane_step == 1) return at::vec::vec_reduce_all<float>(std::plus<Vectorized<float>>(), v);
  }
  return horizontal_sum(v, lane_step);
}

// The last `count` (< a vector) elements of a row at p: a whole load with the lanes past
// the row zeroed where that load ends before `readable_end` (the input goes on after the
// row), else a partial load, which copies the elements one by one (rows of 40 bfloat16
// ran at 0.36x torch.sum with it).
template <typename T>
C10_ALWAYS_INLINE typename VecLoad<T>::Vec last_vector(const T* p, int64_t count,
                                                       const T* readable_end) {
  using L = VecLoad<T>;
  using V = typename L::Vec;
  return p + L::kWidth <= readable_end ? V::set(V(typename L::Acc(0)), L::full(p), count)
                                       : L::partial(p, count);
}

// A row shorter than a leaf (n >= 1 elements: the span read), or the last, partial leaf
// of a long one: four accumulators (at most 16 serial adds a lane, as ATen's cascade) and
// no pairwise levels, added into one vector. Rows of 32 floats summed through the leaf
// code took 31 ns each (0.54x torch.sum on 2^20 of them): the zeroed accumulators, the
// levels and the lane-by-lane horizontal sum cost more than the row.
template <typename T>
C10_ALWAYS_INLINE typename VecLoad<T>::Vec short_vector_sum(const T* x, int64_t n,
                                                            const T* readable_end) {
  using L = VecLoad<T>;
  using V = typename L::Vec;
  using A = typename L::Acc;
  constexpr int64_t W = L::kWidth;
  if (n <= W) return last_vector(x, n, readable_end);
  V a = L::full(x), b(A(0)), c(A(0)), d(A(0));
  int64_t i = W;
  for (; i + 4 * W <= n; i += 4 * W) {
    a = a + L::full(x + i);
    b = b + L::full(x + i + W);
    c = c + L::full(x + i + 2 * W);
    d = d + L::full(x + i + 3 * W);
  }
  for (; i + W <= n; i += W) b = b + L::full(x + i);
  if (i < n) c = c + last_vector(x + i, n - i, readable_end);
  return (a + b) + (c + d);
}

// Short rows a vector's width at a time: the lanes of each of W vectors (W the width)
// summed at once, lane r of the result v[r]'s sum, by the same tree in every lane (AVX2:
// ((l0 + l1) + (l2 + l3)) + ((l4 + l5) + (l6 + l7)); AVX-512: each 128-bit quarter so,
// then (q0 + q2) + (q1 + q3)), so that a row's bits do not depend on its neighbours (a
// group's missing rows are zeros). A row's own horizontal sum, a dozen shuffles and
// adds, took half the time of short rows on the AVX2 dev machine (perf: float32 rows of
// 10, 0.75x torch.sum), and 22% of float32 rows of 9 on AVX-512 (perf, the dev machine,
// 2026-11-30). Grouped there too (one thread, two rounds of each build in turn, against
// torch.sum): float32 rows of 9 0.77-0.80 -> 1.27-1.31x, float64 rows of 9 0.46-0.53 ->
// 0.82-0.85x, bfloat16 1.28-1.31 -> 2.31-2.36x, float32 64 x 11050 transposed over dim 0
// (rows of 64) 0.73 -> 1.05-1.10x.
#if defined(CPU_CAPABILITY_AVX2) || defined(CPU_CAPABILITY_AVX512)
template <typename A>
constexpr bool kGroupedRows = std::is_same_v<A, float> || std::is_same_v<A, double>;
#else
template <typename A>
constexpr bool kGroupedRows = false;
#endif
#if defined(CPU_CAPABILITY_AVX2)
C10_ALWAYS_INLINE Vectorized<float> horizontal_sums(const Vectorized<float> (&v)[8]) {
  __m256 t[4], u[2];
  for (int k = 0; k < 4; ++k) t[k] = _mm256_hadd_ps(v[2 * k], v[2 * k + 1]);
  for (int k = 0; k < 2; ++k) u[k] = _mm256_hadd_ps(t[2 * k], t[2 * k + 1]);
  return _mm256_add_ps(_mm256_permute2f128_ps(u[0], u[1], 0x20),
                       _mm256_permute2f128_ps(u[0], u[1], 0x31));
}
C10_ALWAYS_INLINE Vectorized<double> horizontal_sums(const Vectorized<double> (&v)[4]) {
  const __m256d t0 = _mm256_hadd_pd(v[0], v[1]), t1 = _mm256_hadd_pd(v[2], v[3]);
  return _mm256_add_pd(_mm256_permute2f128_pd(t0, t1, 0x20), _mm256_permute2f128_pd(t0, t1, 0x31));
}
#elif defined(CPU_CAPABILITY_AVX512)
// _mm256_hadd_ps within each 128-bit quarter: a0 + a1, a2 + a3, b0 + b1, b2 + b3.
C10_ALWAYS_INLINE __m512 hadd_quarters(__m512 a, __m512 b) {
  return _mm512_add_ps(_mm512_shuffle_ps(a, b, 0x88), _mm512_shuffle_ps(a, b, 0xDD));
}
C10_ALWAYS_INLINE Vectorized<float> horizontal_sums(const Vectorized<float> (&v)[16]) {
  __m512 t[8], u[4];
  for (int k = 0; k < 8; ++k) t[k] = hadd_quarters(v[2 * k], v[2 * k + 1]);
  // quarter q of u[k]: the sums of quarter q of v[4k], ..., v[4k + 3]
  for (int k = 0; k < 4; ++k) u[k] = hadd_quarters(t[2 * k], t[2 * k + 1]);
  // quarters (0 + 2) and (1 + 3) of u[0], u[1] (and u[2], u[3]), then those added
  const __m512 x01 =
      _mm512_add_ps(_mm512_shuffle_f32x4(u[0], u[1], 0x44), _mm512_shuffle_f32x4(u[0], u[1], 0xEE));
  const __m512 x23 =
      _mm512_add_ps(_mm512_shuffle_f32x4(u[2], u[3], 0x44), _mm512_shuffle_f32x4(u[2], u[3], 0xEE));
  return _mm512_add_ps(_mm512_shuffle_f32x4(x01, x23, 0x88), _mm512_shuffle_f32x4(x01, x23, 0xDD));
}
C10_ALWAYS_INLINE Vectorized<double> horizontal_sums(const Vectorized<double> (&v)[8]) {
  __m512d t[4];
  // _mm256_hadd_pd within each 128-bit quarter: a0 + a1, b0 + b1
  for (int k = 0; k < 4; ++k) {
    t[k] = _mm512_add_pd(_mm512_unpacklo_pd(v[2 * k], v[2 * k + 1]),
                         _mm512_unpackhi_pd(v[2 * k], v[2 * k + 1]));
  }
  // quarter q of t[k]: the sums of quarter q of v[2k] and v[2k + 1]
  const __m512d x01 =
      _mm512_add_pd(_mm512_shuffle_f64x2(t[0], t[1], 0x44), _mm512_shuffle_f64x2(t[0], t[1], 0xEE));
  const __m512d x23 =
      _mm512_add_pd(_mm512_shuffle_f64x2(t[2], t[3], 0x44), _mm512_shuffle_f64x2(t[2], t[3], 0xEE));
  return _mm512_add_pd(_mm512_shuffle_f64x2(x01, x23, 0x88), _mm512_shuffle_f64x2(x01, x23, 0xDD));
}
#endif

// lane_step: as in horizontal_sum.
template <typename T>
C10_ALWAYS_INLINE combine_t<typename VecLoad<T>::Acc> short_float_sum(const T* x, int64_t n,
                                                                      int64_t lane_step,
                                                                      const T* readable_end) {
  return short_horizontal_sum(short_vector_sum(x, n, readable_end), lane_step);
}

// A compiler barrier: no load moves across it. Between the rounds of a leaf it keeps the
// loads in address order; left alone, GCC ran each accumulator's chain to the end in
// turn, striding through the leaf 256 bytes at a time. A standalone copy of the leaf on
// one AVX2 core (the dev machine, 2^22-2^26 floats, interleaved medians) streamed 6.5-6.9
// GB/s from DRAM that way and 7.0-8.4 in address order (20-22 and 26-27 GB/s in L3).
C10_ALWAYS_INLINE void loads_in_order() { asm volatile("" ::: "memory"); }

// The same, and the round's adds done before it: each accumulator passed through an
// empty asm in its register. The barrier orders loads only; the adds of widened 16-bit
// loads (a load, a widening and an add, not one add from memory) were moved past it, each
// accumulator's chain run to the end in turn, the 64 widened vectors of a leaf spilled to
// the stack and read back (objdump, AVX2: bfloat16 full sums at 4 G elements/s on a
// core, 0.69-0.85x torch.sum). (x86 only: the accumulator's register type; the generic
// build keeps the plain barrier.)
template <typename V>
C10_ALWAYS_INLINE void round_done(V (&acc)[kAccumulators]) {
#if defined(CPU_CAPABILITY_AVX2) || defined(CPU_CAPABILITY_AVX512)
  using Raw = std::conditional_t<std::is_same_v<typename V::value_type, float>,
                                 std::conditional_t<sizeof(V) == 64, __m512, __m256>,
                                 std::conditional_t<sizeof(V) == 64, __m512d, __m256d>>;
  for (int k = 0; k < kAccumulators; ++k) {
    Raw raw = acc[k];
    asm volatile("" : "+v"(raw));
    acc[k] = V(raw);
  }
#endif
  loads_in_order();
}

// Elements of a cascade leaf: rows shorter than this take short_float_sum.
template <typename T>
constexpr int64_t kLeafElements = kAccumulators * kLeafRounds * VecLoad<T>::kWidth;

// One cascade leaf from p: kLeafRounds rounds of kAccumulators vectors, vector j of the
// leaf into accumulator j % kAccumulators.
template <typename T>
C10_ALWAYS_INLINE typename VecLoad<T>::Vec leaf_sum(const T* p) {
  using L = VecLoad<T>;
  using V = typename L::Vec;
  constexpr int64_t W = L::kWidth;
  V acc[kAccumulators];
  for (int k = 0; k < kAccumulators; ++k) acc[k] = L::full(p + k * W);
  for (int r = 1; r < kLeafRounds; ++r) {
    round_done(acc);
    for (int k = 0; k < kAccumulators; ++k)
      acc[k] = acc[k] + L::full(p + (r * kAccumulators + k) * W);
  }
  return tree_sum(acc);
}

// n >= kLeafElements contiguous floats as one vector: leaves of kAccumulators x
// kLeafRounds vectors, summed pairwise; lane j holds the elements at j modulo the width.
template <typename T>
typename VecLoad<T>::Vec leaves_sum(const T* x, int64_t n, const T* readable_end) {
  constexpr int64_t kLeaf = kLeafElements<T>;
  PairwiseSum<typename VecLoad<T>::Vec> leaves;
  int64_t i = 0;
  for (; i + kLeaf <= n; i += kLeaf) leaves.push(leaf_sum(x + i));
  // The last, partial leaf as a short row: the leaf's own loop over its vectors (a run-time
  // accumulator index) kept the accumulators on the stack, and float64 rows of 257-400
  // elements ran at 0.57-0.62x torch.sum.
  if (i < n) leaves.push(short_vector_sum(x + i, n - i, readable_end));
  return leaves.total();
}

// n contiguous floats: leaves of kAccumulators x kLeafRounds vectors, summed pairwise.
// With a lane step s > 1 (a power of two dividing the vector width), the n floats s apart
// from x: the whole span is read, every lane summed alike, and the lanes at multiples of s
// (the row's elements; loads start at multiples of the width) summed at the end. Rows of
// stride 2 (a strided last dim) read with scalar loads ran at 0.31-0.56x torch.sum.
// readable_end: as in last_vector.
template <typename T>
combine_t<typename VecLoad<T>::Acc> contiguous_float_sum(const T* x, int64_t n, int64_t lane_step,
                                                         const T* readable_end) {
  n = (n - 1) * lane_step + 1;  // the span
  if (n < kLeafElements<T>) return short_float_sum(x, n, lane_step, readable_end);
  return horizontal_sum(leaves_sum(x, n, readable_end), lane_step);
}

// Whether rows of this stride can be summed by contiguous_float_sum's lane step.
template <typename T>
bool lane_strided(int64_t stride) {
  return stride > 1 && VecLoad<T>::kWidth % stride == 0 && (stride & (stride - 1)) == 0;
}

// Rows of at most this many elements are summed with scalar adds, one after the other: a
// vector load and a horizontal sum cost more than the row (1.5M rows of 2 bfloat16 ran at
// 0.42x torch.sum; rows of 14 int32 through integer_sum at 0.66x).
template <typename T>
constexpr int64_t kTinyRow = is_integer_v<T> ? 16 : 8;

// One element as its accumulator type. c10::Half converts in software (the prelude's
// code is built for the baseline ISA): 2.8 ns an element, rows of 7 float16 at stride 2
// at 0.28x torch.sum; F16C's instruction where this build has it.
template <typename T>
C10_ALWAYS_INLINE acc_t<T> scalar_value(const T& v) {
  using A = acc_t<T>;
  if constexpr (is_integer_v<T>) {
    return static_cast<A>(static_cast<int64_t>(v));
  } else if constexpr (std::is_same_v<T, c10::Half>) {
#if defined(CPU_CAPABILITY_AVX2) || defined(CPU_CAPABILITY_AVX512)
    return _cvtsh_ss(v.x);
#else
    return static_cast<A>(v);
#endif
  } else {
    return static_cast<A>(v);
  }
}

// A tiny row, pairwise, its length known to the compiler (with_tiny_length). A loop to a
// run-time length cost 3 ns a row on the dev machine, one thread, 2^19 rows: float32 rows
// of 2 1356 -> 302 us, float64 rows of 2 1577 -> 279 us, float32 rows of 8 1585 -> 990 us.
template <int64_t kLength, typename T>
C10_ALWAYS_INLINE acc_t<T> tiny_sum(const T* x, int64_t stride) {
  if constexpr (kLength == 1) {
    return scalar_value(x[0]);
  } else {
    constexpr int64_t kFirst = (kLength + 1) / 2;
    return tiny_sum<kFirst>(x, stride) + tiny_sum<kLength - kFirst>(x + kFirst * stride, stride);
  }
}

// What a tiny row costs, in elements of a full sum, for the threads' shares (for_each_task).
// Counted by their elements, 35805 rows of 8 doubles made 5 tasks for a 16-core host and
// ran at 0.54x torch.sum there. One thread of the dev machine, rows unrolled: 1.5 ns a row
// of 2-8 floats or doubles, 4 ns of bfloat16 or float16; a full float32 sum in cache 0.07
// ns an element.
constexpr int64_t kTinyRowCost = 32;

// fn(std::integral_constant<int64_t, length>()) for 1 <= length <= kMax: tiny rows with
// their length known to the compiler, the loop unrolled.
template <int64_t kMax, int64_t kLength = 1, typename Fn>
C10_ALWAYS_INLINE void with_tiny_length(int64_t length, const Fn& fn) {
  if constexpr (kLength <= kMax) {
    if (length == kLength) return fn(std::integral_constant<int64_t, kLength>());
    with_tiny_length<kMax, kLength + 1>(length, fn);
  }
}

// n floats `stride` apart: the same cascade on scalars (no vector loads to be had).
template <typename T>
combine_t<acc_t<T>> strided_float_sum(const T* x, int64_t n, int64_t stride) {
  using A = acc_t<T>;
  constexpr int64_t kLeaf = kAccumulators * kLeafRounds;
  PairwiseSum<A> leaves;
  int64_t i = 0;
  for (; i < n; i += kLeaf) {
    A acc[kAccumulators] = {};
    const int64_t m = std::min(kLeaf, n - i);
    for (int64_t j = 0; j < m; ++j) {
      acc[j % kAccumulators] = acc[j % kAccumulators] + scalar_value(x[(i + j) * stride]);
    }
    leaves.push(tree_sum(acc));
  }
  return leaves.total();
}

// Integers add exactly, so only speed matters. 8- and 16-bit values are added in 32-bit
// lanes, which cannot overflow within a block (2^12 values a lane, each below 2^16 in
// magnitude), then widened: twice the lanes per vector of 64-bit ones. The total wraps
// modulo 2^64, as torch.sum's int64 result does. A stride that divides the lanes reads
// the whole span and keeps the lanes at multiples of it (as contiguous_float_sum does):
// rows of int32 at stride 2 read one by one ran at 0.36-0.42x torch.sum.
template <typename T>
acc_t<T> integer_sum(const T* x, int64_t n, int64_t stride) {
  using I = std::conditional_t<(sizeof(T) <= 2), int32_t, acc_t<T>>;
  constexpr int kLanes = sizeof(T) <= 2 ? 16 : 8;
  constexpr int64_t kBlock = sizeof(T) <= 2 ? int64_t{kLanes} << 12 : int64_t{1} << 62;
  acc_t<T> total = 0;
  if (stride < 1 || kLanes % stride != 0) {
    for (int64_t i = 0; i < n; ++i)
      total += static_cast<acc_t<T>>(static_cast<int64_t>(x[i * stride]));
    return total;
  }
  const int64_t span = (n - 1) * stride + 1;
  for (int64_t start = 0; start < span; start += kBlock) {
    const int64_t m = std::min(kBlock, span - start);
    const T* p = x + start;
    I lane[kLanes] = {};
    int64_t i = 0;
    for (; i + kLanes <= m; i += kLanes) {
      for (int j = 0; j < kLanes; ++j) lane[j] += static_cast<I>(static_cast<int64_t>(p[i + j]));
    }
    for (int j = 0; i + j < m; ++j) lane[j] += static_cast<I>(static_cast<int64_t>(p[i + j]));
    for (int j = 0; j < kLanes; j += stride)
      total += static_cast<acc_t<T>>(static_cast<int64_t>(lane[j]));
  }
  return total;
}

template <typename T>
combine_t<acc_t<T>> row_sum(const T* x, int64_t n, int64_t stride, const T* readable_end) {
  if constexpr (is_integer_v<T>) {
    return integer_sum(x, n, stride);
  } else {
    if (stride == 1 || lane_strided<T>(stride)) {
      return contiguous_float_sum(x, n, stride, readable_end);
    }
    return strided_float_sum(x, n, stride);
  }
}

// Partial sums p[0], ..., p[count - 1] combined in a fixed order.
template <typename A>
A combine(const A* p, int64_t count) {
  if constexpr (std::is_integral_v<A>) {
    A total = 0;
    for (int64_t i = 0; i < count; ++i) total += p[i];
    return total;
  } else {
    PairwiseSum<A> sum;
    for (int64_t i = 0; i < count; ++i) sum.push(p[i]);
    return sum.total();
  }
}

// A sum as torch.sum gives it: added to 0, as a sum starts from 0. Only -0.0 changes
// (a sum of -0.0s is +0.0 there, while our trees, which start from the first element, give
// -0.0); every other value, NaN included, stays as it is.
// Times `repeat` (ReductionPass::repeat; integers wrap as the repeated sum would).
template <typename Out, typename S>
Out from_zero(S sum, int64_t repeat) {
  if constexpr (std::is_integral_v<S>) {
    using U = std::make_unsigned_t<S>;
    return static_cast<Out>(static_cast<S>(static_cast<U>(sum) * static_cast<U>(repeat)));
  } else {
    return static_cast<Out>(S(0) + sum * static_cast<S>(repeat));
  }
}

// sum(0), ..., sum(n - 1) as from_zero gives them, into y[0, n). float16 outputs are
// converted a vector at a time: c10::Half's own conversion is software here (the
// prelude's code is built for the baseline ISA, 2.8 ns an output), and float16 14 x 7 x
// 14174 of a sliced tensor summed over dim 1 (an output for every 7 inputs) spent most of
// its time in it: 0.74x torch.sum on the dev machine, the same shape in bfloat16 4.2x.
// The vector conversion rounds alike (to nearest, ties to even); a double sum is first
// rounded to float, as static_cast<c10::Half> rounds it.
template <typename Out, typename Sum>
void store_from_zero(Out* y, int64_t n, int64_t repeat, const Sum& sum) {
#if defined(CPU_CAPABILITY_AVX2) || defined(CPU_CAPABILITY_AVX512)
  if constexpr (std::is_same_v<Out, c10::Half>) {
    constexpr int64_t W = Vectorized<float>::size();
    for (int64_t i = 0; i < n; i += 2 * W) {
      const int64_t count = std::min(2 * W, n - i);
      alignas(64) float f[2 * W] = {};
      for (int64_t k = 0; k < count; ++k) f[k] = from_zero<float>(sum(i + k), repeat);
      at::vec::convert_float_half(Vectorized<float>::loadu(f), Vectorized<float>::loadu(f + W))
          .store(y + i, static_cast<int>(count));
    }
    return;
  }
#endif
  for (int64_t i = 0; i < n; ++i) y[i] = from_zero<Out>(sum(i), repeat);
}

// Every output of a pass of at most kTinyRow<T> rows as a tiny row down its reduced dim:
// output (o, c) from the element at outer.offset(o) + c * inner_stride (a rows pass has
// one column). Threads share the outputs by kTinyRowCost.
template <typename T, typename Out>
void tiny_sums(const T* x, const ReductionPass& pass, Out* y) {
  const int64_t inner = pass.inner;
  with_tiny_length<kTinyRow<T>>(pass.length, [&](auto n) {
    for_each_task(pass.outer_size, inner * kTinyRowCost, [&](int64_t o) {
      const T* slice = x + pass.outer.offset(o);
      for (int64_t c = 0; c < inner; ++c) {
        y[o * inner + c] = from_zero<Out>(
            tiny_sum<n()>(slice + c * pass.inner_stride, pass.reduced_stride), pass.repeat);
      }
    });
  });
}

// ---- Rows pass -----------------------------------------------------------------------
// A task sums one chunk of one row (a whole row when it is at most kRowChunk long). Rows
// of several chunks write a partial sum a chunk, combined pairwise per row.
template <typename T, typename Out>
void rows_pass(const T* x, const ReductionPass& pass, Out* y) {
  using C = combine_t<acc_t<T>>;
  const int64_t rows = pass.outer_size, length = pass.length, stride = pass.reduced_stride;
  const int64_t chunks = ceil_div(length, kRowChunk);
  // Strides are not negative: the data ends with the last row.
  const int64_t span = (length - 1) * stride + 1;
  const T* end = x + pass.outer.offset(rows - 1) + span;  // past the last element
  auto chunk_sum = [&](int64_t row, int64_t chunk) {
    const int64_t start = chunk * kRowChunk;
    return row_sum(x + pass.outer.offset(row) + start * stride, std::min(kRowChunk, length - start),
                   stride, end);
  };
  const bool vector_rows = stride == 1 || lane_strided<T>(stride);
  if (length <= kTinyRow<T>) {
    tiny_sums(x, pass, y);
    return;
  }
  if constexpr (!is_integer_v<T>) {
    if (vector_rows && span < kLeafElements<T>) {  // short rows: the row loop inlined
      auto prefetch_ahead = [&](int64_t row) {
        if (row + kShortRowsAhead < rows) {  // the head of a row further on, into cache
          const char* ahead =
              reinterpret_cast<const char*>(x + pass.outer.offset(row + kShortRowsAhead));
          for (int64_t b = 0; b < std::min<int64_t>(kShortRowPrefetchBytes, span * sizeof(T));
               b += 64) {
            __builtin_prefetch(ahead + b);
          }
        }
      };
      using A = typename VecLoad<T>::Acc;
      if constexpr (kGroupedRows<A>) {
        if (stride == 1) {  // rows a vector's width at a time (horizontal_sums)
          constexpr int64_t W = Vectorized<A>::size();
          for_each_task(ceil_div(rows, W), W * length, [&](int64_t group) {
            const int64_t first = group * W, count = std::min(W, rows - first);
            Vectorized<A> v[W];
            for (int64_t r = 0; r < W; ++r) {
              if (r < count) prefetch_ahead(first + r);
              v[r] = r < count ? short_vector_sum(x + pass.outer.offset(first + r), span, end)
                               : Vectorized<A>(A(0));
            }
            alignas(64) A sums[W];
            horizontal_sums(v).store(sums);
            store_from_zero(y + first, count, pass.repeat,
                            [&](int64_t r) { return static_cast<combine_t<A>>(sums[r]); });
          });
          return;
        }
      }
      for_each_task(rows, length, [&](int64_t row) {
        prefetch_ahead(row);
        y[row] = from_zero<Out>(short_float_sum(x + pass.outer.offset(row), span, stride, end),
                                pass.repeat);
      });
      return;
    }
  }
  if (chunks == 1) {
    for_each_task(rows, length,
                  [&](int64_t row) { y[row] = from_zero<Out>(chunk_sum(row, 0), pass.repeat); });
    return;
  }
  std::unique_ptr<C[]> partial(new C[rows * chunks]);
  for_each_task(rows * chunks, kRowChunk,
                [&](int64_t task) { partial[task] = chunk_sum(task / chunks, task % chunks); });
  for_each_task(rows, chunks, [&](int64_t row) {
    y[row] = from_zero<Out>(combine(partial.get() + row * chunks, chunks), pass.repeat);
  });
}

// ---- Columns pass --------------------------------------------------------------------
// One tile: `rows` rows (row_stride apart) of `width` adjacent columns into tile[0, width).
// Rows are taken kBlockRows at a time: a block's sums stay in registers, up to
// kColumnVectors vectors of columns side by side, and are then added into the tile.
// Every row read is a contiguous run of the tile's width, which the prefetchers follow;
// walking a few vectors of columns down all the rows instead (ATen's order) touches a new
// page a row.

// kRows loads `stride` apart summed as a balanced tree. Inlined whole, with block_sum:
// left to the compiler, tree_of_rows<4> stayed a call that returned its group of vectors
// through the stack, and perf found the column tiles' time there (float32 152 x 786 x 64
// over dim 1 took 2.5x the time of a full sum of its bytes, one thread). Inlined, on the
// dev machine (one thread, paired runs against the build before, two rounds while CI ran
// on the other core): 1.2x for that shape, 1.9x for bfloat16 152 x 786 x 53, 1.4x for
// float32 2^18 x 32 over dim 0 and bfloat16 4096 x 1024, 1.1-1.2x for wide columns;
// bfloat16 152 x 2 x 53 x 393 transposed over dims (3, 1) (seed 173's lowest) from 0.56
// to 0.71x torch.sum at one thread, 0.51 to 0.92x at two.
template <int64_t kRows, typename Load, typename T>
C10_ALWAYS_INLINE auto tree_of_rows(const Load& load, const T* p, int64_t stride) {
  if constexpr (kRows == 1) {
    return load(p);
  } else {
    return tree_of_rows<kRows / 2>(load, p, stride) +
           tree_of_rows<kRows / 2>(load, p + kRows / 2 * stride, stride);
  }
}

// A block of rows of one vector of columns: a tree for a whole block (its adds are
// independent, where a serial chain made narrow tiles wait on the add latency: 2^20 x 32
// floats summed over dim 0 ran at 0.85x torch.sum), a serial sum for the last, short one.
template <typename Load, typename T>
C10_ALWAYS_INLINE auto block_sum(const Load& load, const T* p, int64_t row_stride,
                                 int64_t block_rows) {
  if (block_rows == kBlockRows) return tree_of_rows<kBlockRows>(load, p, row_stride);
  auto s = load(p);
  for (int64_t r = 1; r < block_rows; ++r) s = s + load(p + r * row_stride);
  return s;
}

// K vectors of adjacent columns, added lane by lane.
template <typename V, int K>
struct VecGroup {
  V v[K];
  VecGroup operator+(const VecGroup& other) const {
    VecGroup sum;
    for (int k = 0; k < K; ++k) sum.v[k] = v[k] + other.v[k];
    return sum;
  }
};

// One block of rows (block_rows of them, from x) of the columns [c, c + K vectors) of a
// tile, the last vector `last` columns wide (a whole one or fewer): the K vectors of a row
// read together, the rows summed, the sums added into the tile (set by the first block).
// kWholeLast: the last vector is whole, decided once a tile and not at every load (a
// choice at every load held 2^20 x 32 floats, dim 0, at 5.8 GB/s on one thread, against
// 9.0 GB/s for 2^19 x 64).
template <int K, bool kWholeLast, typename L, typename T>
void add_column_block(const T* x, int64_t row_stride, int64_t block_rows, int64_t c, int64_t last,
                      bool first_block, typename L::Acc* tile) {
  using V = typename L::Vec;
  constexpr int64_t W = L::kWidth;
  const auto load = [last](const T* p) {
    VecGroup<V, K> g;
    for (int k = 0; k + 1 < K; ++k) g.v[k] = L::full(p + k * W);
    if constexpr (kWholeLast) {
      g.v[K - 1] = L::full(p + (K - 1) * W);
    } else {
      g.v[K - 1] = L::partial(p + (K - 1) * W, last);
    }
    return g;
  };
  const VecGroup<V, K> s = block_sum(load, x + c, row_stride, block_rows);
  for (int k = 0; k < K; ++k) {  // the tile has room for a whole last vector
    const int64_t at = c + k * W;
    (first_block ? s.v[k] : V::loadu(tile + at) + s.v[k]).store(tile + at);
  }
}

// Blocks of rows in order, and within a block the tile's columns kColumnVectors vectors at
// a time: the block's rows are read once each, as a contiguous run of the tile's width.
// A partial last vector is read whole where the block's last load ends before
// `readable_end` (the input goes on): the lanes past the tile's width land in its padding,
// never written out. Partial loads at every row held 135 and 228 columns at 0.85x
// torch.sum.
template <typename T>
void float_column_tile(const T* x, int64_t row_stride, int64_t rows, int64_t width,
                       typename VecLoad<T>::Acc* tile, const T* readable_end) {
  using L = VecLoad<T>;
  constexpr int64_t W = L::kWidth;
  constexpr int64_t kGroup = kColumnVectors * W;
  const int64_t grouped = width / kGroup * kGroup;
  const int64_t rest = width - grouped;  // under kColumnVectors vectors, read together
  const int64_t last = rest == 0 ? W : rest - (rest - 1) / W * W;
  for (int64_t block = 0; block < rows; block += kBlockRows) {
    const int64_t block_rows = std::min(kBlockRows, rows - block);
    const T* b = x + block * row_stride;
    const bool first = block == 0;
    for (int64_t c = 0; c < grouped; c += kGroup) {
      add_column_block<kColumnVectors, true, L>(b, row_stride, block_rows, c, W, first, tile);
    }
    const auto rest_block = [&](auto vectors) {
      constexpr int K = decltype(vectors)::value;
      if (last == W || b + (block_rows - 1) * row_stride + grouped + K * W <= readable_end) {
        add_column_block<K, true, L>(b, row_stride, block_rows, grouped, W, first, tile);
      } else {
        add_column_block<K, false, L>(b, row_stride, block_rows, grouped, last, first, tile);
      }
    };
    switch (ceil_div(rest, W)) {
      case 0:
        break;
      case 1:
        rest_block(std::integral_constant<int, 1>());
        break;
      case 2:
        rest_block(std::integral_constant<int, 2>());
        break;
      case 3:
        rest_block(std::integral_constant<int, 3>());
        break;
      default:
        rest_block(std::integral_constant<int, 4>());
        break;
    }
  }
}

// The same sums with scalar loads, for columns that are not adjacent (inner_stride > 1):
// blocks of rows summed serially, then added into the tile.
template <typename T>
void strided_float_column_tile(const T* x, int64_t row_stride, int64_t col_stride, int64_t rows,
                               int64_t width, acc_t<T>* tile, acc_t<T>* block_sums) {
  using A = acc_t<T>;
  for (int64_t block = 0; block < rows; block += kBlockRows) {
    const int64_t block_rows = std::min(kBlockRows, rows - block);
    for (int64_t r = 0; r < block_rows; ++r) {
      const T* row = x + (block + r) * row_stride;
      for (int64_t c = 0; c < width; ++c) {
        const A v = static_cast<A>(row[c * col_stride]);
        block_sums[c] = r == 0 ? v : block_sums[c] + v;
      }
    }
    for (int64_t c = 0; c < width; ++c)
      tile[c] = block == 0 ? block_sums[c] : tile[c] + block_sums[c];
  }
}

// Integers: exact, so plain adds row after row (the compiler vectorizes the column loop).
template <typename T>
void integer_column_tile(const T* x, int64_t row_stride, int64_t col_stride, int64_t rows,
                         int64_t width, acc_t<T>* tile) {
  std::fill(tile, tile + width, acc_t<T>{0});
  for (int64_t r = 0; r < rows; ++r) {
    const T* row = x + r * row_stride;
    if (col_stride == 1) {
      for (int64_t c = 0; c < width; ++c)
        tile[c] += static_cast<acc_t<T>>(static_cast<int64_t>(row[c]));
    } else {
      for (int64_t c = 0; c < width; ++c) {
        tile[c] += static_cast<acc_t<T>>(static_cast<int64_t>(row[c * col_stride]));
      }
    }
  }
}

template <typename T>
void column_tile(const T* x, int64_t row_stride, int64_t col_stride, int64_t rows, int64_t width,
                 acc_t<T>* tile, const T* readable_end) {
  if constexpr (is_integer_v<T>) {
    integer_column_tile(x, row_stride, col_stride, rows, width, tile);
  } else if (col_stride == 1) {
    float_column_tile(x, row_stride, rows, width, tile, readable_end);
  } else {
    alignas(64) acc_t<T> block_sums[kTileWidth<acc_t<T>>];
    strided_float_column_tile(x, row_stride, col_stride, rows, width, tile, block_sums);
  }
}

// Columns a tile of columns_pass holds: kTileWidth, or fewer (at least kMinTileWidth, in
// whole 64-column steps) where full tiles would leave threads without a task. A column's
// sum does not depend on the tile that holds it, so the bits stay the same whatever the
// thread count. On a 16-core host (benchmarks/RESULTS.md): float32 248 x 2665 offset over
// dim 0, 4 tasks of full tiles, 0.29 -> 0.99x torch.sum; 384 x 3 x 714 of a stride-2 last
// dim over dim 0, 6 tasks, 73 -> 36 us. WARPREDUCE_CPU_FULL_TILES=1 keeps full tiles: a
// knob for measuring, read once.
template <typename A>
int64_t column_tile_width(int64_t inner, int64_t other_tasks) {
  static const bool full_tiles = knob_is_set("WARPREDUCE_CPU_FULL_TILES");
  const int64_t threads = at::get_num_threads();
  if (full_tiles || other_tasks * ceil_div(inner, kTileWidth<A>) >= threads) return kTileWidth<A>;
  const int64_t wanted = ceil_div(inner, ceil_div(threads, other_tasks));
  return std::clamp<int64_t>(ceil_div(wanted, 64) * 64, kMinTileWidth, kTileWidth<A>);
}

// The task of a columns pass numbered `task`: the outer index, chunk of kChunkRows rows
// and tile of columns it sums. Outer index first, then chunk, then tile: a thread's run
// of tasks reads one span of memory, and threads get equal shares of every outer index's
// rows. (Chunk first, a short last chunk of every outer index went to the last threads:
// float32 7 x 40 x 26 x 7 x 16 x 4 permuted over dims (3, 1), 182 outer indices of 256 +
// 24 rows, gave one of two threads 91% of the rows: 0.12x torch.sum on the dev machine.)
// A task's sums do not depend on its number: the order changes no bit.
struct ColumnTask {
  int64_t outer, chunk, tile;
};
inline ColumnTask column_task(int64_t task, int64_t chunks, int64_t tiles) {
  return {task / tiles / chunks, task / tiles % chunks, task % tiles};
}

// parts[chunk * stride + j] for j < count summed over the chunks into chunk 0's, as a
// pairwise tree in place (chunk c takes in chunk c + step): the chunks of a columns pass
// and of a long folded slice.
template <typename C>
void add_chunks_pairwise(C* parts, int64_t chunks, int64_t stride, int64_t count) {
  for (int64_t step = 1; step < chunks; step *= 2) {
    for (int64_t chunk = 0; chunk + step < chunks; chunk += 2 * step) {
      C* into = parts + chunk * stride;
      const C* from = parts + (chunk + step) * stride;
      for (int64_t j = 0; j < count; ++j) into[j] = into[j] + from[j];
    }
  }
}

// A task sums one chunk of kChunkRows rows of one tile of columns under one outer index.
// A pass of one chunk writes the outputs; of several, a partial sum per chunk and output,
// then combined pairwise over chunks, a block of outputs at a time. With a step s > 1
// (stepped_columns), only the columns at multiples of s are outputs: an outer index holds
// ceil(inner / s) of them.
template <typename T, typename Out>
void columns_pass(const T* x, const ReductionPass& pass, Out* y, int64_t step = 1) {
  using A = acc_t<T>;
  using C = combine_t<A>;
  const int64_t outer = pass.outer_size, inner = pass.inner, length = pass.length;
  const int64_t chunks = ceil_div(length, kChunkRows);
  const int64_t tile_width = column_tile_width<A>(inner, chunks * outer);
  const int64_t tiles = ceil_div(inner, tile_width);
  const int64_t kept = ceil_div(inner, step);  // outputs an outer index holds
  const int64_t outputs = outer * kept;
  std::unique_ptr<C[]> partial(chunks > 1 ? new C[chunks * outputs] : nullptr);

  const int64_t task_elements = std::min(length, kChunkRows) * std::min(inner, tile_width);
  const T* end = x + pass.outer.offset(outer - 1) + (length - 1) * pass.reduced_stride +
                 (inner - 1) * pass.inner_stride + 1;  // past the last element
  for_each_task(outer * chunks * tiles, task_elements, [&](int64_t task) {
    const auto [o, chunk, tile_index] = column_task(task, chunks, tiles);
    const int64_t c0 = tile_index * tile_width, width = std::min(tile_width, inner - c0);
    const int64_t r0 = chunk * kChunkRows, rows = std::min(kChunkRows, length - r0);
    const T* base = x + pass.outer.offset(o) + r0 * pass.reduced_stride + c0 * pass.inner_stride;

    alignas(64) A tile[kTileWidth<A> + kTilePad<A>];
    column_tile(base, pass.reduced_stride, pass.inner_stride, rows, width, tile, end);
    if (step == 1) {
      const int64_t first_output = o * inner + c0;
      if (chunks == 1) {
        store_from_zero(y + first_output, width, pass.repeat, [&](int64_t c) { return tile[c]; });
      } else {
        C* into = partial.get() + chunk * outputs + first_output;
        for (int64_t c = 0; c < width; ++c) into[c] = tile[c];
      }
    } else {
      // The tile's columns at multiples of the step, from the first of them, numbered
      // from it: with a 64-bit division and a scalar store an output, float32 6 x 1296335
      // of a stride-2 last dim over dim 0 ran at 0.71-0.78x torch.sum on the dev machine,
      // 1.13-1.50x so (two rounds, the builds' processes taking turns).
      const int64_t first = ceil_div(c0, step), skip = first * step - c0;
      const int64_t count = ceil_div(c0 + width, step) - first;
      const auto column = [&](int64_t k) { return tile[skip + k * step]; };
      if (chunks == 1) {
        store_from_zero(y + o * kept + first, count, pass.repeat, column);
      } else {
        C* into = partial.get() + chunk * outputs + o * kept + first;
        for (int64_t k = 0; k < count; ++k) into[k] = column(k);
      }
    }
  });
  if (chunks == 1) return;

  // partial[chunk][output]: a pairwise tree over chunks, vector adds across outputs.
  constexpr int64_t kOutputBlock = 256;
  for_each_task(ceil_div(outputs, kOutputBlock), chunks * kOutputBlock, [&](int64_t block) {
    const int64_t j0 = block * kOutputBlock, count = std::min(kOutputBlock, outputs - j0);
    add_chunks_pairwise(partial.get() + j0, chunks, outputs, count);
    store_from_zero(y + j0, count, pass.repeat, [&](int64_t j) { return partial[j0 + j]; });
  });
}

// ---- Narrow packed columns -------------------------------------------------------------
// Fewer columns than kNarrowColumns, their rows one after the other (reduced_stride ==
// inner: x.sum(0) of an (n, 5) tensor): every row is a few lanes of a vector, the loads
// mostly partial and the tasks tiny (6 x 25271 x 5 floats summed over dims 0 and 1 ran at
// 0.06x torch.sum). m rows side by side are read as one row of m * inner columns, a
// multiple of 16 and at least kNarrowColumns (a columns pass over length / m such rows),
// and each output is then the pairwise sum of its m columns, plus the length % m rows left
// over, summed in order.
constexpr int64_t kNarrowColumns = 64;

// The rows narrow_packed_columns reads as one (m), or 0 where it does not take the pass.
inline int64_t narrow_packed_rows(const ReductionPass& pass) {
  const int64_t inner = pass.inner;
  if (inner >= kNarrowColumns || pass.inner_stride != 1 || pass.reduced_stride != inner) return 0;
  int64_t m = 16 / std::gcd<int64_t>(inner, 16);
  while (m * inner < kNarrowColumns) m *= 2;
  return pass.length / m >= kBlockRows ? m : 0;
}

template <typename T, typename Out>
bool narrow_packed_columns(const T* x, const ReductionPass& pass, Out* y) {
  using C = combine_t<acc_t<T>>;
  const int64_t inner = pass.inner, length = pass.length, m = narrow_packed_rows(pass);
  if (m == 0) return false;
  const int64_t wide_rows = length / m, width = m * inner;
  ReductionPass wide = pass;
  wide.repeat = 1;  // its sums are summed again here
  wide.length = wide_rows;
  wide.reduced_stride = wide.inner = width;
  std::unique_ptr<C[]> sums(new C[pass.outer_size * width]);
  columns_pass(x, wide, sums.get());
  const int64_t rest = wide_rows * m;  // the first row left over
  const auto value = [](const T& v) { return static_cast<C>(scalar_value(v)); };
  for_each_task(pass.outer_size, width + (length - rest) * inner, [&](int64_t o) {
    const C* s = sums.get() + o * width;
    const T* left = x + pass.outer.offset(o) + rest * inner;
    for (int64_t c = 0; c < inner; ++c) {
      C parts[kNarrowColumns + 1];
      int64_t count = 0;
      for (int64_t k = 0; k < m; ++k) parts[count++] = s[k * inner + c];
      if (rest < length) {
        C tail = value(left[c]);
        for (int64_t r = 1; r < length - rest; ++r) tail = tail + value(left[r * inner + c]);
        parts[count++] = tail;
      }
      y[o * inner + c] = from_zero<Out>(combine(parts, count), pass.repeat);
    }
  });
  return true;
}

// ---- Narrow gapped columns -------------------------------------------------------------
// Fewer columns than kNarrowColumns, the innermost outer dim of a stride a little larger
// than them (an offset or sliced view: columns 0-6 of rows of 8), each row of the reduced
// dim a whole span of that outer dim: every outer index was a tiny task of partial loads
// (0.22x-0.53x torch.sum with 2, 7 and 8 columns of 3, 8 and 9). The columns of a whole
// span, gaps included, are summed as one wide row of columns, and the gaps' sums dropped.
// The gaps lie between elements of the input, so they are in its storage; at most half of
// a span is gap, so the reads at most double.
template <typename T, typename Out>
void columns_or_narrow(const T* x, const ReductionPass& pass, Out* y);

template <typename T, typename Out>
bool narrow_gapped_columns(const T* x, const ReductionPass& pass, Out* y) {
  using C = combine_t<acc_t<T>>;
  const int64_t inner = pass.inner;
  const int d = pass.outer.ndim - 1;
  if (d < 0 || inner >= kNarrowColumns || pass.inner_stride != 1) return false;
  const int64_t count = pass.outer.sizes[d], gap_stride = pass.outer.strides[d];
  const int64_t width = (count - 1) * gap_stride + inner;
  if (count < 2 || gap_stride <= inner || gap_stride > 2 * inner || width > pass.reduced_stride) {
    return false;
  }
  ReductionPass wide = pass;
  wide.repeat = 1;  // its sums are summed again here
  wide.outer.ndim = d;
  wide.outer.sizes[d] = 0;
  wide.outer.strides[d] = 0;
  wide.outer_size = pass.outer_size / count;
  wide.inner = width;
  std::unique_ptr<C[]> sums(new C[wide.outer_size * width]);
  columns_or_narrow(x, wide, sums.get());
  for_each_task(pass.outer_size, inner, [&](int64_t o) {
    const C* s = sums.get() + o / count * width + o % count * gap_stride;
    store_from_zero(y + o * inner, inner, pass.repeat, [&](int64_t c) { return s[c]; });
  });
  return true;
}

// ---- Folded packed columns ------------------------------------------------------------
// Packed columns (reduced_stride == inner): each outer slice is one contiguous run,
// summed as a row (a long one in chunks of whole periods), and its lanes folded into the
// outputs. Where the columns divide a vector's width W, lane j holds column j % inner;
// else the run is read in periods of V = inner / gcd(inner, W) vectors (3 to 11, odd: the
// first whole number of vectors that is a whole number of rows), vector v of each period
// into a sum of its own, position q of a period holding column q % inner. The wide
// columns of narrow_packed_columns paid a columns pass a slice: bfloat16 807 x 468 x 4
// over dim 1 ran at 0.68x torch.sum on the dev machine, float32 286 x 3 x 220 x 24 over
// dim 2 at 0.58x.

// The sums of the span from p in periods of V vectors, vector v of each period into
// out[v]: leaves of kLeafRounds periods (V independent chains) summed pairwise, the rest
// (under a leaf) into one more leaf, a partial last vector zero-padded.
template <int V, typename T>
void period_sums(const T* p, int64_t span, const T* end, typename VecLoad<T>::Vec (&out)[V]) {
  using L = VecLoad<T>;
  using Vec = typename L::Vec;
  using A = typename L::Acc;
  constexpr int64_t W = L::kWidth, kPeriod = V * W, kLeaf = kLeafRounds * kPeriod;
  PairwiseSum<Vec> leaves[V];
  int64_t i = 0;
  for (; i + kLeaf <= span; i += kLeaf) {
    Vec acc[V];
    for (int v = 0; v < V; ++v) acc[v] = L::full(p + i + v * W);
    for (int r = 1; r < kLeafRounds; ++r) {
      for (int v = 0; v < V; ++v) acc[v] = acc[v] + L::full(p + i + r * kPeriod + v * W);
    }
    for (int v = 0; v < V; ++v) leaves[v].push(acc[v]);
  }
  if (i < span) {
    Vec acc[V];
    for (int v = 0; v < V; ++v) acc[v] = Vec(A(0));
    for (; i + kPeriod <= span; i += kPeriod) {
      for (int v = 0; v < V; ++v) acc[v] = acc[v] + L::full(p + i + v * W);
    }
    for (int v = 0; v < V && i < span; ++v, i += W) {
      acc[v] = acc[v] + (i + W <= span ? L::full(p + i) : last_vector(p + i, span - i, end));
    }
    for (int v = 0; v < V; ++v) leaves[v].push(acc[v]);
  }
  for (int v = 0; v < V; ++v) out[v] = leaves[v].total();
}

template <int V, typename T, typename Out>
void folded_slices(const T* x, const ReductionPass& pass, Out* y) {
  using L = VecLoad<T>;
  using A = typename L::Acc;
  using C = combine_t<A>;
  constexpr int64_t W = L::kWidth, kLanes = V * W;
  // A slice longer than kRowChunk is cut into chunks of whole periods (each lane keeps
  // its column), summed as tasks, and their lanes combined pairwise, in combine_t, as the
  // chunks of a long row.
  constexpr int64_t kChunk = kRowChunk / kLanes * kLanes;
  const int64_t inner = pass.inner, span = pass.length * inner;
  const int64_t chunks = ceil_div(span, kChunk);
  const T* end = x + pass.outer.offset(pass.outer_size - 1) + span;  // past the last element
  // The lanes of the V vectors' sums of `count` elements from p.
  const auto sum_lanes = [&](const T* p, int64_t count, A* lanes) {
    if constexpr (V == 1) {
      const auto v =
          count < kLeafElements<T> ? short_vector_sum(p, count, end) : leaves_sum(p, count, end);
      v.store(lanes);
    } else {
      typename L::Vec sums[V];
      period_sums<V>(p, count, end, sums);
      for (int v = 0; v < V; ++v) sums[v].store(lanes + v * W);
    }
  };
  // Output c of slice o: the positions c, c + inner, ... of its lanes (W / gcd(inner, W)
  // of them, a power of two), summed pairwise.
  const auto fold = [&](int64_t o, const auto* lanes) {
    for (int64_t c = 0; c < inner; ++c) {
      y[o * inner + c] =
          from_zero<Out>(pairwise_lanes(lanes, c, inner, kLanes / inner), pass.repeat);
    }
  };
  if (chunks == 1) {
    for_each_task(pass.outer_size, span, [&](int64_t o) {
      alignas(64) A lanes[kLanes];
      sum_lanes(x + pass.outer.offset(o), span, lanes);
      fold(o, lanes);
    });
    return;
  }
  // As wide columns (narrow_packed_columns: rows of 96 columns, a tile walk down them)
  // float32 2000000 x 6 over dim 0 ran at 0.44x the speed of a full sum of the same bytes,
  // 2000000 x 8 at 0.46x (dev machine, one thread); RESULTS.md has what folding gained.
  std::unique_ptr<C[]> parts(new C[pass.outer_size * chunks * kLanes]);
  for_each_task(pass.outer_size * chunks, kChunk, [&](int64_t task) {
    const int64_t o = task / chunks, first = task % chunks * kChunk;
    alignas(64) A lanes[kLanes];
    sum_lanes(x + pass.outer.offset(o) + first, std::min(kChunk, span - first), lanes);
    C* part = parts.get() + task * kLanes;
    for (int64_t j = 0; j < kLanes; ++j) part[j] = lanes[j];
  });
  for_each_task(pass.outer_size, chunks * kLanes, [&](int64_t o) {
    C* part = parts.get() + o * chunks * kLanes;  // part[chunk * kLanes + lane]
    add_chunks_pairwise(part, chunks, kLanes, kLanes);
    fold(o, part);
  });
}

template <typename T, typename Out>
bool folded_packed_columns(const T* x, const ReductionPass& pass, Out* y) {
  if constexpr (is_integer_v<T>) {
    return false;
  } else {
    constexpr int64_t W = VecLoad<T>::kWidth;
    const int64_t inner = pass.inner, span = pass.length * inner;
    if (pass.inner_stride != 1 || pass.reduced_stride != inner || span < W) return false;
    const int64_t period_vectors = inner / std::gcd<int64_t>(inner, W);
    // Periods of several vectors only where they replaced the wide columns (float32 24
    // columns: 0.56 -> 0.98x torch.sum; 5: 0.63 -> 1.04; float64 3: 0.75 -> 1.23) or
    // columns under half a vector (float32 3: 0.70 -> 1.40). Over columns that fill most
    // of a vector they lost, their slices short (float32 4000 x 100 x 6: 1.35 -> 0.99x,
    // 3000 x 200 x 7: 1.15 -> 0.93, 50000 x 10 x 12: 1.77 -> 1.34). Dev machine, AVX2.
    // Periods of 9 and 11 vectors (18 and 22 float32 columns: eleven sums and a load fill
    // AVX2's 16 registers): float32 2000 x 300 x 22 0.58 -> 1.01x, 3000 x 200 x 18 0.51 ->
    // 0.78, bfloat16 2000 x 300 x 22 0.54 -> 1.11.
    if (period_vectors > 1 && narrow_packed_rows(pass) == 0 && 2 * inner >= W) return false;
    auto fold = [&](auto vectors) {
      folded_slices<decltype(vectors)::value>(x, pass, y);
      return true;
    };
    switch (period_vectors) {
      case 1:
        return fold(std::integral_constant<int, 1>{});
      case 3:
        return fold(std::integral_constant<int, 3>{});
      case 5:
        return fold(std::integral_constant<int, 5>{});
      case 7:
        return fold(std::integral_constant<int, 7>{});
      case 9:
        return fold(std::integral_constant<int, 9>{});
      case 11:
        return fold(std::integral_constant<int, 11>{});
      default:
        return false;
    }
  }
}

// ---- Tiny columns ----------------------------------------------------------------------
// A few narrow columns of a few rows under each outer index, summed each as a tiny row
// down its column, before the folded and narrow packed columns and the column tiles try
// them. Those paid a tile or a fold for every outer index, 100-300 ns: bfloat16 321153 x 4
// x 6 of rows 7 apart over dim 1 (a pass of 7 columns of 3 rows under the gapped rows) ran
// at 0.29x torch.sum on a 16-core host, 18 ns an output on the dev machine. Dev machine,
// one thread, 2^20-element inputs of outer x length x inner, rows packed or 1 element
// apart, inner 2-16, length 2-8, the tiles and folds against tiny columns in turn: up to
// 11x faster where a fold took them (float32 7 packed columns of 4 rows 3278 -> 285 us,
// 0.43 -> 4.9x torch.sum; bfloat16 6 columns of 4 rows 1 apart 4163 -> 827 us), 0.8x on
// three of 120 (bfloat16 2 packed columns of 4, 7 of 8 rows 1 apart; float64 6 packed of
// 2), still 1.7-9.5x torch.sum. Integers stop at 12 columns: 16 packed int32 columns (two
// whole vectors of int64 sums) kept their tiles, 0.67-0.79x as tiny columns.
template <typename T>
constexpr int64_t kTinyColumnsMaxInner = is_integer_v<T> ? 12 : 16;

template <typename T, typename Out>
bool tiny_columns(const T* x, const ReductionPass& pass, Out* y) {
  if (pass.length > kTinyRow<T> || pass.inner > kTinyColumnsMaxInner<T>) return false;
  tiny_sums(x, pass, y);
  return true;
}

template <typename T, typename Out>
void columns_or_narrow(const T* x, const ReductionPass& pass, Out* y) {
  if (!tiny_columns(x, pass, y) && !folded_packed_columns(x, pass, y) &&
      !narrow_packed_columns(x, pass, y)) {
    columns_pass(x, pass, y);
  }
}

// ---- Stepped columns -----------------------------------------------------------------
// Columns a few elements apart (a stepped last dim, x[:, ::2]): scalar loads (220258 x 4
// float32 of stride 2 over dim 0: 0.42x torch.sum on the dev machine; 160 x 8371 of
// stride 2: 0.68x). The whole span of each row, the elements between the columns
// included (they lie between elements of the input, in its storage, and in the same
// cache lines), is summed as adjacent columns, vector loads, and every step-th sum kept:
// spans of at least kNarrowColumns by one columns pass that writes only those sums; narrow
// ones by the narrow paths above, into a buffer of the span's sums. (A buffer for wide
// spans too had float32 8 x 791672 of a stride-2 last dim over dim 0 at 0.65-0.70x
// torch.sum on the dev machine: the sums written and read again, a second pass.)

// A span that falls short of the rows' stride by less than a step (x[..., ::2] of rows of
// an even length: 2n - 1 elements in rows 2n apart) is read to the stride where the
// storage goes on past the last row (the pass's slack): its rows are then one contiguous
// run, which the folded and narrow packed columns read whole. bfloat16 2 x 521 x 582 x 2
// of a stride-2 last dim over dim 2 (a span of 3 in rows of 4) ran at 0.37x torch.sum on
// the dev machine as narrow gapped columns (RESULTS.md has what the padding gained).
template <typename T, typename Out>
bool stepped_columns(const T* x, const ReductionPass& pass, Out* y) {
  using C = combine_t<acc_t<T>>;
  const int64_t step = pass.inner_stride;
  int64_t span = (pass.inner - 1) * step + 1;
  if (step < 2 || step > 4) return false;
  if (pass.reduced_stride > span && pass.reduced_stride - span < step &&
      pass.reduced_stride - span <= pass.slack) {
    span = pass.reduced_stride;
  }
  ReductionPass wide = pass;
  wide.inner = span;
  wide.inner_stride = 1;
  if (span >= kNarrowColumns) {
    columns_pass(x, wide, y, step);
    return true;
  }
  wide.repeat = 1;  // its sums are summed again here
  std::unique_ptr<C[]> sums(new C[pass.outer_size * span]);
  if (!narrow_gapped_columns(x, wide, sums.get())) columns_or_narrow(x, wide, sums.get());
  for_each_task(pass.outer_size, pass.inner, [&](int64_t o) {
    const C* s = sums.get() + o * span;
    for (int64_t c = 0; c < pass.inner; ++c) {
      y[o * pass.inner + c] = from_zero<Out>(s[c * step], pass.repeat);
    }
  });
  return true;
}

// ---- Columns of gapped rows -------------------------------------------------------------
// Narrow columns whose rows lie a little further apart than they are wide (a sliced view:
// the first 3 elements of rows of 6), every row a partial vector: bfloat16 885 x 275 x 6
// x 3 of a sliced last dim over dims (2, 1), a pass of 3 columns in rows 6 apart, ran at
// 0.47-0.55x torch.sum on the dev machine. The rows are read whole, gaps included, as
// packed columns of the rows' stride (the folded or narrow packed columns), and the
// gaps' sums dropped: the gaps lie between elements of the input, in its storage, except
// after each outer slice's last row, which is added to its outputs after the rest. At
// most half of a row is gap, so the reads at most double.
template <typename T, typename Out>
bool gapped_row_columns(const T* x, const ReductionPass& pass, Out* y) {
  using C = combine_t<acc_t<T>>;
  const int64_t inner = pass.inner, stride = pass.reduced_stride, length = pass.length;
  if (inner >= kNarrowColumns || pass.inner_stride != 1 || stride <= inner || stride > 2 * inner ||
      length < 2) {
    return false;
  }
  ReductionPass wide = pass;
  wide.repeat = 1;  // its sums are summed again here
  wide.inner = stride;
  wide.length = length - 1;
  std::unique_ptr<C[]> sums(new C[pass.outer_size * stride]);
  columns_or_narrow(x, wide, sums.get());
  for_each_task(pass.outer_size, inner, [&](int64_t o) {
    const T* last = x + pass.outer.offset(o) + (length - 1) * stride;
    for (int64_t c = 0; c < inner; ++c) {
      const C sum = sums[o * stride + c] + static_cast<C>(scalar_value(last[c]));
      y[o * inner + c] = from_zero<Out>(sum, pass.repeat);
    }
  });
  return true;
}

template <typename T, typename Out>
void run_pass(const T* x, const ReductionPass& pass, Out* y) {
  if (pass.is_rows()) {
    rows_pass(x, pass, y);
  } else if (!stepped_columns(x, pass, y) && !narrow_gapped_columns(x, pass, y) &&
             !gapped_row_columns(x, pass, y)) {
    columns_or_narrow(x, pass, y);
  }
}

// What a pass that is not the last writes for the next: combine_t as a tensor dtype
// (double for every float type; int64 for integers and bool, whose unsigned accumulators
// have no tensor dtype and wrap alike in int64).
template <typename T>
using carry_t = std::conditional_t<std::is_integral_v<acc_t<T>>, int64_t, combine_t<acc_t<T>>>;

// The passes of plan in order (pass_chain.h), each after the first reading the last one's
// outputs.
inline void launch(const SumPlan& plan, at::Tensor& out) {
  WARPREDUCE_DISPATCH(plan.input.scalar_type(), "warpreduce_sum_cpu", [&] {
    using T = scalar_t;
    run_pass_chain<carry_t<T>>(
        plan, kernel_data<T>(plan.input), out.mutable_data_ptr<out_t<T>>(), out,
        [](const auto* x, const ReductionPass& pass, auto* y) { run_pass(x, pass, y); });
  });
}

}  // namespace CPU_CAPABILITY
}  // namespace warpreduce::cpu
