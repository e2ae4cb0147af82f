// Short slabs through shared memory (launch_model.h: "slabs"). A slab is the memory an
// output's elements span in a pass (geometry.h): output (o, i) sums
// x[outer.offset(o) + r * reduced_stride + i * inner_stride] over r < length, and slab o
// is the span from its first element to its last, holding the inner extent's outputs.
// When slabs are short (a row of a few elements, a few rows of a few columns) and lie
// close together along the innermost outer dim, a block copies tiles of whole slabs into
// shared memory with 16-byte copies, whatever the data's alignment, strides and steps
// (the memory between slabs and the skipped elements of a stepped view ride along: DRAM
// reads whole 32-byte sectors anyway), then `group` lanes sum each output there.
//
// This is the generalisation of the earlier rows_tiled kernel (rows one after the other)
// to any pass with short slabs: small reduced extents in the middle of a tensor, small
// inner extents, unaligned views, x[..., ::2]. Two stages deep: the next tile's copies
// are in flight (cp.async) while the block sums the current one. Copying and summing in
// turn left a block's loads idle while it summed (59-64% of a full sum's speed on rows of
// 3 floats and 100 bfloat16s, H200); a thread an output adds an element per instruction
// for 32 outputs at once, where a warp a row spent ~110 instructions a row on 100
// bfloat16s (ncu).
#pragma once

#include "accumulate.cuh"
#include "rows.cuh"

namespace warpreduce {

constexpr unsigned kSlabThreads = 256;
constexpr int64_t kSlabTileBytes = 16 * 1024;            // 4 16-byte copies a thread
constexpr int64_t kSlabStage = kSlabTileBytes / 16 + 1;  // 16-byte slots a stage: + 16 bytes

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

// The slabs of a pass as the kernel walks them: tiles of up to per_tile consecutive slabs
// of one run (the innermost outer dim: `run` slabs, `stride` apart).
template <typename T>
struct Slabs {
  const T* x;
  OuterDims outer;
  int64_t outer_size;  // slabs
  int64_t run;         // slabs a run holds (outer_size is a multiple)
  int64_t stride;      // between consecutive slabs of a run
  int64_t span;        // elements a slab spans
  int64_t length, reduced_stride, inner, inner_stride;
  int64_t per_tile;
  int64_t tiles_per_run;

  __device__ __forceinline__ int64_t tiles() const { return outer_size / run * tiles_per_run; }
  // Tile t: its first slab and how many slabs it holds.
  __device__ __forceinline__ int64_t first_slab(int64_t t) const {
    return t / tiles_per_run * run + t % tiles_per_run * per_tile;
  }
  __device__ __forceinline__ int slabs_in(int64_t t) const {
    return static_cast<int>(min(per_tile, run - t % tiles_per_run * per_tile));
  }
  __device__ __forceinline__ VectorSpan<T> memory_of(int64_t t) const {
    return VectorSpan<T>(x + outer.offset(first_slab(t)), (slabs_in(t) - 1) * stride + span);
  }
};

template <typename T, typename Out, typename P>
__global__ void __launch_bounds__(kSlabThreads)
    slabs_tiled(Slabs<T> s, unsigned group, Out* __restrict__ y, P policy) {
  using Acc = typename P::Acc;
  using Sum = typename P::Sum;
  constexpr int kLanes = 16 / sizeof(T);
  extern __shared__ uint4 shared_vectors[];  // 2 stages of kSlabStage
  const int64_t tiles = s.tiles();
  const int lane_in_group = static_cast<int>(threadIdx.x % group);
  const int outputs_per_pass = static_cast<int>(kSlabThreads / group);
  const int length = static_cast<int>(s.length), inner = static_cast<int>(s.inner);
  const int reduced_stride = static_cast<int>(s.reduced_stride);
  const int inner_stride = static_cast<int>(s.inner_stride);
  const int stride = static_cast<int>(s.stride);

  auto tile_in = [&](int stage, const VectorSpan<T>& span) {
    return reinterpret_cast<T*>(shared_vectors + stage * kSlabStage) + (kLanes - span.head) % kLanes;
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
      const VectorSpan<T> span = s.memory_of(t);
      uint4* body = shared_vectors + stage * kSlabStage + (span.head > 0 ? 1 : 0);
      for (int64_t j = threadIdx.x; j < span.vectors; j += kSlabThreads)
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
    const T* tile = tile_in(stage, s.memory_of(t));
    const int outputs = s.slabs_in(t) * inner;
    const int64_t first_output = s.first_slab(t) * s.inner;
    // Every warp runs the same passes (a group's shuffles need all 32 lanes).
    for (int pass = 0; pass * outputs_per_pass < outputs; ++pass) {
      const int u = pass * outputs_per_pass + static_cast<int>(threadIdx.x / group);
      // Four independent sums: one chain of dependent adds and shared-memory loads made a
      // row of 100 a thread as slow as copying the tile.
      Acc acc[4] = {};
      if (u < outputs) {
        const T* first = tile + (u / inner) * stride + (u % inner) * inner_stride;
        const int step = static_cast<int>(group) * reduced_stride;
        int r = lane_in_group;
        const T* e = first + r * reduced_stride;
        for (; r + 3 * static_cast<int>(group) < length; r += 4 * group, e += 4 * step) {
#pragma unroll
          for (int k = 0; k < 4; ++k) P::add(acc[k], e[k * step]);
        }
        for (; r < length; r += group, e += step) P::add(acc[0], *e);
      }
      const Sum sum = sum_over_group(
          (P::sum_of(acc[0]) + P::sum_of(acc[1])) + (P::sum_of(acc[2]) + P::sum_of(acc[3])), group);
      if (lane_in_group == 0 && u < outputs) policy.store(y, first_output + u, sum);
    }
    next.finish();
    __syncthreads();  // the next iteration copies into the other stage, the one after into this
  }
  copy_async_wait<0>();
}

}  // namespace warpreduce
