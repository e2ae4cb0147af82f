// The fast path (kernel="auto") for a full reduction of one contiguous row: a memory-bound
// streaming read, so everything here serves one goal, keeping enough bytes in flight to
// saturate HBM, in a single launch.
#pragma once

#include <cuda/atomic>

#include <cstdint>
#include <cstring>
#include <type_traits>

#include "block_reduce.cuh"

namespace warpreduce {

// How a thread reads 16 bytes of the stream: the data is read once, so it skips L1
// (ld.global.nc.L1::no_allocate). On an H200 this beat a plain load by 2-8% at 2^20 to
// 2^24 elements and matched it at 2^28; asking L2 to fetch 256-byte groups as well
// (.L2::256B) lost 6% at 2^28 (benchmarks/RESULTS.md, "Tuning the fast path").
struct LoadNoL1 {
  __device__ __forceinline__ static uint4 load(const uint4* p) {
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
};

// Tuning, kept as data; benchmarks/tune_fast_sum.cu times the alternatives side by side.
// 512 threads x 4 blocks an SM fill Hopper's 2048 thread slots, and 4 independent
// 16-byte loads a thread keep 32 KiB a block in flight before the first add. On an H200,
// 256 or 1024 threads or 8 loads were within 1% at 2^28 and up to 20% slower at 2^16 to
// 2^20. 2-byte types need 36 registers, so 3 blocks fit an SM, not 4; capping them at 32
// for 4 blocks lost 0.7% at 2^28. Blocks interleave (block b reads every gridDim-th
// tile): one contiguous span a block instead cost 2-4% at 2^28, and a grid sized by the
// input rather than by what fits the GPU at once 10-30% from 2^24 up.
template <unsigned Threads, int Unroll, typename Load, typename Ticket>
struct FastPolicyT {
  static constexpr unsigned kThreads = Threads;
  static constexpr int kUnroll = Unroll;
  using LoadOp = Load;
  using TicketOp = Ticket;
};

// How a block, having stored its partial sum, takes its ticket and learns whether it is
// the last: its partial must be visible before its ticket (release), and the last block
// must see every partial (acquire). One acquire-release atomic does both
// (MEMBAR.ALL.GPU, ATOM, CCTL.IVALL on sm_90); against the threadfence form it took
// 0.2-0.4 us off a call from 2^20 to 2^24 elements in two tuning runs on an H200.
struct TicketAcqRel {
  __device__ __forceinline__ static bool is_last(unsigned* ticket, unsigned blocks) {
    cuda::atomic_ref<unsigned, cuda::thread_scope_device> t(*ticket);
    return t.fetch_add(1u, cuda::memory_order_acq_rel) == blocks - 1;
  }
};
// The classic threadFenceReduction form (cuda-samples): __threadfence() before the
// atomic and again in the last block, each a sequentially consistent MEMBAR.SC.GPU.
struct TicketThreadfence {
  __device__ __forceinline__ static bool is_last(unsigned* ticket, unsigned blocks) {
    __threadfence();
    const bool last = atomicAdd(ticket, 1u) == blocks - 1;
    if (last) __threadfence();
    return last;
  }
};

using FastPolicy = FastPolicyT<512, 4, LoadNoL1, TicketAcqRel>;

// Adds the lanes of one 16-byte vector into per-lane accumulators: 4 floats, 8 halves
// or bfloat16s, 4 int32s, 16 int8s. Keeping a sum per lane shortens each serial chain
// (better float error) and leaves the adds independent.
template <typename T, typename A, int kLanes = 16 / sizeof(T)>
__device__ __forceinline__ void add_lanes(A (&acc)[kLanes], const uint4& raw) {
  T lanes[kLanes];
  memcpy(lanes, &raw, sizeof(raw));
#pragma unroll
  for (int j = 0; j < kLanes; ++j) acc[j] += static_cast<A>(lanes[j]);
}

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

// Sums x[0, n) into *y. A scalar head reaches the first 16-byte boundary, then 16-byte
// vectors, then a scalar tail. With more than one block, each block leaves its partial
// sum in partials[blockIdx.x] and takes a ticket; the block that draws the last ticket
// sums the partials in index order (deterministic: no float atomics) and resets the
// ticket to 0 for the next launch on this stream.
template <typename T, typename Out, typename P = FastPolicy>
__global__ void __launch_bounds__(P::kThreads)
    fast_sum(const T* __restrict__ x, int64_t n, Out* __restrict__ y,
             combine_t<T>* __restrict__ partials, unsigned* __restrict__ ticket) {
  using A = acc_t<T>;
  using C = combine_t<T>;
  constexpr int kLanes = 16 / sizeof(T);
  const int64_t misalignment = reinterpret_cast<uintptr_t>(x) % 16;
  const int64_t to_boundary = (16 - misalignment) % 16 / sizeof(T);
  const int64_t head = n < to_boundary ? n : to_boundary;
  const uint4* body = reinterpret_cast<const uint4*>(x + head);
  const int64_t vectors = (n - head) / kLanes;
  const int64_t tail = head + vectors * kLanes;

  // Thread t of block b reads vectors i, i + step, ..., kUnroll at a time.
  const int64_t step = int64_t{gridDim.x} * P::kThreads;
  int64_t i = blockIdx.x * int64_t{P::kThreads} + threadIdx.x;

  A acc[kLanes] = {};
  for (; i + (P::kUnroll - 1) * step < vectors; i += P::kUnroll * step) {
    uint4 v[P::kUnroll];
#pragma unroll
    for (int u = 0; u < P::kUnroll; ++u) v[u] = P::LoadOp::load(body + i + u * step);
#pragma unroll
    for (int u = 0; u < P::kUnroll; ++u) add_lanes<T>(acc, v[u]);
  }
  // Fewer than kUnroll vectors are left for this thread: one more round, predicated, so
  // that they too are all in flight at once rather than one DRAM latency each.
  {
    uint4 v[P::kUnroll];
#pragma unroll
    for (int u = 0; u < P::kUnroll; ++u) {
      v[u] = i + u * step < vectors ? P::LoadOp::load(body + i + u * step) : uint4{0, 0, 0, 0};
    }
#pragma unroll
    for (int u = 0; u < P::kUnroll; ++u) add_lanes<T>(acc, v[u]);
  }
  if (blockIdx.x == 0) {  // fewer than kLanes elements each
    if (threadIdx.x < head) acc[0] += static_cast<A>(x[threadIdx.x]);
    if (threadIdx.x < n - tail) acc[0] += static_cast<A>(x[tail + threadIdx.x]);
  }
  C lanes[kLanes];
#pragma unroll
  for (int j = 0; j < kLanes; ++j) lanes[j] = static_cast<C>(acc[j]);
#pragma unroll
  for (int width = kLanes / 2; width > 0; width /= 2) {
#pragma unroll
    for (int j = 0; j < width; ++j) lanes[j] += lanes[j + width];
  }
  const C total = block_sum<P::kThreads>(lanes[0]);

  if (gridDim.x == 1) {
    store_block_total(y, total);
    return;
  }
  __shared__ bool is_last;
  if (threadIdx.x == 0) {
    partials[blockIdx.x] = total;
    is_last = P::TicketOp::is_last(ticket, gridDim.x);
  }
  __syncthreads();  // thread 0's acquire covers the block's reads below
  if (!is_last) return;
  C v = 0;
  for (unsigned b = threadIdx.x; b < gridDim.x; b += P::kThreads) v += __ldcg(partials + b);
  v = block_sum<P::kThreads>(v);
  if (threadIdx.x == 0) {
    *y = static_cast<Out>(v);
    *ticket = 0;
  }
}

}  // namespace warpreduce
