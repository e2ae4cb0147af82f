// The passes after the first of an auto sum, run inside the first pass's launch (the
// launch model's choose_tail says when): every block of the first kernel stores its
// outputs (the partial sums the next pass reads), then takes a ticket of the whole grid,
// and the blocks that take the last tickets sum the rest from L2 and write the result: the
// last pass of two shared by up to TailLaunch::kMaxBlocks blocks, or the short passes of
// a longer plan one after the other by the last block. Launches less, which is what a
// small input's call is bound by: a launch costs about 5 us of host time on the H200
// machines, and an input of 8-30 MiB takes 3-10 us to read.
//
// A kernel runs a tail when its policy carries one (WithTail); every kernel that a first
// pass may launch calls finish_with_tail at its end, on every path, with all its threads.
// Without a tail that is no code at all: the kernels of every other sum are unchanged.
#pragma once

#include <cuda/atomic>

#include <cstdint>
#include <type_traits>

#include "../geometry.h"
#include "../launch_model.h"
#include "accumulate.cuh"

namespace warpreduce {

// How a block, having stored its partial sum, takes its ticket (the tickets taken before
// it) and learns whether it is the last: its partial must be visible before its ticket
// (release), and the last block must see every partial (acquire). One acquire-release
// atomic does both (MEMBAR.ALL.GPU, ATOM, CCTL.IVALL on sm_90); against the classic
// threadFenceReduction form (__threadfence() before the atomic and in the last block, each
// a sequentially consistent MEMBAR.SC.GPU) it took 0.2-0.4 us off a call from 2^20 to 2^24
// elements in two tuning runs on an H200. The block's other threads' stores are ordered
// before it by a __syncthreads() (the release is cumulative).
__device__ __forceinline__ unsigned take_ticket(unsigned* ticket) {
  cuda::atomic_ref<unsigned, cuda::thread_scope_device> t(*ticket);
  return t.fetch_add(1u, cuda::memory_order_acq_rel);
}

__device__ __forceinline__ bool is_last_block(unsigned* ticket, unsigned blocks) {
  return take_ticket(ticket) == blocks - 1;
}

// One pass over carries ([outer..., reduced, inner], contiguous scratch), as the tail's
// blocks run it: `group` lanes an output (a power of two up to 32), or, with group 0, the
// whole block an output, each lane adding every group-th carry in order (the same order
// whichever blocks run it: the same bits every run).
template <typename Carry>
struct TailStep {
  const Carry* x;  // the pass before's outputs
  OuterDims outer;
  int64_t outputs, length, reduced_stride, inner, inner_stride;
  unsigned group;
  Carry* to;  // where a step before the last leaves its outputs (the next step's x)
};

// The passes after the first (TailLaunch), run by the last `blocks` blocks of the first
// pass's grid to finish: one step by up to TailLaunch::kMaxBlocks blocks, or up to
// kMaxSteps steps by one block.
template <typename Carry, typename Out>
struct TailPass {
  static constexpr int kMaxSteps = TailLaunch::kMaxSteps;
  TailStep<Carry> steps[kMaxSteps];
  int count;        // steps
  unsigned blocks;  // blocks that run them (1 where count > 1)
  Out* y;
  unsigned* ticket;        // the grid's, then a count of the tail's blocks; 0 between launches
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

// Step s's outputs, shared by `blocks` blocks of kThreads threads (this one the
// `place`-th), each output's sum by one group of lanes (or the whole block) alone.
template <unsigned kThreads, typename Carry, typename Store>
__device__ __forceinline__ void run_tail_step(const TailStep<Carry>& s, unsigned place,
                                              unsigned blocks, Store&& store) {
  using P = AutoSums<Carry>;
  auto first_of = [&](int64_t q) {
    return s.x + s.outer.offset(q / s.inner) + (q % s.inner) * s.inner_stride;
  };
  if (s.group == 0) {
    for (int64_t q = place; q < s.outputs; q += blocks) {
      const Carry* first = first_of(q);
      typename P::Acc acc{};
#pragma unroll 4
      for (int64_t r = threadIdx.x; r < s.length; r += kThreads)
        P::add(acc, load_coherent(first + r * s.reduced_stride));
      const typename P::Sum total = block_sum<kThreads>(P::sum_of(acc));
      if (threadIdx.x == 0) store(q, total);
      __syncthreads();  // block_sum's shared memory, again
    }
  } else {
    const unsigned lane = threadIdx.x % s.group;
    const int64_t per_block = kThreads / s.group;
    for (int64_t q = place * per_block + threadIdx.x / s.group; q < s.outputs;
         q += blocks * per_block) {
      const Carry* first = first_of(q);
      typename P::Acc acc{};
#pragma unroll 4
      for (int64_t r = lane; r < s.length; r += s.group)
        P::add(acc, load_coherent(first + r * s.reduced_stride));
      const typename P::Sum total = group_sum(P::sum_of(acc), s.group);
      if (lane == 0) store(q, total);
    }
  }
}

// The tail by the last blocks of kThreads threads to finish, after all of their threads
// are done storing. Each block takes a ticket; those of the last t.blocks tickets wait
// until every block has one, then share the tail. Waiting blocks hold their SMs' slots,
// which is safe while fewer blocks wait than the GPU holds at once (the blocks still to
// run find room): choose_tail keeps t.blocks under half the SMs.
template <unsigned kThreads, typename Carry, typename Out>
__device__ __forceinline__ void run_tail_if_last(const TailPass<Carry, Out>& t) {
  constexpr unsigned kNone = ~0u;
  __shared__ unsigned place;  // among the tail's blocks, or kNone
  const unsigned grid = gridDim.x * gridDim.y * gridDim.z;
  const unsigned blocks = min(t.blocks, grid);
  __syncthreads();  // the block's outputs are stored before thread 0 releases them
  if (threadIdx.x == 0) {
    const unsigned taken = take_ticket(t.ticket);
    place = taken + blocks >= grid ? taken + blocks - grid : kNone;
    if (place != kNone && taken + 1 < grid) {
      // Every block's outputs, before this block reads them.
      cuda::atomic_ref<unsigned, cuda::thread_scope_device> ticket(*t.ticket);
      while (ticket.load(cuda::memory_order_acquire) < grid) __nanosleep(100);
    }
  }
  __syncthreads();  // thread 0's acquire covers the block's reads below
  if (place == kNone) return;
  for (int k = 0; k < t.count; ++k) {
    const TailStep<Carry>& s = t.steps[k];
    if (k + 1 < t.count) {
      const AutoSums<Carry> between{};
      run_tail_step<kThreads>(s, place, blocks,
                              [&](int64_t q, const auto& total) { between.store(s.to, q, total); });
      __syncthreads();  // one block runs several steps: its stores before its reads
    } else {
      run_tail_step<kThreads>(s, place, blocks,
                              [&](int64_t q, const auto& total) { t.policy.store(t.y, q, total); });
    }
  }
  if (threadIdx.x == 0) {
    // For the next launch on this stream: 0 again once every block of the tail has seen
    // the last ticket.
    cuda::atomic_ref<unsigned, cuda::thread_scope_device> finished(t.ticket[1]);
    if (blocks == 1 || finished.fetch_add(1u, cuda::memory_order_relaxed) == blocks - 1) {
      finished.store(0u, cuda::memory_order_relaxed);
      *t.ticket = 0;
    }
  }
}

// At the end of every kernel a first pass may launch, by all its threads: the tail, where
// the policy carries one.
template <unsigned kThreads, typename P>
__device__ __forceinline__ void finish_with_tail(const P& policy) {
  if constexpr (has_tail_v<P>) run_tail_if_last<kThreads>(policy.tail);
}

}  // namespace warpreduce
