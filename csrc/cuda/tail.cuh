// The last pass of a two-pass auto sum, run inside the first pass's launch (the launch
// model's choose_tail says when): every block of the first kernel stores its outputs (the
// partial sums the last pass reads), then takes a ticket of the whole grid, and the block
// that takes the last one sums the last pass from L2 and writes the result. A launch
// less, which is what a small input's call is bound by: a launch costs about 5 us of host
// time on the H200 machines, and an input of 8-30 MiB takes 3-10 us to read.
//
// A kernel runs a tail when its policy carries one (WithTail); every kernel that a first
// pass may launch calls finish_with_tail at its end, on every path, with all its threads.
// Without a tail that is no code at all: the kernels of every other sum are unchanged.
#pragma once

#include <cuda/atomic>

#include <cstdint>
#include <type_traits>

#include "../geometry.h"
#include "accumulate.cuh"

namespace warpreduce {

// How a block, having stored its partial sum, takes its ticket and learns whether it is
// the last: its partial must be visible before its ticket (release), and the last block
// must see every partial (acquire). One acquire-release atomic does both
// (MEMBAR.ALL.GPU, ATOM, CCTL.IVALL on sm_90); against the classic threadFenceReduction
// form (__threadfence() before the atomic and in the last block, each a sequentially
// consistent MEMBAR.SC.GPU) it took 0.2-0.4 us off a call from 2^20 to 2^24 elements in
// two tuning runs on an H200. The block's other threads' stores are ordered before it by
// a __syncthreads() (the release is cumulative).
__device__ __forceinline__ bool is_last_block(unsigned* ticket, unsigned blocks) {
  cuda::atomic_ref<unsigned, cuda::thread_scope_device> t(*ticket);
  return t.fetch_add(1u, cuda::memory_order_acq_rel) == blocks - 1;
}

// The last pass ([outer..., reduced, inner] over the first pass's outputs, contiguous
// scratch), as the last block runs it: `group` lanes an output (a power of two up to 32),
// or, with group 0, the whole block an output, each lane adding every group-th carry in
// order (the same order whichever block is last: the same bits every run).
template <typename Carry, typename Out>
struct TailPass {
  const Carry* x;  // the first pass's outputs
  OuterDims outer;
  int64_t outputs, length, reduced_stride, inner, inner_stride;
  unsigned group;
  Out* y;
  unsigned* ticket;        // the grid's, 0 between launches (split_scratch)
  AutoSums<Carry> policy;  // the last pass's repeat and output order
};

// Policy P (auto's, of the first pass) with the tail its kernel runs at the end.
template <typename P, typename Tail>
struct WithTail : P {
  using Short = WithTail<typename P::Short, Tail>;
  using Full = WithTail<typename P::Full, Tail>;
  Tail tail;
};

template <typename P>
constexpr bool has_tail_v = false;
template <typename P, typename Tail>
constexpr bool has_tail_v<WithTail<P, Tail>> = true;

// The tail by the last block of kThreads threads, after all of them are done storing.
template <unsigned kThreads, typename Carry, typename Out>
__device__ __forceinline__ void run_tail_if_last(const TailPass<Carry, Out>& t) {
  using P = AutoSums<Carry>;
  __shared__ bool is_last;
  __syncthreads();  // the block's outputs are stored before thread 0 releases them
  if (threadIdx.x == 0) is_last = is_last_block(t.ticket, gridDim.x * gridDim.y * gridDim.z);
  __syncthreads();  // thread 0's acquire covers the block's reads below
  if (!is_last) return;
  auto first_of = [&](int64_t q) {
    return t.x + t.outer.offset(q / t.inner) + (q % t.inner) * t.inner_stride;
  };
  if (t.group == 0) {
    for (int64_t q = 0; q < t.outputs; ++q) {
      const Carry* first = first_of(q);
      typename P::Acc acc{};
#pragma unroll 4
      for (int64_t r = threadIdx.x; r < t.length; r += kThreads)
        P::add(acc, load_coherent(first + r * t.reduced_stride));
      const typename P::Sum total = block_sum<kThreads>(P::sum_of(acc));
      if (threadIdx.x == 0) t.policy.store(t.y, q, total);
      __syncthreads();  // block_sum's shared memory, again
    }
  } else {
    const unsigned lane = threadIdx.x % t.group;
    for (int64_t q = threadIdx.x / t.group; q < t.outputs; q += kThreads / t.group) {
      const Carry* first = first_of(q);
      typename P::Acc acc{};
#pragma unroll 4
      for (int64_t r = lane; r < t.length; r += t.group)
        P::add(acc, load_coherent(first + r * t.reduced_stride));
      const typename P::Sum total = group_sum(P::sum_of(acc), t.group);
      if (lane == 0) t.policy.store(t.y, q, total);
    }
  }
  if (threadIdx.x == 0) *t.ticket = 0;  // for the next launch on this stream
}

// At the end of every kernel a first pass may launch, by all its threads: the tail, where
// the policy carries one.
template <unsigned kThreads, typename P>
__device__ __forceinline__ void finish_with_tail(const P& policy) {
  if constexpr (has_tail_v<P>) run_tail_if_last<kThreads>(policy.tail);
}

}  // namespace warpreduce
