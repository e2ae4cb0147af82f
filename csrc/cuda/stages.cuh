// The staged reduction kernels: the classic optimisation sequence (Harris, "Optimizing
// Parallel Reduction in CUDA"), one idea per stage. They are for learning, so they keep
// its picture: contiguous rows. Each kernel reduces part of one row and writes one
// partial sum per block (see block_reduce.cuh); any length works, any input dtype T,
// accumulating in acc_t<T> and writing Out. A reduction whose geometry is not one pass
// of packed rows (geometry.h: columns, sliced or expanded inputs) reaches them as a copy
// in row order (SumPlan::rows).
//
// Every stage runs the same scaffold (stage_kernel): a block loads its share of a row
// into shared memory, one value a thread, reduces them, and thread 0 writes the block's
// total. A stage is the two things that change: how a thread loads (load) and how the
// block reduces (reduce), each written out in the stage's struct, after a comment that
// says the idea and the cost it removes.
//
// Every stage runs kStageThreads threads a block, so the benchmark compares ideas, not
// block sizes. Each stage struct says how many elements a thread reads before the tree
// (items_per_thread; 0 = a grid-stride loop over as many as the row holds).
#pragma once

#include "block_reduce.cuh"

namespace warpreduce {

constexpr unsigned kStageThreads = 256;

// The scaffold every stage runs: Stage::load gives the thread's value, Stage::reduce the
// block's total (in thread 0).
template <typename Stage, typename T, typename Out>
__global__ void __launch_bounds__(kStageThreads)
    stage_kernel(const T* x, Out* y, int64_t n, int64_t parts) {
  using A = acc_t<T>;
  __shared__ A s[kStageThreads];
  const auto [segment, part] = block_in_segment(parts);
  s[threadIdx.x] = Stage::template load<A>(x + segment * n, n, part, parts);
  __syncthreads();
  store_block_total(y, Stage::template reduce<kStageThreads>(s, threadIdx.x));
}

// Stages 1 to 3 load one element a thread.
struct load_one {
  static constexpr int items_per_thread = 1;
  template <typename A, typename T>
  __device__ __forceinline__ static A load(const T* x, int64_t n, int64_t part, int64_t) {
    return load_or_zero<A>(x, part * blockDim.x + threadIdx.x, n);
  }
};

// 1. Interleaved addressing with divergent branching: the threads that work at each step
//    are tid % (2*stride) == 0, scattered over every warp, and % is slow. Stages 1 to 5
//    loop to blockDim.x, known only at run time, as the original kernels do: with the
//    block size a compile-time constant (stage 6's idea) the compiler unrolls the loop
//    and turns % into a mask, and stage 1 ran faster than stage 2 (H100: 104.7 against
//    128.9 us on 2^24 int32).
struct interleaved_divergent_stage : load_one {
  template <unsigned kBlock, typename A>
  __device__ __forceinline__ static A reduce(A* s, unsigned tid) {
    for (unsigned stride = 1; stride < blockDim.x; stride *= 2) {
      if (tid % (2 * stride) == 0) s[tid] += s[tid + stride];
      __syncthreads();
    }
    return s[0];
  }
};

// 2. Interleaved addressing with a strided index: the working threads are the first
//    ones (no divergence), but thread tid touches word 2*stride*tid, so the threads of a
//    warp hit the same shared-memory banks (conflicts grow with the stride).
struct interleaved_bank_conflicts_stage : load_one {
  template <unsigned kBlock, typename A>
  __device__ __forceinline__ static A reduce(A* s, unsigned tid) {
    for (unsigned stride = 1; stride < blockDim.x; stride *= 2) {
      const unsigned index = 2 * stride * tid;
      if (index < blockDim.x) s[index] += s[index + stride];
      __syncthreads();
    }
    return s[0];
  }
};

// 3. Sequential addressing: the stride halves from blockDim/2, so active threads and the
//    words they touch are contiguous: no divergence, no bank conflicts. Half the threads
//    idle from the first step on.
struct sequential_addressing_stage : load_one {
  template <unsigned kBlock, typename A>
  __device__ __forceinline__ static A reduce(A* s, unsigned tid) {
    tree_sequential(s, tid, 0);
    return s[0];
  }
};

// Stages 4 to 6 load two elements a thread, blockDim apart, and add them on the way in.
struct load_two {
  static constexpr int items_per_thread = 2;
  template <typename A, typename T>
  __device__ __forceinline__ static A load(const T* x, int64_t n, int64_t part, int64_t) {
    const int64_t i = part * 2 * blockDim.x + threadIdx.x;
    return load_or_zero<A>(x, i, n) + load_or_zero<A>(x, i + blockDim.x, n);
  }
};

// 4. First add during load: no thread idles at the first step, and half as many blocks
//    (and tree passes) cover the input.
struct first_add_during_load_stage : load_two {
  template <unsigned kBlock, typename A>
  __device__ __forceinline__ static A reduce(A* s, unsigned tid) {
    tree_sequential(s, tid, 0);
    return s[0];
  }
};

// 5. Unroll the last warp: the loop stops at 64 values and one warp finishes with six
//    straight-line steps: no __syncthreads, no branch, no loop control for them.
struct unroll_last_warp_stage : load_two {
  template <unsigned kBlock, typename A>
  __device__ __forceinline__ static A reduce(A* s, unsigned tid) {
    tree_sequential(s, tid, 32);
    return tid < 32 ? last_warp_unrolled(s, tid) : A(0);
  }
};

// 6. Complete unroll: the block size is a template parameter, so every level of the tree
//    is unrolled at compile time and the loop disappears.
struct complete_unroll_stage : load_two {
  template <unsigned kBlock, typename A>
  __device__ __forceinline__ static A reduce(A* s, unsigned tid) {
    return tree_unrolled<kBlock>(s, tid);
  }
};

// Stages 7 and 8: a grid-stride loop, each thread adding pairs blockDim apart until the
// row is done, `parts` blocks sharing the row.
struct load_grid_stride {
  static constexpr int items_per_thread = 0;  // as many as the row holds
  template <typename A, typename T>
  __device__ __forceinline__ static A load(const T* x, int64_t n, int64_t part, int64_t parts) {
    A sum = 0;
    const int64_t stride = parts * 2 * blockDim.x;
    for (int64_t i = part * 2 * blockDim.x + threadIdx.x; i < n; i += stride) {
      sum += static_cast<A>(x[i]) + load_or_zero<A>(x, i + blockDim.x, n);
    }
    return sum;
  }
};

// 7. Multiple elements per thread (Brent's theorem): the grid is sized from the SM
//    count, not the input, so each thread does many cheap serial adds and the tree with
//    its barriers runs once per block instead of once per 512 elements.
struct multiple_elements_stage : load_grid_stride {
  template <unsigned kBlock, typename A>
  __device__ __forceinline__ static A reduce(A* s, unsigned tid) {
    return tree_unrolled<kBlock>(s, tid);
  }
};

// 8. Warp shuffle: the tree runs in registers with __shfl_down_sync inside each warp;
//    shared memory holds one value per warp and the block needs one barrier. (Through
//    the scaffold each thread's value passes shared memory once first, which costs
//    nothing next to the loads.)
struct warp_shuffle_stage : load_grid_stride {
  template <unsigned kBlock, typename A>
  __device__ __forceinline__ static A reduce(A* s, unsigned tid) {
    return block_sum<kBlock>(s[tid]);
  }
};

}  // namespace warpreduce
