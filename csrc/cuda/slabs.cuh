// Tiles through shared memory (launch_model.h: "slabs" and "column_tiles"). A block copies
// a tile of the input into shared memory with 16-byte copies (cp.async), whatever the
// data's alignment, strides and steps, then sums the tile's outputs there. A tile is a few
// contiguous spans of memory, its segments, each copied whole: the memory between the
// elements of a stepped view or a slice rides along (DRAM reads whole 32-byte sectors
// anyway), the memory between segments does not.
//
// - slabs: output (o, i) sums x[outer.offset(o) + r * reduced_stride + i * inner_stride]
//   over r < length; slab o, the span of its elements, holds the inner extent's outputs.
//   A segment is a run of consecutive slabs along the innermost outer dim (`per_segment`
//   of them, `stride` apart), and a tile `segments` such runs: one long run piece, or
//   several whole short runs (a sliced tensor whose innermost outer dim has 3 or 6 slabs
//   would otherwise make tiles of 3 or 6 outputs: 30-45 GB/s on an H200). Short rows,
//   small reduced extents in the middle of a tensor, small inner extents. A gapped inner
//   dim (x[..., :5] of rows of 6 under the reduced dim) is copied whole, gaps and all,
//   and its kept positions alone are summed, output k of a slab at position
//   (k / width) * period + k % width.
// - column tiles: `width` adjacent outputs of one outer slice, a segment a row of the
//   reduced dim (length of them): a short reduced dim above wide columns whose rows are
//   not 16-byte aligned (a sliced or offset view, an odd inner extent), which vector loads
//   cannot read and scalar loads read with too little in flight (3 x 12757160 floats
//   summed over dim 0, rows 12757161 apart: 552 GB/s).
//
// Two stages deep: the next tile's copies are in flight while the block sums the current
// one. The scalars at a segment's unaligned ends are loaded into registers while the
// copies fly and stored after the current tile is summed (stored at once, each such
// thread waited a DRAM latency a tile and the block with it: 56% of a full sum's speed on
// rows of 3 floats). `group` lanes sum each output; several outputs a thread in turn.
// This generalises the earlier rows_tiled kernel (one run of rows a tile), whose story is
// in benchmarks/RESULTS.md.
#pragma once

#include "accumulate.cuh"
#include "rows.cuh"

namespace warpreduce {

constexpr unsigned kTileThreads = 256;
// The most segments a tile has: its ends' scalars are held in at most kTileEdgeSlots
// registers a thread (2 ends of up to 16 / sizeof(T) - 1 scalars a segment).
constexpr int kTileEdgeSlots = 2;
template <typename T>
constexpr int kMaxTileSegments = kTileThreads * kTileEdgeSlots / (2 * (16 / sizeof(T)));

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

// A pass as the tile kernel walks it (run_pass.cuh fills it in from the launch model).
template <typename T>
struct Tiles {
  const T* x;
  OuterDims outer;
  int64_t outer_size;
  int64_t length, reduced_stride, inner, inner_stride;
  bool column_tiles;  // else slabs
  int segments;       // a tile's (column tiles: length)
  int slots;          // 16-byte slots of shared memory a segment may take, its offset included
  int64_t tiles;
  // slabs
  int64_t run;                // slabs in the innermost outer dim
  int64_t stride;             // between consecutive slabs of a run
  int64_t span;               // elements a slab spans
  int64_t per_segment;        // slabs a segment holds
  int64_t segments_per_run;   // ceil(run / per_segment)
  int64_t total_segments;     // outer_size / run * segments_per_run
  FastDivmod slots_div;        // slots
  // A slab's outputs: inner, or a gapped inner dim's kept positions (kept_inner of them,
  // `width` of every `period`: ReductionPass::tiled_gaps).
  int64_t kept_inner;
  bool gapped;
  FastDivmod width_div;
  int period;
  FastDivmod segment_outputs;  // per_segment * kept_inner
  FastDivmod inner_div;        // kept_inner
  // Slabs of one segment a tile, a lane an output (Launch::rotate_rows): each lane reads
  // its output's rows from row slab % length on, wrapping round.
  bool rotate_rows;
  // column tiles
  int64_t width;  // outputs a tile holds
  int64_t tiles_per_outer;
};

// Where tile t's segment j comes from and lands: filled by thread j before the copies,
// so that the copies and the sums need no division.
struct TileSegment {
  const void* source;  // its first element
  const uint4* body;   // its first aligned 16 bytes
  int count;           // elements
  int head;            // elements before `body`
  int vectors;         // 16-byte vectors from `body`
  int slot;            // shared-memory slot of `body`
  int base;            // shared-memory element index of its first element
  int outputs;         // slabs: outputs it holds
  int64_t first_output;
};

template <typename T>
__device__ __forceinline__ void describe_segment(const Tiles<T>& g, int64_t t, int j, int stage,
                                                 TileSegment* out) {
  constexpr int kLanes = 16 / sizeof(T);
  TileSegment s{nullptr, 0, 0, 0, 0};
  if (g.column_tiles) {
    const int64_t o = t / g.tiles_per_outer, c = t % g.tiles_per_outer * g.width;
    const int64_t w = min(g.width, g.inner - c);
    s.source = g.x + g.outer.offset(o) + j * g.reduced_stride + c * g.inner_stride;
    s.count = static_cast<int>((w - 1) * g.inner_stride + 1);
    s.outputs = static_cast<int>(w);
    s.first_output = o * g.inner + c;
  } else {
    const int64_t segment = t * g.segments + j;
    if (segment < g.total_segments) {
      const int64_t run = segment / g.segments_per_run, piece = segment % g.segments_per_run;
      const int64_t first = run * g.run + piece * g.per_segment;
      const int64_t slabs = min(g.per_segment, g.run - piece * g.per_segment);
      s.source = g.x + g.outer.offset(first);
      s.count = static_cast<int>((slabs - 1) * g.stride + g.span);
      s.outputs = static_cast<int>(slabs * g.kept_inner);
      s.first_output = first * g.kept_inner;
    }
  }
  // At the same offset from a 16-byte boundary as its source, so that the copies land
  // aligned: one slot for the head, then the body.
  const VectorSpan<T> span(static_cast<const T*>(s.source), s.count);
  const int first_slot = (stage * g.segments + j) * g.slots;
  s.body = span.body();
  s.head = static_cast<int>(span.head);
  s.vectors = static_cast<int>(span.vectors);
  s.slot = first_slot + (span.head > 0 ? 1 : 0);
  s.base = first_slot * kLanes + (kLanes - s.head) % kLanes;
  out[j] = s;
}

// Where a slab's output k lies in it (elements from the slab's start, inner_stride apart).
template <typename T>
__device__ __forceinline__ int slab_position(const Tiles<T>& g, int k) {
  if (!g.gapped) return k;
  const int q = static_cast<int>(g.width_div.div(static_cast<unsigned>(k)));
  return q * g.period + (k - q * static_cast<int>(g.width_div.divisor));
}

// The sum of `length` elements `step` apart from e, two chains.
template <typename P, typename T>
__device__ __forceinline__ typename P::Sum rows_sum(const T* e, int length, int step) {
  typename P::Acc a0 = {}, a1 = {};
  int r = 0;
  for (; r + 1 < length; r += 2, e += 2 * step) {
    P::add(a0, e[0]);
    P::add(a1, e[step]);
  }
  if (r < length) P::add(a0, e[0]);
  return P::sum_of(a0) + P::sum_of(a1);
}

// The same sum from row `first` on, wrapping round to row 0: lanes whose rows would
// share banks row for row (slabs a multiple of 128 bytes apart) read different ones
// (float32 1048576 x 8 x 2 over dim 1: 56% of the tile's shared-memory wavefronts were
// bank conflicts, ncu). Offsets wrap, not pointers: the kernel took 60 registers so, 48
// this way (the general loop alone: 44).
template <typename P, typename T>
__device__ __forceinline__ typename P::Sum rotated_rows_sum(const T* e, int first, int length,
                                                            int step) {
  typename P::Acc a0 = {}, a1 = {};
  const int end = length * step;
  int at = first * step;
  int r = 0;
#pragma unroll 1
  for (; r + 1 < length; r += 2) {
    P::add(a0, e[at]);
    at += step;
    if (at == end) at = 0;
    P::add(a1, e[at]);
    at += step;
    if (at == end) at = 0;
  }
  if (r < length) P::add(a0, e[at]);
  return P::sum_of(a0) + P::sum_of(a1);
}

template <typename T, typename Out, typename P>
__global__ void __launch_bounds__(kTileThreads)
    tiled(Tiles<T> g, unsigned group, Out* __restrict__ y, P policy) {
  using Acc = typename P::Acc;
  using Sum = typename P::Sum;
  constexpr int kLanes = 16 / sizeof(T);
  extern __shared__ uint4 shared_vectors[];  // 2 stages of g.segments x g.slots
  __shared__ TileSegment segments[2][kMaxTileSegments<T>];
  T* const shared = reinterpret_cast<T*>(shared_vectors);
  const int lane_in_group = static_cast<int>(threadIdx.x % group);
  const int outputs_per_pass = static_cast<int>(kTileThreads / group);
  const int length = static_cast<int>(g.length);
  const int reduced_stride = static_cast<int>(g.reduced_stride);
  const int inner_stride = static_cast<int>(g.inner_stride);
  const int stride = static_cast<int>(g.stride);

  // The scalars of the segments' unaligned ends, loaded now, stored after the current
  // tile is summed.
  struct Scalars {
    T value[kTileEdgeSlots];
    int to[kTileEdgeSlots];
    __device__ __forceinline__ void finish(T* shared) const {
#pragma unroll
      for (int k = 0; k < kTileEdgeSlots; ++k) {
        if (to[k] >= 0) shared[to[k]] = value[k];
      }
    }
  };
  // Starts copying tile t into `stage` (its segments described already).
  auto start_copy = [&](int64_t t, int stage) {
    Scalars scalars;
#pragma unroll
    for (int k = 0; k < kTileEdgeSlots; ++k) scalars.to[k] = -1;
    if (t < g.tiles) {
      const TileSegment* s = segments[stage];
      if (g.segments == 1) {
        for (int v = threadIdx.x; v < s[0].vectors; v += kTileThreads)
          copy_async(shared_vectors + s[0].slot + v, s[0].body + v);
      } else {
        for (int index = threadIdx.x; index < g.segments * g.slots; index += kTileThreads) {
          const int j = static_cast<int>(g.slots_div.div(static_cast<unsigned>(index)));
          const int v = index - j * g.slots;
          if (v < s[j].vectors) copy_async(shared_vectors + s[j].slot + v, s[j].body + v);
        }
      }
#pragma unroll
      for (int k = 0; k < kTileEdgeSlots; ++k) {
        const int e = threadIdx.x + k * kTileThreads;  // segment, end, scalar
        const int j = e / (2 * kLanes), end = e / kLanes % 2, i = e % kLanes;
        if (j >= g.segments || s[j].source == nullptr) continue;
        const T* source = static_cast<const T*>(s[j].source);
        const int tail = s[j].head + s[j].vectors * kLanes;
        if (end == 0 && i < s[j].head) {
          scalars.value[k] = source[i];
          scalars.to[k] = s[j].base + i;
        } else if (end == 1 && i < s[j].count - tail) {
          scalars.value[k] = source[tail + i];
          scalars.to[k] = s[j].base + tail + i;
        }
      }
    }
    copy_async_commit();  // an empty group past the last tile keeps the count in step
    return scalars;
  };
  auto describe = [&](int64_t t, int stage) {
    if (t < g.tiles && static_cast<int>(threadIdx.x) < g.segments) {
      describe_segment(g, t, static_cast<int>(threadIdx.x), stage, segments[stage]);
    }
  };

  // Slabs of one segment a tile, a lane an output: the lean loop below (a packed tensor's
  // small extents), its outputs' places stepped without division.
  const bool lean = !g.column_tiles && g.segments == 1 && group == 1;

  describe(blockIdx.x, 0);
  __syncthreads();
  start_copy(blockIdx.x, 0).finish(shared);
  int stage = 0;
  for (int64_t t = blockIdx.x; t < g.tiles; t += gridDim.x, stage ^= 1) {
    describe(t + gridDim.x, stage ^ 1);
    __syncthreads();  // the next tile's segments are described
    const Scalars next = start_copy(t + gridDim.x, stage ^ 1);
    copy_async_wait<1>();  // this thread's copies of tile t have landed...
    __syncthreads();       // ... and everyone's
    const TileSegment* s = segments[stage];
    if (lean) {
      // Lane u's slab, index and rotation, and their steps from u to u + kTileThreads.
      const int inner = static_cast<int>(g.kept_inner);
      int slab = static_cast<int>(g.inner_div.div(threadIdx.x));
      int i = static_cast<int>(threadIdx.x) - slab * inner;
      const int step_slabs = static_cast<int>(g.inner_div.div(kTileThreads));
      const int step_i = static_cast<int>(kTileThreads) - step_slabs * inner;
      int rotation = 0, step_rotation = 0;
      if (g.rotate_rows) {
        rotation = slab % length;
        step_rotation = step_slabs % length;
      }
      const T* tile = shared + s[0].base;
      for (int u = static_cast<int>(threadIdx.x); u < s[0].outputs; u += kTileThreads) {
        const T* e = tile + slab * stride + slab_position(g, i) * inner_stride;
        const Sum sum = g.rotate_rows ? rotated_rows_sum<P>(e, rotation, length, reduced_stride)
                                      : rows_sum<P>(e, length, reduced_stride);
        policy.store(y, s[0].first_output + u, sum);
        slab += step_slabs;
        i += step_i;
        rotation += step_rotation;
        if (i >= inner) {
          i -= inner;
          ++slab;
          ++rotation;
        }
        if (rotation >= length) rotation -= length;
      }
      next.finish(shared);
      __syncthreads();
      continue;
    }
    // Outputs of the tile (slabs: up to; the last segments may hold fewer or none).
    const int outputs = g.column_tiles || g.segments == 1
                            ? s[0].outputs
                            : g.segments * static_cast<int>(g.per_segment * g.kept_inner);
    // A group's lanes share an output (group_sum shuffles among them alone), groups take
    // outputs in turn; small reduced extents use one lane an output (launch_model.cpp).
    for (int u = static_cast<int>(threadIdx.x / group); u < outputs; u += outputs_per_pass) {
      // Four independent sums: one chain of dependent adds and shared-memory loads made a
      // row of 100 a thread as slow as copying the tile.
      Acc acc[4] = {};
      int64_t q;  // the global output
      bool valid = true;
      if (g.column_tiles) {
        q = s[0].first_output + u;
        const int offset = u * inner_stride;
        int r = lane_in_group;
        for (; r + 3 * static_cast<int>(group) < length; r += 4 * group) {
#pragma unroll
          for (int k = 0; k < 4; ++k) P::add(acc[k], shared[s[r + k * group].base + offset]);
        }
        for (; r < length; r += group) P::add(acc[0], shared[s[r].base + offset]);
      } else {
        // Output u: segment j's output v, slab v / inner's column v % inner (branches the
        // same for the whole launch: one segment a tile, rows).
        int j = 0, v = u;
        if (g.segments > 1) {
          j = static_cast<int>(g.segment_outputs.div(static_cast<unsigned>(u)));
          v = u - j * static_cast<int>(g.segment_outputs.divisor);
          valid = v < s[j].outputs;
        }
        q = s[j].first_output + v;
        int slab = v, i = 0;
        if (g.kept_inner > 1) {
          slab = static_cast<int>(g.inner_div.div(static_cast<unsigned>(v)));
          i = slab_position(g, v - slab * static_cast<int>(g.inner_div.divisor));
        }
        const T* e =
            shared + s[j].base + slab * stride + i * inner_stride + lane_in_group * reduced_stride;
        const int step = static_cast<int>(group) * reduced_stride;
        int r = lane_in_group;
        for (; r + 3 * static_cast<int>(group) < length; r += 4 * group, e += 4 * step) {
#pragma unroll
          for (int k = 0; k < 4; ++k) P::add(acc[k], e[k * step]);
        }
        for (; r < length; r += group, e += step) P::add(acc[0], *e);
      }
      Sum sum = (P::sum_of(acc[0]) + P::sum_of(acc[1])) + (P::sum_of(acc[2]) + P::sum_of(acc[3]));
      if (group > 1) sum = group_sum(sum, group);
      if (lane_in_group == 0 && valid) policy.store(y, q, sum);
    }
    next.finish(shared);
    __syncthreads();  // the next iteration copies into the other stage, the one after into this
  }
  copy_async_wait<0>();
  finish_with_tail<kTileThreads>(policy);
}

}  // namespace warpreduce
