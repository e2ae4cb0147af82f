// Building blocks shared by the staged kernels, the row and the column kernels. No ATen
// here: raw pointers, sizes and the accumulator types of sum_traits.h.
#pragma once

#include <cstdint>
#include <cstring>
#include <type_traits>

#include "../sum_traits.h"

namespace warpreduce {

constexpr unsigned kFullMask = 0xffffffffu;

// The shuffles every tree below uses: the intrinsics for numbers; accumulate.cuh adds
// overloads for the certified sums of exact kernels (found by argument lookup).
template <typename V>
__device__ __forceinline__ V shfl_xor(V v, unsigned offset, unsigned mask = kFullMask) {
  return __shfl_xor_sync(mask, v, offset);
}
template <typename V>
__device__ __forceinline__ V shfl_down(V v, unsigned offset, unsigned mask = kFullMask,
                                       int width = 32) {
  return __shfl_down_sync(mask, v, offset, width);
}

// The staged kernels reduce `segments` rows of n elements, one after the other in
// memory. A launch gives each row `parts` blocks; block b works on row b / parts and
// writes its partial sum to y[b], so the partial sums form a new [segments, parts] input
// for the next launch, until parts == 1.
struct BlockInSegment {
  int64_t segment;  // which row
  int64_t part;     // which of the row's blocks
};

__device__ __forceinline__ BlockInSegment block_in_segment(int64_t parts) {
  return {blockIdx.x / parts, blockIdx.x % parts};
}

// Zero past the end: with it every kernel takes any length, not only multiples of the
// block size. An element is added to 0, as torch.sum adds it, so that a row of -0.0 sums
// to +0.0 whatever the tree.
template <typename A, typename T>
__device__ __forceinline__ A load_or_zero(const T* x, int64_t i, int64_t n) {
  return i < n ? A(0) + static_cast<A>(x[i]) : A(0);
}

template <typename Out, typename A>
__device__ __forceinline__ void store_block_total(Out* y, A total) {
  if (threadIdx.x == 0) y[blockIdx.x] = static_cast<Out>(total);
}

// Halves s[0, blockDim) with sequential addressing until `stop` values remain (stop = 0:
// down to s[0]). Active threads are contiguous and touch contiguous words.
template <typename A>
__device__ __forceinline__ void tree_sequential(A* s, unsigned tid, unsigned stop) {
  for (unsigned stride = blockDim.x / 2; stride > stop; stride >>= 1) {
    if (tid < stride) s[tid] += s[tid + stride];
    __syncthreads();
  }
}

// The last six steps of a shared-memory tree, s[0, 64) -> one value, by the first warp
// alone: no __syncthreads, no `if (tid < stride)`. The classic version relies on the
// warp running in lockstep and on `volatile`; since Volta (independent thread
// scheduling) the threads of a warp may interleave, so each step reads into a register
// and __syncwarp() separates the warp's reads from its writes. Call with all 32 threads
// of warp 0; lane 0 gets the total.
template <typename A>
__device__ __forceinline__ A last_warp_unrolled(A* s, unsigned tid) {
  A v = s[tid];
#pragma unroll
  for (unsigned stride = 32; stride > 0; stride >>= 1) {
    v += s[tid + stride];
    __syncwarp();
    s[tid] = v;
    __syncwarp();
  }
  return v;
}

// The whole tree unrolled at compile time for a block of kBlock threads: with kBlock a
// template parameter every level's stride and test are constants, so the loop is
// unrolled completely and its counter is gone, as the last warp's is above. Thread 0
// gets the total.
template <unsigned kBlock, typename A>
__device__ __forceinline__ A tree_unrolled(A* s, unsigned tid) {
  static_assert(kBlock >= 64 && kBlock <= 1024 && (kBlock & (kBlock - 1)) == 0);
#pragma unroll
  for (unsigned stride = kBlock / 2; stride >= 64; stride >>= 1) {
    if (tid < stride) s[tid] += s[tid + stride];
    __syncthreads();
  }
  return tid < 32 ? last_warp_unrolled(s, tid) : A(0);
}

// A contiguous span x[0, n) split at 16-byte boundaries: `head` scalars up to the first
// boundary, `vectors` aligned 16-byte vectors, then the scalars from `tail` to n. Any
// alignment and length works; only the body is read 16 bytes at a time.
template <typename T>
struct VectorSpan {
  static constexpr int kLanes = 16 / sizeof(T);  // elements a vector holds
  const T* x;
  int64_t n, head, vectors, tail;

  __device__ __forceinline__ VectorSpan(const T* x_, int64_t n_) : x(x_), n(n_) {
    const int64_t misalignment = reinterpret_cast<uintptr_t>(x) % 16;
    const int64_t to_boundary = (16 - misalignment) % 16 / sizeof(T);
    head = n < to_boundary ? n : to_boundary;
    vectors = (n - head) / kLanes;
    tail = head + vectors * kLanes;
  }
  __device__ __forceinline__ const uint4* body() const {
    return reinterpret_cast<const uint4*>(x + head);
  }
  // f(element) for the k-th scalar of the head and the k-th of the tail, where they
  // exist: k = 0 .. kLanes - 1 covers everything outside the body.
  template <typename F>
  __device__ __forceinline__ void for_edges(int64_t k, F&& f) const {
    if (k < head) f(x[k]);
    if (k < n - tail) f(x[tail + k]);
  }
};

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

// The lanes of add_lanes summed pairwise into one value of type C.
template <typename C, typename A, int kLanes>
__device__ __forceinline__ C sum_lanes(const A (&acc)[kLanes]) {
  C lanes[kLanes];
#pragma unroll
  for (int j = 0; j < kLanes; ++j) lanes[j] = static_cast<C>(acc[j]);
#pragma unroll
  for (int width = kLanes / 2; width > 0; width /= 2) {
#pragma unroll
    for (int j = 0; j < width; ++j) lanes[j] += lanes[j + width];
  }
  return lanes[0];
}

// What a thread keeps while it streams 16-byte vectors of T through a row or a whole
// tensor (rows_split, rows_grouped): add(vector) for each, add_value(v) for scalars of
// value_t, then total<C>().
//
// In general a sum per lane in acc_t: a short serial chain per lane, independent adds.
// kExact asks for float32's exact lanes (below), which only the full reduction takes.
template <typename T, bool kExact = false, typename = void>
struct LaneSums {
  using value_t = acc_t<T>;
  static constexpr int kLanes = 16 / sizeof(T);
  value_t lanes[kLanes] = {};
  __device__ __forceinline__ void add(const uint4& v) { add_lanes<T>(lanes, v); }
  __device__ __forceinline__ void add_value(value_t v) { lanes[0] += v; }
  template <typename C>
  __device__ __forceinline__ C total() const {
    return sum_lanes<C>(lanes);
  }
};

// float32, exact: two lanes in double, each adding two floats at a time (their sum is
// exact in double). A thread's share of a full reduction (~1000 elements at 2^28) then
// adds no error that shows in the float result: 0 ulp from the correctly rounded sum at
// every size 2^10-2^28 (benchmarks/accuracy.py, H200), where four float lanes reached
// 28 ulp at 2^28. Two doubles take the registers of four floats (four doubles took 40,
// where 32 fit 4 blocks of 512 an SM). The conversions cost the dim reductions 2-4%
// (rows of 16 KiB-256 KiB), so they keep float lanes.
template <>
struct LaneSums<float, true> {
  using value_t = double;
  double lanes[2] = {};
  __device__ __forceinline__ void add(const uint4& v) {
    lanes[0] +=
        static_cast<double>(__uint_as_float(v.x)) + static_cast<double>(__uint_as_float(v.y));
    lanes[1] +=
        static_cast<double>(__uint_as_float(v.z)) + static_cast<double>(__uint_as_float(v.w));
  }
  __device__ __forceinline__ void add_value(double v) { lanes[0] += v; }
  template <typename C>
  __device__ __forceinline__ C total() const {
    return static_cast<C>(lanes[0] + lanes[1]);
  }
};

// 1- and 2-byte integers and bool: a 32-bit sum per 4-byte word, added by the dot-product
// instructions (dp4a: 4 bytes times 1 plus the sum; dp2a: 2 halves), widened to 64 bits
// every kWidenEvery vectors, before a word sum could overflow (|4 bytes| <= 1020 a
// vector; |2 halves| <= 65536). Sixteen 64-bit lanes for int8 spent the time widening
// and adding, not loading (56% of peak at 2^28); the sum is the same, wraparound
// included, since nothing is lost before the 64-bit sum.
template <typename T, bool kExact>
struct LaneSums<T, kExact, std::enable_if_t<is_integer_v<T> && sizeof(T) <= 2>> {
  using value_t = unsigned long long;
  using Word = std::conditional_t<std::is_signed_v<T>, int, unsigned>;
  static constexpr int kWidenEvery = sizeof(T) == 1 ? 1 << 20 : 1 << 14;
  Word words[4] = {};
  value_t wide = 0;
  int count = 0;

  __device__ __forceinline__ static Word dot(unsigned word, Word sum) {
    if constexpr (std::is_same_v<T, BoolByte>) {
      // Each byte to 1 if nonzero: bit 7 of (low 7 bits + 0x7f) | byte is set exactly then.
      word = (((word & 0x7f7f7f7fu) + 0x7f7f7f7fu) | word) >> 7 & 0x01010101u;
    }
    if constexpr (sizeof(T) == 2 && std::is_signed_v<T>) {
      return __dp2a_lo(static_cast<int>(word), 0x0101, sum);
    } else if constexpr (sizeof(T) == 2) {
      return __dp2a_lo(word, 0x0101u, sum);
    } else if constexpr (std::is_signed_v<T>) {
      return __dp4a(static_cast<int>(word), 0x01010101, sum);
    } else {
      return __dp4a(word, 0x01010101u, sum);
    }
  }
  __device__ __forceinline__ void widen() {
#pragma unroll
    for (int k = 0; k < 4; ++k) {
      // Sign-extended for signed types: the 64-bit sum wraps exactly like torch.sum's.
      wide += static_cast<value_t>(static_cast<int64_t>(words[k]));
      words[k] = 0;
    }
    count = 0;
  }
  __device__ __forceinline__ void add(const uint4& v) {
    words[0] = dot(v.x, words[0]);
    words[1] = dot(v.y, words[1]);
    words[2] = dot(v.z, words[2]);
    words[3] = dot(v.w, words[3]);
    if (++count == kWidenEvery) widen();
  }
  __device__ __forceinline__ void add_value(value_t v) { wide += v; }
  template <typename C>
  __device__ __forceinline__ C total() {
    widen();
    return static_cast<C>(wide);
  }
};

// Sum over a warp in registers; lane 0 gets it.
template <typename A>
__device__ __forceinline__ A warp_sum(A v) {
#pragma unroll
  for (int offset = 16; offset > 0; offset >>= 1) v += shfl_down(v, offset);
  return v;
}

// Sum over each aligned group of `group` lanes (a power of two up to 32) in registers;
// the group's first lane gets it. Only the group's own lanes take part, so groups of one
// warp may run different numbers of iterations around it.
template <typename A>
__device__ __forceinline__ A group_sum(A v, unsigned group) {
  const unsigned lane = threadIdx.x % 32;
  const unsigned mask = group == 32 ? kFullMask : ((1u << group) - 1) << (lane & ~(group - 1));
  for (unsigned offset = group / 2; offset > 0; offset >>= 1) {
    v += shfl_down(v, offset, mask, group);
  }
  return v;
}

// Sum over a block of kBlock threads with one shared-memory slot per warp: each warp
// reduces in registers, then the first warp reduces the warp totals. Thread 0 gets the
// total. A kernel that calls it twice needs a __syncthreads() in between.
template <unsigned kBlock, typename A>
__device__ __forceinline__ A block_sum(A v) {
  static_assert(kBlock % 32 == 0 && kBlock <= 1024);
  constexpr unsigned kWarps = kBlock / 32;
  __shared__ A warp_total[kWarps];
  const unsigned lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  v = warp_sum(v);
  if (lane == 0) warp_total[warp] = v;
  __syncthreads();
  if (warp == 0) v = warp_sum(lane < kWarps ? warp_total[lane] : A{});
  return v;
}

}  // namespace warpreduce
