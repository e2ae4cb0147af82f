// The staged reduction kernels: the classic optimisation sequence (Harris, "Optimizing
// Parallel Reduction in CUDA"), one idea per stage. They are for learning, so they keep
// its picture: contiguous rows. Each kernel reduces part of one row and writes one
// partial sum per block (see block_reduce.cuh); any length works, any input dtype T,
// accumulating in acc_t<T> and writing Out. A reduction whose geometry is not one pass
// of packed rows (geometry.h: columns, sliced or expanded inputs) reaches them as a copy
// in row order (SumPlan::rows).
//
// Each stage is written out whole, repeating the lines it shares with the stage before
// (the repetition is deliberate): a reader can take any one stage and see all it does.
//
// Every stage runs kStageThreads threads a block, so the benchmark compares ideas, not
// block sizes. Each stage struct says how many elements a thread reads before the tree
// (items_per_thread; 0 = a grid-stride loop over as many as the row holds).
#pragma once

#include "block_reduce.cuh"

namespace warpreduce {

constexpr unsigned kStageThreads = 256;

// Stages 1 to 3 load one element a thread.
template <typename A, typename T>
__device__ __forceinline__ A load_one(const T* x, int64_t n, int64_t part) {
  return load_or_zero<A>(x, part * blockDim.x + threadIdx.x, n);
}

// 1. Interleaved addressing with divergent branching: the threads that work at each step
//    are tid % (2*stride) == 0, scattered over every warp, and % is slow.
template <typename T, typename Out>
__global__ void __launch_bounds__(kStageThreads)
    interleaved_divergent(const T* x, Out* y, int64_t n, int64_t parts) {
  using A = acc_t<T>;
  __shared__ A s[kStageThreads];
  const auto [segment, part] = block_in_segment(parts);
  const unsigned tid = threadIdx.x;
  s[tid] = load_one<A>(x + segment * n, n, part);
  __syncthreads();
  for (unsigned stride = 1; stride < blockDim.x; stride *= 2) {
    if (tid % (2 * stride) == 0) s[tid] += s[tid + stride];
    __syncthreads();
  }
  store_block_total(y, s[0]);
}

// 2. Interleaved addressing with a strided index: the working threads are the first
//    ones (no divergence), but thread tid touches word 2*stride*tid, so the threads of a
//    warp hit the same shared-memory banks (conflicts grow with the stride).
template <typename T, typename Out>
__global__ void __launch_bounds__(kStageThreads)
    interleaved_bank_conflicts(const T* x, Out* y, int64_t n, int64_t parts) {
  using A = acc_t<T>;
  __shared__ A s[kStageThreads];
  const auto [segment, part] = block_in_segment(parts);
  const unsigned tid = threadIdx.x;
  s[tid] = load_one<A>(x + segment * n, n, part);
  __syncthreads();
  for (unsigned stride = 1; stride < blockDim.x; stride *= 2) {
    const unsigned index = 2 * stride * tid;
    if (index < blockDim.x) s[index] += s[index + stride];
    __syncthreads();
  }
  store_block_total(y, s[0]);
}

// 3. Sequential addressing: the stride halves from blockDim/2, so active threads and the
//    words they touch are contiguous: no divergence, no bank conflicts. Half the threads
//    idle from the first step on.
template <typename T, typename Out>
__global__ void __launch_bounds__(kStageThreads)
    sequential_addressing(const T* x, Out* y, int64_t n, int64_t parts) {
  using A = acc_t<T>;
  __shared__ A s[kStageThreads];
  const auto [segment, part] = block_in_segment(parts);
  const unsigned tid = threadIdx.x;
  s[tid] = load_one<A>(x + segment * n, n, part);
  __syncthreads();
  tree_sequential(s, tid, 0);
  store_block_total(y, s[0]);
}

// Stages 4 to 6 load two elements a thread, blockDim apart, and add them on the way in.
template <typename A, typename T>
__device__ __forceinline__ A load_two(const T* x, int64_t n, int64_t part) {
  const int64_t i = part * 2 * blockDim.x + threadIdx.x;
  return load_or_zero<A>(x, i, n) + load_or_zero<A>(x, i + blockDim.x, n);
}

// 4. First add during load: no thread idles at the first step, and half as many blocks
//    (and tree passes) cover the input.
template <typename T, typename Out>
__global__ void __launch_bounds__(kStageThreads)
    first_add_during_load(const T* x, Out* y, int64_t n, int64_t parts) {
  using A = acc_t<T>;
  __shared__ A s[kStageThreads];
  const auto [segment, part] = block_in_segment(parts);
  const unsigned tid = threadIdx.x;
  s[tid] = load_two<A>(x + segment * n, n, part);
  __syncthreads();
  tree_sequential(s, tid, 0);
  store_block_total(y, s[0]);
}

// 5. Unroll the last warp: the loop stops at 64 values and one warp finishes with six
//    straight-line steps: no __syncthreads, no branch, no loop control for them.
template <typename T, typename Out>
__global__ void __launch_bounds__(kStageThreads)
    unroll_last_warp(const T* x, Out* y, int64_t n, int64_t parts) {
  using A = acc_t<T>;
  __shared__ A s[kStageThreads];
  const auto [segment, part] = block_in_segment(parts);
  const unsigned tid = threadIdx.x;
  s[tid] = load_two<A>(x + segment * n, n, part);
  __syncthreads();
  tree_sequential(s, tid, 32);
  if (tid < 32) store_block_total(y, last_warp_unrolled(s, tid));
}

// 6. Complete unroll: the block size is a template parameter, so every level of the tree
//    is unrolled at compile time and the loop disappears.
template <typename T, typename Out, unsigned kBlock = kStageThreads>
__global__ void __launch_bounds__(kBlock)
    complete_unroll(const T* x, Out* y, int64_t n, int64_t parts) {
  using A = acc_t<T>;
  __shared__ A s[kBlock];
  const auto [segment, part] = block_in_segment(parts);
  const unsigned tid = threadIdx.x;
  s[tid] = load_two<A>(x + segment * n, n, part);
  __syncthreads();
  store_block_total(y, tree_unrolled<kBlock>(s, tid));
}

// Stages 7 and 8: a grid-stride loop, each thread adding pairs blockDim apart until the
// row is done, `parts` blocks sharing the row.
template <typename A, typename T>
__device__ __forceinline__ A load_grid_stride(const T* x, int64_t n, int64_t part, int64_t parts) {
  A sum = 0;
  const int64_t stride = parts * 2 * blockDim.x;
  for (int64_t i = part * 2 * blockDim.x + threadIdx.x; i < n; i += stride) {
    sum += static_cast<A>(x[i]) + load_or_zero<A>(x, i + blockDim.x, n);
  }
  return sum;
}

// 7. Multiple elements per thread (Brent's theorem): the grid is sized from the SM
//    count, not the input, so each thread does many cheap serial adds and the tree with
//    its barriers runs once per block instead of once per 512 elements.
template <typename T, typename Out, unsigned kBlock = kStageThreads>
__global__ void __launch_bounds__(kBlock)
    multiple_elements(const T* x, Out* y, int64_t n, int64_t parts) {
  using A = acc_t<T>;
  __shared__ A s[kBlock];
  const auto [segment, part] = block_in_segment(parts);
  const unsigned tid = threadIdx.x;
  s[tid] = load_grid_stride<A>(x + segment * n, n, part, parts);
  __syncthreads();
  store_block_total(y, tree_unrolled<kBlock>(s, tid));
}

// 8. Warp shuffle: the tree runs in registers with __shfl_down_sync inside each warp;
//    shared memory holds one value per warp and the block needs one barrier.
template <typename T, typename Out, unsigned kBlock = kStageThreads>
__global__ void __launch_bounds__(kBlock)
    warp_shuffle(const T* x, Out* y, int64_t n, int64_t parts) {
  using A = acc_t<T>;
  const auto [segment, part] = block_in_segment(parts);
  store_block_total(y, block_sum<kBlock>(load_grid_stride<A>(x + segment * n, n, part, parts)));
}

// The stages as types, for the launch table: the kernel and how much a thread reads.
#define WARPREDUCE_STAGE(NAME, ITEMS_PER_THREAD)              \
  struct NAME##_stage {                                       \
    static constexpr int items_per_thread = ITEMS_PER_THREAD; \
    template <typename T, typename Out>                       \
    static constexpr auto kernel = NAME<T, Out>;              \
  }

WARPREDUCE_STAGE(interleaved_divergent, 1);
WARPREDUCE_STAGE(interleaved_bank_conflicts, 1);
WARPREDUCE_STAGE(sequential_addressing, 1);
WARPREDUCE_STAGE(first_add_during_load, 2);
WARPREDUCE_STAGE(unroll_last_warp, 2);
WARPREDUCE_STAGE(complete_unroll, 2);
WARPREDUCE_STAGE(multiple_elements, 0);
WARPREDUCE_STAGE(warp_shuffle, 0);
#undef WARPREDUCE_STAGE

}  // namespace warpreduce
