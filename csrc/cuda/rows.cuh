// Row reductions (geometry.h: the reduced dim is the innermost one): output r sums
// x[row_offset(r) + i * stride] for i < length. Three kernels, chosen by row length
// (sum_cuda.cu, auto_pass):
//
// - rows_tiled: short rows one after the other in memory. A block copies a tile of
//   whole rows into shared memory with 16-byte loads, whatever the rows' length or
//   alignment, then a group of lanes sums each row there: several rows per warp.
// - rows_grouped: a group of lanes (up to a warp) per row, 16-byte loads within the row:
//   medium rows, and short rows that are not one after the other.
// - rows_split: `parts` blocks per row, finished by the last block of the row: long
//   rows, and a full reduction (one row). One part per row: a block per row.
//
// All of them are memory-bound streaming reads, so everything serves one goal: enough
// bytes in flight to saturate HBM. No float atomics: every sum is added in a fixed order.
#pragma once

#include <cuda/atomic>

#include <cstdint>
#include <type_traits>

#include "../geometry.h"
#include "block_reduce.cuh"

namespace warpreduce {

// What fast_sum combines a thread's lanes, a block's threads and the blocks' partials in.
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
// StridedRows: row r at x + outer.offset(r) (a division per outer dim), its elements
// `element_stride` apart (16-byte vectors when that is 1).
template <typename T>
struct StridedRows {
  const T* x;
  OuterDims outer;
  int64_t count;
  int64_t length;
  int64_t element_stride;
  __device__ __forceinline__ const T* row(int64_t r) const { return x + outer.offset(r); }
  __device__ __forceinline__ int64_t stride() const { return element_stride; }
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

// Thread `first` of `step` threads adds vectors first, first + step, ... of body[0,
// vectors) into sums, kUnroll loads in flight before the first add. The last round is
// predicated rather than one load at a time, so that it too is in flight at once.
template <int kUnroll, typename Sums>
__device__ __forceinline__ void add_vectors(Sums& sums, const uint4* body, int64_t vectors,
                                            int64_t first, int64_t step) {
  int64_t i = first;
#pragma unroll 1  // kUnroll loads in flight is the policy: no more (registers)
  for (; i + (kUnroll - 1) * step < vectors; i += kUnroll * step) {
    uint4 v[kUnroll];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) v[u] = load_streaming(body + i + u * step);
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) sums.add(v[u]);
  }
  uint4 v[kUnroll];
#pragma unroll
  for (int u = 0; u < kUnroll; ++u) {
    v[u] = i + u * step < vectors ? load_streaming(body + i + u * step) : uint4{0, 0, 0, 0};
  }
#pragma unroll
  for (int u = 0; u < kUnroll; ++u) sums.add(v[u]);
}

// Thread `first` of `step` threads: its share of a row, summed in C. Contiguous rows are
// read 16 bytes at a time (VectorSpan) into LaneSums; the scalars of the row's unaligned
// head and tail go to the threads first < kLanes, which must all exist: step >= kLanes,
// or a caller that adds span.edges(k) for the k >= step itself.
template <typename T, int kUnroll, typename C, bool kExact = false, typename Rows>
__device__ __forceinline__ C thread_share(Rows rows, int64_t r, int64_t first, int64_t step) {
  using Sums = LaneSums<T, kExact>;
  using V = typename Sums::value_t;
  constexpr int kLanes = 16 / sizeof(T);
  Sums sums;
  const T* row = rows.row(r);
  if (rows.stride() == 1) {
    const VectorSpan<T> span(row, rows.length);
    add_vectors<kUnroll>(sums, span.body(), span.vectors, first, step);
    if (first < kLanes) sums.add_value(span.template edges<V>(first));
  } else {
    for (int64_t i = first; i < rows.length; i += step)
      sums.add_value(static_cast<V>(row[i * rows.stride()]));
  }
  return sums.template total<C>();
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

// How a block, having stored its partial sum, takes its ticket and learns whether it is
// the last: its partial must be visible before its ticket (release), and the last block
// must see every partial (acquire). One acquire-release atomic does both
// (MEMBAR.ALL.GPU, ATOM, CCTL.IVALL on sm_90); against the classic threadFenceReduction
// form (__threadfence() before the atomic and in the last block, each a sequentially
// consistent MEMBAR.SC.GPU) it took 0.2-0.4 us off a call from 2^20 to 2^24 elements in
// two tuning runs on an H200.
__device__ __forceinline__ bool is_last_block(unsigned* ticket, unsigned blocks) {
  cuda::atomic_ref<unsigned, cuda::thread_scope_device> t(*ticket);
  return t.fetch_add(1u, cuda::memory_order_acq_rel) == blocks - 1;
}

// Sums `parts` blocks' partials[0, parts) in index order (deterministic) into *y, by the
// last block of a split; resets its ticket to 0 for the next launch on this stream.
template <unsigned kThreads, typename C, typename Out>
__device__ __forceinline__ void finish_split(const C* partials, int64_t parts, Out* y,
                                             unsigned* ticket) {
  C v = 0;
  for (int64_t b = threadIdx.x; b < parts; b += kThreads) v += __ldcg(partials + b);
  v = block_sum<kThreads>(v);
  if (threadIdx.x == 0) {
    *y = static_cast<Out>(v);
    *ticket = 0;
  }
}

// Each row read by `parts` blocks (blockIdx.x = row * parts + part: a block for every
// part of every row, no loop over rows, which cost 8-30 registers), interleaved: thread t
// of part p reads vectors p * kThreads + t, then every parts * kThreads-th. With one part
// a block writes its row's sum; with several, each block leaves its partial in
// partials[blockIdx.x] and takes the row's ticket, and the row's last block adds the
// partials in index order (no float atomics). One row: the full reduction.
// kFull: a full reduction (one row), summed with exact float32 lanes (LaneSums).
template <typename T, typename Out, typename Rows, bool kFull, typename P = SplitPolicy>
__global__ void __launch_bounds__(P::kThreads)
    rows_split(Rows rows, unsigned parts, Out* __restrict__ y, combine_t<T>* __restrict__ partials,
               unsigned* __restrict__ tickets) {
  using C = combine_t<T>;
  const unsigned part = blockIdx.x % parts;
  const int64_t row = blockIdx.x / parts;
  const C share = thread_share<T, P::kUnroll, C, kFull>(rows, row, part * P::kThreads + threadIdx.x,
                                                        parts * P::kThreads);
  const C total = block_sum<P::kThreads>(share);
  if (parts == 1) {
    if (threadIdx.x == 0) y[row] = static_cast<Out>(total);
    return;
  }
  __shared__ bool is_last;
  if (threadIdx.x == 0) {
    partials[blockIdx.x] = total;
    is_last = is_last_block(tickets + row, parts);
  }
  __syncthreads();  // thread 0's acquire covers the block's reads below
  if (is_last) finish_split<P::kThreads>(partials + row * parts, parts, y + row, tickets + row);
}

constexpr unsigned kGroupedThreads = 256;

// `group` lanes (a power of two up to 32) per row, rows taken by groups in turn; each
// lane reads its share of the row with 16-byte vectors when the row is contiguous, 8 in
// flight (with 4, a warp a row reached 2.4 TB/s on 4096 rows of 16 KiB: too few bytes in
// flight per SM), and the group adds the shares in registers.
template <typename T, typename Out>
__global__ void __launch_bounds__(kGroupedThreads)
    rows_grouped(StridedRows<T> rows, unsigned group, Out* __restrict__ y) {
  using C = combine_t<T>;
  constexpr unsigned kLanes = 16 / sizeof(T);
  const unsigned lane = threadIdx.x % group;
  const int64_t groups = int64_t{gridDim.x} * kGroupedThreads / group;
  for (int64_t row = (int64_t{blockIdx.x} * kGroupedThreads + threadIdx.x) / group;
       row < rows.count; row += groups) {
    C share = thread_share<T, 8, C>(rows, row, lane, group);
    if (group < kLanes && rows.stride() == 1) {  // groups narrower than a vector
      const VectorSpan<T> span(rows.row(row), rows.length);
      for (unsigned k = lane + group; k < kLanes; k += group) share += span.template edges<C>(k);
    }
    const C total = group_sum(share, group);
    if (lane == 0) y[row] = static_cast<Out>(total);
  }
}

// The lanes of each aligned group of `group` lanes (a power of two up to 32) of a warp
// summed in registers; every lane of the group gets its group's sum. All 32 lanes must
// call it together (the loops around it are the same for the whole warp).
template <typename A>
__device__ __forceinline__ A sum_over_group(A v, unsigned group) {
#pragma unroll
  for (unsigned offset = 16; offset > 0; offset >>= 1) {
    if (offset < group) v += __shfl_xor_sync(kFullMask, v, offset);
  }
  return v;
}

constexpr unsigned kVectorRowsThreads = 512;

// Short rows of whole 16-byte vectors, one after the other (row r is vectors [r * V,
// r * V + V) of x, V <= 32): a group of pow2_ceil(V) lanes a row, one vector a lane, so a
// warp reads 512 contiguous bytes; 8 rows a group in flight. Rows this short are summed
// and combined in acc_t: a float32 row of 8 combined in double spent more time converting
// than reading.
template <typename T, typename Out>
__global__ void __launch_bounds__(kVectorRowsThreads)
    rows_vectors(const T* __restrict__ x, int64_t count, unsigned vectors_per_row, unsigned group,
                 Out* __restrict__ y) {
  using A = acc_t<T>;
  constexpr int kLanes = 16 / sizeof(T);
  constexpr int kUnroll = 8;
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
      data[u] = r < count && lane_in_row < vectors_per_row
                    ? load_streaming(v + r * vectors_per_row + lane_in_row)
                    : uint4{0, 0, 0, 0};
    }
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      A acc[kLanes] = {};
      add_lanes<T>(acc, data[u]);
      const A total = sum_over_group(sum_lanes<A>(acc), group);
      const int64_t r = first_row + (base - warp * rows_per_warp) + u * step;
      if (lane_in_row == 0 && r < count) y[r] = static_cast<Out>(total);
    }
  }
}

constexpr unsigned kTiledThreads = 256;
constexpr int64_t kTileBytes = 16 * 1024;            // 4 16-byte copies a thread
constexpr int64_t kTileStage = kTileBytes / 16 + 1;  // 16-byte slots a stage: a tile + 16 bytes

// 16 bytes from global to shared memory without passing through registers (cp.async,
// sm_80 and later), skipping L1 as load_streaming does.
__device__ __forceinline__ void copy_async(uint4* shared, const uint4* global) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  const unsigned address = static_cast<unsigned>(__cvta_generic_to_shared(shared));
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(address), "l"(global));
#else
  *shared = *global;
#endif
}
__device__ __forceinline__ void copy_async_commit() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile("cp.async.commit_group;");
#endif
}
// Waits until at most `pending` of this thread's committed groups are still in flight.
template <int pending>
__device__ __forceinline__ void copy_async_wait() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile("cp.async.wait_group %0;" ::"n"(pending));
#endif
}

// Short rows one after the other (row r at x + r * length) that are not whole vectors
// (3 floats, 100 bfloat16s) or not aligned. A block streams tiles of rows_per_tile whole
// rows into shared memory, two stages deep: the next tile's 16-byte copies are in flight
// (cp.async) while `group` lanes sum each row of the current one. Copying and
// summing in turn left a block's loads idle while it summed (59-64% of a full sum's
// speed on rows of 3 floats and 100 bfloat16s), and a warp a row spent ~110
// instructions a row on 100 bfloat16s (ncu: 115 M for 2^20 rows); a thread a row adds
// an element per instruction for 32 rows at once. A tile is placed at the same offset
// from a 16-byte boundary as its source, so the copies land aligned. Combined in acc_t,
// as rows_vectors.
template <typename T, typename Out>
__global__ void __launch_bounds__(kTiledThreads)
    rows_tiled(const T* __restrict__ x, int64_t count, int64_t length, int64_t rows_per_tile,
               unsigned group, Out* __restrict__ y) {
  using A = acc_t<T>;
  constexpr int kLanes = 16 / sizeof(T);
  extern __shared__ uint4 shared_vectors[];  // 2 stages of kTileStage
  const int64_t tiles = (count + rows_per_tile - 1) / rows_per_tile;
  const int len = static_cast<int>(length);
  const int lane_in_row = static_cast<int>(threadIdx.x % group);
  const int rows_per_pass = static_cast<int>(kTiledThreads / group);

  auto rows_of = [&](int64_t t) {
    return static_cast<int>(min(rows_per_tile, count - t * rows_per_tile));
  };
  auto span_of = [&](int64_t t) {
    return VectorSpan<T>(x + t * rows_per_tile * length, rows_of(t) * length);
  };
  auto tile_in = [&](int stage, const VectorSpan<T>& span) {
    return reinterpret_cast<T*>(shared_vectors + stage * kTileStage) +
           (kLanes - span.head) % kLanes;
  };
  // Starts copying tile t into `stage`: the vectors asynchronously; the few scalars of
  // its unaligned ends are loaded into registers now and stored by finish() after the
  // current tile is summed (stored at once, each such thread waited a DRAM latency a
  // tile and the block with it: 56% of a full sum's speed on rows of 3 floats).
  struct Scalars {
    T head, tail;
    T* head_to = nullptr;
    T* tail_to = nullptr;
    __device__ __forceinline__ void finish() const {
      if (head_to) *head_to = head;
      if (tail_to) *tail_to = tail;
    }
  };
  auto start_copy = [&](int64_t t, int stage) {
    Scalars scalars;
    if (t < tiles) {
      const VectorSpan<T> span = span_of(t);
      uint4* body = shared_vectors + stage * kTileStage + (span.head > 0 ? 1 : 0);
      for (int64_t j = threadIdx.x; j < span.vectors; j += kTiledThreads)
        copy_async(body + j, span.body() + j);
      T* tile = tile_in(stage, span);
      if (threadIdx.x < span.head) {
        scalars.head = span.x[threadIdx.x];
        scalars.head_to = tile + threadIdx.x;
      }
      if (threadIdx.x < span.n - span.tail) {
        scalars.tail = span.x[span.tail + threadIdx.x];
        scalars.tail_to = tile + span.tail + threadIdx.x;
      }
    }
    copy_async_commit();  // an empty group past the last tile keeps the count in step
    return scalars;
  };

  start_copy(blockIdx.x, 0).finish();
  int stage = 0;
  for (int64_t t = blockIdx.x; t < tiles; t += gridDim.x, stage ^= 1) {
    const Scalars next = start_copy(t + gridDim.x, stage ^ 1);
    copy_async_wait<1>();  // this thread's copies of tile t have landed...
    __syncthreads();       // ... and everyone's
    const T* tile = tile_in(stage, span_of(t));
    const int tile_rows = rows_of(t);
    const int64_t first_row = t * rows_per_tile;
    // Every warp runs the same passes (a group's shuffles need all 32 lanes).
    for (int pass = 0; pass * rows_per_pass < tile_rows; ++pass) {
      const int r = pass * rows_per_pass + static_cast<int>(threadIdx.x / group);
      // Four independent sums: one chain of dependent adds and shared-memory loads made a
      // row of 100 a thread as slow as copying the tile.
      A acc[4] = {0, 0, 0, 0};
      if (r < tile_rows) {
        const T* row = tile + r * len;
        int i = lane_in_row;
        for (; i + 3 * static_cast<int>(group) < len; i += 4 * group) {
#pragma unroll
          for (int k = 0; k < 4; ++k) acc[k] += static_cast<A>(row[i + k * group]);
        }
        for (; i < len; i += group) acc[0] += static_cast<A>(row[i]);
      }
      const A sum = sum_over_group((acc[0] + acc[1]) + (acc[2] + acc[3]), group);
      if (lane_in_row == 0 && r < tile_rows) y[first_row + r] = static_cast<Out>(sum);
    }
    next.finish();
    __syncthreads();  // the next iteration copies into the other stage, the one after into this
  }
  copy_async_wait<0>();
}

}  // namespace warpreduce
