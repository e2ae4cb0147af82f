// Row reductions (geometry.h: the reduced dim is the innermost one): output r sums
// x[row_offset(r) + i * stride] for i < length. Four kernels, chosen by the launch model
// (launch_model.h); other short rows (9 elements up to 1 KiB) are tiled by slabs.cuh.
//
// - rows_vectors: rows of a few whole 16-byte vectors: a vector a lane.
// - rows_short: rows of up to 8 elements that are not whole vectors: a lane a row.
// - rows_grouped: a group of lanes (up to a warp) per row, 16-byte loads within the row:
//   medium rows, and short rows spread too far apart for tiles.
// - rows_split: `parts` blocks per row, finished by the last block of the row: long
//   rows, and a full reduction (one row). One part per row: a block per row.
//
// All of them are memory-bound streaming reads, so everything serves one goal: enough
// bytes in flight to saturate HBM. No float atomics: every sum is added in a fixed order.
// Each kernel takes a policy P (accumulate.cuh) that says what it adds in: auto's sums or
// exact's certified ones.
#pragma once

#include <cstdint>
#include <type_traits>

#include "../geometry.h"
#include "accumulate.cuh"
#include "tail.cuh"

namespace warpreduce {

// The rows of a pass, in two layouts. The general one costs registers: rows_split read
// through it used 40 registers for float32, where 32 let 4 blocks of 512 threads fit an
// SM (40 against 32 for int32, 50 against 40 for bfloat16), so the fast path reads the
// common layout through a type of its own.
//
// EvenRows: row r at x + r * row_stride, its elements contiguous (full sums, x.sum(-1),
// transposes): one multiplication a row, 16-byte vectors.
template <typename T>
struct EvenRows {
  const T* x;
  int64_t row_stride;
  int64_t count;   // rows
  int64_t length;  // elements a row
  __device__ __forceinline__ const T* row(int64_t r) const { return x + r * row_stride; }
  __device__ __forceinline__ int64_t stride() const { return 1; }
};
// Which elements of a gapped row (geometry.h, ReductionPass::period) are summed, or which
// columns of a gapped inner dim are outputs: element k where k % period < width. 32-bit
// indices (the plan keeps spans under 2^31).
struct GapMask {
  FastDivmod period;     // divisor 1: every element
  unsigned width = 1;
  unsigned pattern = 0;  // periods up to 16: bit t set where t % period < width, t < 32

  GapMask() = default;
  GapMask(int64_t period_, int64_t width_)
      : period(static_cast<unsigned>(period_)), width(static_cast<unsigned>(width_)) {
    for (int64_t t = 0; period_ <= 16 && t < 32; ++t) {
      if (t % period_ < width_) pattern |= 1u << t;
    }
  }
  __device__ __forceinline__ bool gapped() const { return period.divisor > 1; }
  __device__ __forceinline__ bool keeps(unsigned k) const {
    return k - period.div(k) * period.divisor < width;
  }
  // Of a gapped inner dim: element k's place among the kept ones (k kept).
  __device__ __forceinline__ unsigned kept_index(unsigned k) const {
    const unsigned q = period.div(k);
    return q * width + (k - q * period.divisor);
  }
  // Bit j set where element k + j is summed, for j < lanes (at most 16).
  __device__ __forceinline__ unsigned kept(unsigned k, unsigned lanes) const {
    const unsigned p = period.divisor, r = k - period.div(k) * p;  // k's place in its period
    const unsigned all = (1u << lanes) - 1;
    if (p <= 16) return (pattern >> r) & all;
    // Longer periods: at most one period boundary among the lanes, so the kept lanes are
    // those before width - r and those from p - r to p - r + width.
    auto below = [](unsigned n) { return n >= 32 ? ~0u : (1u << n) - 1; };
    unsigned m = r < width ? below(width - r) : 0;
    m |= below(p - r + width) & ~below(p - r);
    return m & all;
  }
};

// The lanes of a 16-byte vector of T whose bit in `kept` is clear, zeroed: as bits, so
// that a NaN or an infinity in a gap is left out, not added as 0 times it.
template <typename T>
__device__ __forceinline__ uint4 keep_lanes(const uint4& v, unsigned kept) {
  constexpr int kLanes = 16 / sizeof(T);
  using Bits = std::conditional_t<
      sizeof(T) == 1, uint8_t,
      std::conditional_t<sizeof(T) == 2, uint16_t,
                         std::conditional_t<sizeof(T) == 4, uint32_t, uint64_t>>>;
  Bits lanes[kLanes];
  memcpy(lanes, &v, sizeof(v));
#pragma unroll
  for (int j = 0; j < kLanes; ++j) lanes[j] = (kept >> j) & 1 ? lanes[j] : Bits{0};
  uint4 out;
  memcpy(&out, lanes, sizeof(out));
  return out;
}

// StridedRows: row r at x + outer.offset(r) (a division per outer dim), its elements
// `element_stride` apart (16-byte vectors when that is 1), or a gapped row's span.
template <typename T>
struct StridedRows {
  const T* x;
  OuterDims outer;
  int64_t count;
  int64_t length;
  int64_t element_stride;
  GapMask gaps{};
  // thread_share: a lane's edge elements loaded with its first vectors, not after them;
  // a gapped row's lanes chosen by one mask a row where every vector holds whole periods.
  bool edges_first = true;
  bool uniform_gaps = true;
  __device__ __forceinline__ const T* row(int64_t r) const { return x + outer.offset(r); }
  __device__ __forceinline__ int64_t stride() const { return element_stride; }
  __device__ __forceinline__ bool gapped() const { return gaps.gapped(); }
};

// How a thread reads 16 bytes of the stream: the data is read once, so it skips L1
// (ld.global.nc.L1::no_allocate). On an H200 this beat a plain load by 2-8% at 2^20 to
// 2^24 elements and matched it at 2^28; asking L2 to fetch 256-byte groups as well
// (.L2::256B) lost 6% at 2^28.
__device__ __forceinline__ uint4 load_streaming(const uint4* p) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 700
  uint4 v;
  asm volatile("ld.global.nc.L1::no_allocate.v4.u32 {%0, %1, %2, %3}, [%4];"
               : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
               : "l"(p));
  return v;
#else
  return __ldg(p);
#endif
}

// Every lane of every vector (add_vectors' filter where the row has no gaps).
struct AllLanes {
  __device__ __forceinline__ const uint4& operator()(const uint4& v, int64_t) const { return v; }
};
// The lanes of body vector i that a gapped row sums (the body starts `head` elements
// into the row).
template <typename T>
struct GapLanes {
  GapMask gaps;
  int64_t head;
  __device__ __forceinline__ uint4 operator()(const uint4& v, int64_t i) const {
    constexpr unsigned kLanes = 16 / sizeof(T);
    return keep_lanes<T>(v, gaps.kept(static_cast<unsigned>(head + i * kLanes), kLanes));
  }
};

// The lanes of every vector of a gapped row whose period divides a vector's lanes
// (x[..., ::2]): each vector starts at the same place in its periods, so one mask a row
// (lanes kept all ones) serves every vector.
struct MaskedLanes {
  uint4 mask;
  __device__ __forceinline__ uint4 operator()(const uint4& v, int64_t) const {
    return {v.x & mask.x, v.y & mask.y, v.z & mask.z, v.w & mask.w};
  }
};

// Thread `first` of `step` threads adds vectors first, first + step, ... of body[0,
// vectors) into sums, each as filter(vector, index) gives it, kUnroll loads in flight
// before the first add. The last round is predicated rather than one load at a time, so
// that it too is in flight at once.
template <int kUnroll, typename Sums, typename Filter = AllLanes>
__device__ __forceinline__ void add_vectors(Sums& sums, const uint4* body, int64_t vectors,
                                            int64_t first, int64_t step, Filter filter = {}) {
  int64_t i = first;
#pragma unroll 1  // kUnroll loads in flight is the policy: no more (registers)
  for (; i + (kUnroll - 1) * step < vectors; i += kUnroll * step) {
    uint4 v[kUnroll];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) v[u] = load_streaming(body + i + u * step);
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) sums.add(filter(v[u], i + u * step));
  }
  uint4 v[kUnroll];
#pragma unroll
  for (int u = 0; u < kUnroll; ++u) {
    v[u] = i + u * step < vectors ? load_streaming(body + i + u * step) : uint4{0, 0, 0, 0};
  }
#pragma unroll
  for (int u = 0; u < kUnroll; ++u) sums.add(filter(v[u], i + u * step));
}

// Thread `first` of `step` threads adds elements first, first + step, ... of
// row[0, n * stride) into sums, scalar loads (a stride other than 1: x[..., ::2], slices
// of a wider tensor), kUnroll in flight before the first add.
template <int kUnroll, typename Sums, typename T>
__device__ __forceinline__ void add_strided(Sums& sums, const T* row, int64_t n, int64_t stride,
                                            int64_t first, int64_t step) {
  using V = typename Sums::value_t;
  int64_t i = first;
#pragma unroll 1
  for (; i + (kUnroll - 1) * step < n; i += kUnroll * step) {
    T v[kUnroll];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) v[u] = row[(i + u * step) * stride];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) sums.add_value(static_cast<V>(v[u]));
  }
  for (; i < n; i += step) sums.add_value(static_cast<V>(row[i * stride]));
}

// Thread `first` of `step` threads: its share of a row, as P::Sum. Contiguous rows are
// read 16 bytes at a time (VectorSpan) into P::Lanes; the scalars of the row's unaligned
// head and tail (k = 0 .. kLanes - 1) go to the threads first, first + step, ...
template <typename P, int kUnroll, typename T, typename Rows>
__device__ __forceinline__ typename P::Sum thread_share(Rows rows, int64_t r, int64_t first,
                                                        int64_t step) {
  using Lanes = typename P::Lanes;
  using V = typename Lanes::value_t;
  constexpr int kLanes = 16 / sizeof(T);
  Lanes sums;
  const T* row = rows.row(r);
  if constexpr (std::is_same_v<Rows, StridedRows<T>>) {
    // Rows of general layout (rows_grouped; rows_split but for even rows) are often a few
    // vectors a lane: a lane's first edge elements (an unaligned row's head and tail) are
    // loaded before its vectors, in flight with them, rather than after them, a second
    // wait on memory a row. Gapped rows: auto sums only (the plan gives exact none).
    const bool gapped = !P::kExact && rows.gapped();
    if (rows.element_stride == 1 || gapped) {
      const VectorSpan<T> span(row, rows.length);
      const int64_t t = span.tail + first;
      bool has_head = false, has_tail = false;
      T head{}, tail{};
      if (rows.edges_first && first < kLanes) {
        has_head = first < span.head && (!gapped || rows.gaps.keeps(first));
        has_tail = t < span.n && (!gapped || rows.gaps.keeps(t));
        if (has_head) head = row[first];
        if (has_tail) tail = row[t];
      }
      if (!gapped) {
        add_vectors<kUnroll>(sums, span.body(), span.vectors, first, step);
      } else if (rows.uniform_gaps && kLanes % rows.gaps.period.divisor == 0) {
        const uint4 ones{~0u, ~0u, ~0u, ~0u};
        const MaskedLanes lanes{
            keep_lanes<T>(ones, rows.gaps.kept(static_cast<unsigned>(span.head), kLanes))};
        add_vectors<kUnroll>(sums, span.body(), span.vectors, first, step, lanes);
      } else {
        add_vectors<kUnroll>(sums, span.body(), span.vectors, first, step,
                             GapLanes<T>{rows.gaps, span.head});
      }
      if (has_head) sums.add_value(static_cast<V>(head));
      if (has_tail) sums.add_value(static_cast<V>(tail));
      for (int64_t k = rows.edges_first ? first + step : first; k < kLanes; k += step) {
        if (k < span.head && (!gapped || rows.gaps.keeps(k)))
          sums.add_value(static_cast<V>(row[k]));
        const int64_t e = span.tail + k;
        if (e < span.n && (!gapped || rows.gaps.keeps(e))) sums.add_value(static_cast<V>(row[e]));
      }
    } else {
      add_strided<2 * kUnroll>(sums, row, rows.length, rows.stride(), first, step);
    }
    return sums.template total<typename P::Sum>();
  }
  if (rows.stride() == 1) {
    const VectorSpan<T> span(row, rows.length);
    add_vectors<kUnroll>(sums, span.body(), span.vectors, first, step);
    for (int64_t k = first; k < kLanes; k += step) {
      span.for_edges(k, [&](T v) { sums.add_value(static_cast<V>(v)); });
    }
  } else {
    add_strided<2 * kUnroll>(sums, row, rows.length, rows.stride(), first, step);
  }
  return sums.template total<typename P::Sum>();
}

// Tuning of rows_split, kept as data; the alternatives were timed side by side on an
// H200 (benchmarks/RESULTS.md). 512 threads x 4 blocks an SM fill Hopper's 2048 thread
// slots, and 4
// independent 16-byte loads a thread keep 32 KiB a block in flight before the first
// add. On an H200, 256 or 1024 threads or 8 loads were within 1% at 2^28 and up to 20%
// slower at 2^16 to 2^20. Blocks interleave (block b reads every gridDim-th tile): one
// contiguous span a block instead cost 2-4% at 2^28, and a grid sized by the input
// rather than by what fits the GPU at once 10-30% from 2^24 up.
struct SplitPolicy {
  static constexpr unsigned kThreads = 512;
  static constexpr int kUnroll = 4;
};

// Output q of policy P from `total` (thread 0's), by a whole block of kThreads: for
// exact sums whose certificate fails, the block recomputes the output together.
template <unsigned kThreads, typename P, typename Out>
__device__ __forceinline__ void store_by_block(const P& policy, Out* y, int64_t q,
                                               const typename P::Sum& total) {
  if constexpr (!P::kExact || std::is_same_v<Out, CertifiedSum>) {
    if (threadIdx.x == 0) policy.store(y, q, total);
  } else {
    using T = typename P::Element;
    __shared__ bool certified;
    if (threadIdx.x == 0) {
      T value;
      certified = exact::certify<T>(P::certificate(total), &value);
      if (certified) y[q] = value;
    }
    __syncthreads();
    if (!certified) {
      const T value = exact_output_by_block<kThreads>(policy.source, q);
      if (threadIdx.x == 0) y[q] = value;
    }
  }
}

// Each row read by `parts` blocks (blockIdx.x = row * parts + part: a block for every
// part of every row, no loop over rows, which cost 8-30 registers), interleaved: thread t
// of part p reads vectors p * kThreads + t, then every parts * kThreads-th. With one part
// a block writes its row's sum; with several, each block leaves its partial in
// partials[blockIdx.x] and takes the row's ticket, and the row's last block adds the
// partials in index order (no float atomics). One row: the full reduction.
template <typename T, typename Out, typename Rows, typename P>
__global__ void __launch_bounds__(SplitPolicy::kThreads)
    rows_split(Rows rows, unsigned parts, Out* __restrict__ y,
               typename P::Sum* __restrict__ partials, unsigned* __restrict__ tickets, P policy) {
  using Sum = typename P::Sum;
  constexpr unsigned kThreads = SplitPolicy::kThreads;
  const unsigned part = blockIdx.x % parts;
  const int64_t row = blockIdx.x / parts;
  Sum total = block_sum<kThreads>(thread_share<P, SplitPolicy::kUnroll, T>(
      rows, row, part * kThreads + threadIdx.x, parts * kThreads));
  if (parts > 1) {
    __shared__ bool is_last;
    if (threadIdx.x == 0) {
      partials[blockIdx.x] = total;
      is_last = is_last_block(tickets + row, parts);
    }
    __syncthreads();  // thread 0's acquire covers the block's reads below
    if (!is_last) return finish_with_tail<kThreads>(policy);
    // The row's partials in index order (deterministic).
    Sum v{};
    for (int64_t b = threadIdx.x; b < parts; b += kThreads)
      v += load_coherent(partials + row * parts + b);
    total = block_sum<kThreads>(v);
    if (threadIdx.x == 0) tickets[row] = 0;  // for the next launch on this stream
  }
  store_by_block<kThreads>(policy, y, row, total);
  finish_with_tail<kThreads>(policy);
}

constexpr unsigned kGroupedThreads = 256;

// `group` lanes (a power of two up to 32) per row, rows taken by groups in turn; each
// lane reads its share of the row with 16-byte vectors when the row is contiguous, 8 in
// flight (with 4, a warp a row reached 2.4 TB/s on 4096 rows of 16 KiB: too few bytes in
// flight per SM), and the group adds the shares in registers.
template <typename T, typename Out, typename P>
__global__ void __launch_bounds__(kGroupedThreads)
    rows_grouped(StridedRows<T> rows, unsigned group, Out* __restrict__ y, P policy) {
  const unsigned lane = threadIdx.x % group;
  const int64_t groups = int64_t{gridDim.x} * kGroupedThreads / group;
  for (int64_t row = (int64_t{blockIdx.x} * kGroupedThreads + threadIdx.x) / group;
       row < rows.count; row += groups) {
    const auto total = group_sum(thread_share<P, 8, T>(rows, row, lane, group), group);
    if (lane == 0) policy.store(y, row, total);
  }
  finish_with_tail<kGroupedThreads>(policy);
}

// The lanes of each aligned group of `group` lanes (a power of two up to 32) of a warp
// summed in registers; every lane of the group gets its group's sum. All 32 lanes must
// call it together (the loops around it are the same for the whole warp).
template <typename A>
__device__ __forceinline__ A sum_over_group(A v, unsigned group) {
#pragma unroll
  for (unsigned offset = 16; offset > 0; offset >>= 1) {
    if (offset < group) v += shfl_xor(v, offset);
  }
  return v;
}

constexpr unsigned kVectorRowsThreads = 512;

// Vector k of the aligned 16-byte vectors that cover a row of `length` elements at `row`
// (rows_vectors, kCovering), its elements outside the row zeroed as bits (a NaN beside
// the row is left out, not added as 0 times it); zeros past the row's last vector. Every
// vector read holds an element of the row: the same sectors as the row's own. A vector
// that reaches outside [begin, end), the data's bytes (the first and last rows'), reads
// the row's elements in it one by one instead.
template <typename T>
__device__ __forceinline__ uint4 covering_vector(const T* row, unsigned k, unsigned length,
                                                 uintptr_t begin, uintptr_t end) {
  constexpr int kLanes = 16 / sizeof(T);
  const uintptr_t address = reinterpret_cast<uintptr_t>(row);
  const int head = static_cast<int>(address % 16) / static_cast<int>(sizeof(T));
  const int first = static_cast<int>(k) * kLanes - head;  // the row's element in lane 0
  if (first >= static_cast<int>(length)) return uint4{0, 0, 0, 0};
  const int low = max(0, -first), high = min(kLanes, static_cast<int>(length) - first);
  const uintptr_t vector = address - address % 16 + 16 * uintptr_t{k};
  if (vector < begin || vector + 16 > end) {
    T lanes[kLanes];
#pragma unroll
    for (int j = 0; j < kLanes; ++j) lanes[j] = j >= low && j < high ? row[first + j] : T(0);
    uint4 v;
    memcpy(&v, lanes, sizeof(v));
    return v;
  }
  const uint4 v = load_streaming(reinterpret_cast<const uint4*>(vector));
  return keep_lanes<T>(v, ((1u << high) - 1) & ~((1u << low) - 1));
}

// Short rows of whole 16-byte vectors, one after the other (row r is vectors [r * V,
// r * V + V) of x, V <= 32): a group of pow2_ceil(V) lanes a row, one vector a lane, so a
// warp reads 512 contiguous bytes; 8 rows a group in flight. kCovering: rows of `length`
// elements `row_stride` apart, any alignment, each read as the up to V aligned vectors
// that cover it (covering_vector; launch_model.cpp says where), the data's bytes ending
// at `end`. Auto sums rows this short in acc_t (AutoSums<T, kShort>). Exact sums keep 4
// rows in flight: with 8 they took 100 registers a thread. Two blocks an SM for both:
// with a minimum of one (and the output order in auto's store), auto's took 96-98
// registers, one block an SM, and the named rows of 8-128 ran 11-33% slower than with 64
// (float32 2^19 x 100: 2454 GB/s, 3454 at two blocks; H200, torch.sum 1365 in both runs).
template <typename T, typename Out, typename P, bool kCovering = false>
__global__ void __launch_bounds__(kVectorRowsThreads, 2)
    rows_vectors(const T* __restrict__ x, int64_t count, unsigned vectors_per_row, unsigned group,
                 bool stores_side_by_side, Out* __restrict__ y, P policy, int64_t row_stride = 0,
                 unsigned length = 0, uintptr_t end = 0) {
  using Sum = typename P::Sum;
  constexpr int kUnroll = P::kExact ? 4 : 8;
  const uint4* v = reinterpret_cast<const uint4*>(x);
  const unsigned lane = threadIdx.x % 32;
  const unsigned lane_in_row = lane % group;
  const int64_t rows_per_warp = 32 / group;
  const int64_t warp = (int64_t{blockIdx.x} * kVectorRowsThreads + threadIdx.x) / 32;
  const int64_t step = int64_t{gridDim.x} * (kVectorRowsThreads / 32) * rows_per_warp;
  const int64_t first_row = warp * rows_per_warp + lane / group;
  for (int64_t base = warp * rows_per_warp; base < count; base += kUnroll * step) {
    uint4 data[kUnroll];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      const int64_t r = first_row + (base - warp * rows_per_warp) + u * step;
      if constexpr (kCovering) {
        data[u] = r < count && lane_in_row < vectors_per_row
                      ? covering_vector(x + r * row_stride, lane_in_row, length,
                                        reinterpret_cast<uintptr_t>(x), end)
                      : uint4{0, 0, 0, 0};
      } else {
        data[u] = r < count && lane_in_row < vectors_per_row
                      ? load_streaming(v + r * vectors_per_row + lane_in_row)
                      : uint4{0, 0, 0, 0};
      }
    }
    const int64_t row0 = first_row + (base - warp * rows_per_warp);
    Sum totals[kUnroll];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      typename P::Lanes lanes;
      if (lane_in_row < vectors_per_row) lanes.add(data[u]);
      totals[u] = sum_over_group(lanes.template total<Sum>(), group);
    }
    // Every lane of a group holds the group's kUnroll sums. An exact row's certificate
    // and rounding cost about as much as its adds and tree, so lane u of the group
    // certifies and stores row u, the kUnroll rows side by side, rather than lane 0 each
    // in turn: 10-13% faster on an H200 (float32 2^19 x 100 over dim -1, 136 -> 118 us;
    // 2^20 x 32 67 -> 59-63; bfloat16 2^20 x 32 41.6 -> 37.2).
    if (P::kExact && stores_side_by_side && group >= kUnroll) {
      Sum mine = totals[0];
#pragma unroll
      for (int u = 1; u < kUnroll; ++u) {
        if (lane_in_row == u) mine = totals[u];
      }
      const int64_t r = row0 + lane_in_row * step;
      if (lane_in_row < kUnroll && r < count) policy.store(y, r, mine);
      continue;
    }
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      const int64_t r = row0 + u * step;
      if (lane_in_row == 0 && r < count) policy.store(y, r, totals[u]);
    }
  }
  finish_with_tail<kVectorRowsThreads>(policy);
}

constexpr unsigned kShortRowThreads = 256;

// Rows of at most kRowSlots elements (2, 4 or 8: the row's length to a power of two), in
// any layout: a lane a row, its elements loaded one by one with ordinary loads, so that
// the sectors a warp's 32 neighbouring rows share come from L1 after the first lane's
// miss. A lane keeps 32 elements in flight (16 of 8 bytes; kShortRowsPerLane rows,
// kShortRowThreads rows apart, so that each load of a warp reads 32 neighbouring rows),
// then adds each row in order and stores it: a warp's stores are adjacent too. Tiles of
// such rows through shared memory (slabs.cuh) spent most of their time on each output's
// index and sum: launch_model.cpp has the measurement.
template <typename T, int kRowSlots>
constexpr int kShortRowsPerLane = (sizeof(T) >= 8 ? 16 : 32) / kRowSlots;  // 32 registers

template <typename T, typename Out, typename P, int kRowSlots>
__global__ void __launch_bounds__(kShortRowThreads)
    rows_short(StridedRows<T> rows, Out* __restrict__ y, P policy) {
  constexpr int kRows = kShortRowsPerLane<T, kRowSlots>;
  const int length = static_cast<int>(rows.length);
  const int64_t stride = rows.element_stride;
  const int64_t rows_a_block = int64_t{kShortRowThreads} * kRows;
  for (int64_t first = blockIdx.x * rows_a_block + threadIdx.x; first < rows.count;
       first += int64_t{gridDim.x} * rows_a_block) {
    T v[kRows][kRowSlots];
#pragma unroll
    for (int k = 0; k < kRows; ++k) {
      const int64_t r = first + k * int64_t{kShortRowThreads};
      const T* row = rows.row(r < rows.count ? r : first);
#pragma unroll
      for (int i = 0; i < kRowSlots; ++i) {
        v[k][i] = r < rows.count && i < length ? row[i * stride] : T(0);
      }
    }
#pragma unroll
    for (int k = 0; k < kRows; ++k) {
      const int64_t r = first + k * int64_t{kShortRowThreads};
      typename P::Acc acc{};
#pragma unroll
      for (int i = 0; i < kRowSlots; ++i) {
        if (i < length) P::add(acc, v[k][i]);
      }
      if (r < rows.count) policy.store(y, r, P::sum_of(acc));
    }
  }
  finish_with_tail<kShortRowThreads>(policy);
}

}  // namespace warpreduce
