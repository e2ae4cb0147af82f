// Column reductions (geometry.h: a kept dim `inner` below the reduced one): output
// (o, i) sums x[outer.offset(o) + r * reduced_stride + i * inner_stride] over r < length.
// A gapped inner dim is read as its whole span, the gaps' sums left unstored.
//
// Each lane owns kVec adjacent outputs (one 16-byte vector a row when the layout allows,
// else one element): its "column". A vector may be partial (the last of an outer slice
// whose inner extent is not whole vectors: read element by element), shifted (rows not
// aligned alike: Loaded::load_shifted) or read element by element throughout (rows not
// aligned alike, 4- and 8-byte elements: ColumnLoad::kElements). A block has tx lanes
// across columns and ty lanes down the reduced dim, which then add their sums in shared
// memory. Columns are numbered outer slice by outer slice; a tile is tx of them:
// - slab-aligned tiles (flat = false): a tile within one outer slice, as many tiles as
//   the slice needs (lanes past its last column idle): a warp reads a patch of rows x
//   columns of one slice, for few columns and a long reduced dim;
// - flat tiles: tx consecutive columns whatever slice they belong to, so that a block
//   packs many outer slices when the inner extent is small (2^20 x 4 x 16 over dim 1: a
//   tile of one slice kept 4 of 256 lanes busy, 75 GB/s);
// - outer-first flat tiles: the same, numbered outer index first (32 outer indices of a
//   column a warp; fewer outer indices, of as many more columns, where the outer extent
//   is short), where the result holds consecutive outer indices side by side (a permuted
//   input's result): each warp's stores then fill whole sectors.
// When the tiles are too few to fill the GPU (8 x 2^24 dim 0 has many, 65536 x 128 dim 0
// one), `splits` blocks share a tile's rows; each leaves its sums in partials and the
// tile's last block adds them in split order (no float atomics). The launch model
// (launch_model.h) picks kVec, the load (ColumnLoad), tx, ty and flat; run_pass.cuh the
// splits.
#pragma once

#include "../launch_model.h"
#include "accumulate.cuh"
#include "rows.cuh"

namespace warpreduce {

template <typename T>
struct Columns {
  const T* x;
  OuterDims outer;
  int64_t outer_size;
  int64_t length;  // rows each output sums
  int64_t reduced_stride;
  int64_t inner;  // adjacent outputs an outer index holds (a gapped one: its span)
  int64_t inner_stride;
  // A gapped inner dim (geometry.h): the columns that are outputs, and how many an outer
  // index holds.
  GapMask gaps;
  int64_t kept_inner;
  // Folded rows (launch_model.h, Launch::fold; ColumnLoad::kFolded): `inner` is a folded
  // row of whole vectors, each holding inner / fold rows of the `fold` outputs, the last
  // row the data's last last_row_elements elements (0: a whole row).
  int64_t fold = 1;
  int last_row_elements = 0;
  // ReductionPass::result_apart (storing across: Launch::store_across).
  int64_t result_apart = 1;
  // Slices (ReductionPass::slices; auto, the general kernel): `length` counts the rows of
  // every slice, row r being row r % slice_rows of slice r / slice_rows.
  int64_t slices = 1;
  int64_t slice_stride = 0;
  FastDivmod slice_rows;
  // Row r's offset from its column's first element (host and device).
  WARPREDUCE_HOST_DEVICE int64_t row_offset(int64_t r) const {
    if (slices == 1) return r * reduced_stride;
#if defined(__CUDA_ARCH__)
    const unsigned s = slice_rows.div(static_cast<unsigned>(r));
#else
    const int64_t s = r / slice_rows.divisor;
#endif
    return s * slice_stride + (r - int64_t{s} * slice_rows.divisor) * reduced_stride;
  }
};

constexpr unsigned kColumnThreads = 512;

// How the blocks cover the outputs (launch_model.h, sum_cuda.cu).
struct ColumnTiling {
  unsigned tx, ty;          // tx * ty == kColumnThreads
  bool flat;                // tiles run across outer slices
  // Flat tiles numbered outer index first (Launch::outer_first): a warp's lanes are
  // outer_span consecutive outer indices of each of 32 / outer_span consecutive columns
  // (a column set); `column_group` column sets take their warps of the same outer indices
  // in turn (a span of each of their rows), then the next outer_span.
  bool outer_first;
  int64_t outer_span;
  int64_t column_group;
  int64_t outer_chunks;  // ceil(outer_size / outer_span)
  int64_t columns;          // lanes' columns an outer slice holds: ceil(inner / kVec)
  int64_t tiles_per_outer;  // slab-aligned tiles: ceil(columns / tx)
  int64_t tiles;
  int64_t splits;  // blocks a tile's rows are split over (gridDim.y)
  int64_t rows_per_split;
  // Shifted vectors (rows not aligned alike): the data's first byte and one past its
  // last, which the aligned vectors around a lane's elements must not leave.
  uintptr_t begin, end;
  // Storing across (store_across): divisors by the pass's result_apart and by the most
  // outputs of one result row a tile holds.
  FastDivmod apart, across_rows;
  // Wide outputs stored a warp at a time (store_by_warp), where the instantiation has them.
  bool warp_stores;
  // Auto's partial columns (the last of an outer slice whose inner extent is not whole
  // vectors) of shifted vectors, of 4- and 8-byte loads (pairs, words, quads) and of tiles
  // at once read whole vectors where those lie within the data (whole_column_reads).
  bool whole_partials;
};

// Shared memory for sum_down_ty: 16 KiB, whatever the sum's type.
template <typename C>
constexpr int kTyChunk =
    16384 / (kColumnThreads * sizeof(C)) > 0 ? 16384 / (kColumnThreads * sizeof(C))
                                             : 1;  // values of v a pass

// v summed over the ty threads that share a tx (thread = ty_index * tx + tx_index), in a
// fixed order; the threads with ty_index == 0 get it. First within each warp by
// shuffles (when tx < 32 a warp holds 32 / tx of the ty), then the warps' sums through
// shared memory, kTyChunk values at a time. A tree in shared memory instead cost
// log2(ty) + 2 barriers for every one of kVec values (90 a block for bfloat16): enough
// to hold 16-lane columns at 63-83% of a full sum's speed on an H200.
template <typename C, int kVec>
__device__ __forceinline__ void sum_down_ty(C (&v)[kVec], C* shared, unsigned tx, unsigned ty) {
  if (ty == 1) return;
  const unsigned lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  // In-warp: lanes with the same tx_index are tx apart.
  for (unsigned offset = tx; offset < 32; offset *= 2) {
#pragma unroll
    for (int j = 0; j < kVec; ++j) v[j] += shfl_xor(v[j], offset);
  }
  // Across warps: `groups` partial sums per tx_index remain, one per warp (tx < 32: the
  // first tx lanes of each warp hold them) or one per ty_index (tx >= 32).
  const unsigned groups = tx < 32 ? kColumnThreads / 32 : ty;
  const unsigned group = tx < 32 ? warp : threadIdx.x / tx;
  const unsigned column = tx < 32 ? lane : threadIdx.x % tx;
  const bool holder = tx < 32 ? lane < tx : true;
  constexpr int kChunk = kTyChunk<C> < kVec ? kTyChunk<C> : kVec;
#pragma unroll
  for (int j0 = 0; j0 < kVec; j0 += kChunk) {
    // [j][group][column]: a warp's lanes touch consecutive words.
    if (holder) {
#pragma unroll
      for (int j = 0; j < kChunk; ++j) shared[(j * groups + group) * tx + column] = v[j0 + j];
    }
    __syncthreads();
    if (group == 0 && holder) {
#pragma unroll
      for (int j = 0; j < kChunk; ++j) {
        C sum = shared[j * groups * tx + column];
        for (unsigned g = 1; g < groups; ++g) sum += shared[(j * groups + g) * tx + column];
        v[j0 + j] = sum;
      }
    }
    __syncthreads();  // before the next chunk overwrites
  }
}

// 8 and 4 bytes, read once, as load_streaming reads 16.
__device__ __forceinline__ uint2 load_streaming(const uint2* p) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 700
  uint2 v;
  asm volatile("ld.global.nc.L1::no_allocate.v2.u32 {%0, %1}, [%2];"
               : "=r"(v.x), "=r"(v.y)
               : "l"(p));
  return v;
#else
  return __ldg(p);
#endif
}
__device__ __forceinline__ uint32_t load_streaming(const uint32_t* p) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 700
  uint32_t v;
  asm volatile("ld.global.nc.L1::no_allocate.u32 %0, [%1];" : "=r"(v) : "l"(p));
  return v;
#else
  return __ldg(p);
#endif
}

// What a thread reads of one row: kVec adjacent elements, one vector of 16, 8 or 4 bytes
// (kVec > 1) or one element (an ordinary load: L1 keeps the sector for the neighbouring
// rows' and columns' loads of a strided or unaligned layout).
template <typename T, int kVec>
struct Loaded {
  static constexpr int kBytes = kVec * sizeof(T);
  static_assert(kBytes == 16 || kBytes == 8 || kBytes == 4);
  using Raw =
      std::conditional_t<kBytes == 16, uint4, std::conditional_t<kBytes == 8, uint2, uint32_t>>;
  static constexpr int kWords = sizeof(Raw) / 4;
  Raw raw{};
  __device__ __forceinline__ static Loaded load(const T* p) {
    return {load_streaming(reinterpret_cast<const Raw*>(p))};
  }
  // The same through L1 (ColumnLoad::kCached): a column's rows closer than a sector.
  __device__ __forceinline__ static Loaded load_cached(const T* p) {
    return {__ldg(reinterpret_cast<const Raw*>(p))};
  }
  // The first `valid` elements from p one by one (the rest zero): a column past the last
  // whole vector of an outer slice, or one at the edge of the data.
  __device__ __forceinline__ static Loaded load_elements(const T* p, int valid) {
    T lanes[kVec];
#pragma unroll
    for (int j = 0; j < kVec; ++j) lanes[j] = j < valid ? p[j] : T(0);
    Loaded v;
    memcpy(&v.raw, lanes, sizeof(Raw));
    return v;
  }
  // The vector at p where p need not be aligned to it (rows of a sliced or offset view,
  // or rows whose stride is not a whole number of vectors, are aligned alike only by
  // chance): the aligned vectors around it, ordinary loads (the lanes either side read
  // the same sectors: L1 serves the second), then a funnel shift by the misalignment,
  // its whole words chosen in binary steps (selects, no indexing into registers). The
  // caller checks shifts_within first.
  __device__ __forceinline__ static Loaded load_shifted(const T* p) {
    const uintptr_t address = reinterpret_cast<uintptr_t>(p);
    const unsigned shift = static_cast<unsigned>(address % sizeof(Raw));
    const Raw* vectors = reinterpret_cast<const Raw*>(address - shift);
    uint32_t w[2 * kWords] = {};
    const Raw low = __ldg(vectors);
    memcpy(w, &low, sizeof(Raw));
    if (shift != 0) {
      const Raw high = __ldg(vectors + 1);
      memcpy(w + kWords, &high, sizeof(Raw));
    }
    const unsigned words = shift / 4, bits = shift % 4 * 8;
#pragma unroll
    for (int step = kWords / 2; step >= 1; step /= 2) {
#pragma unroll
      for (int i = 0; i + step < 2 * kWords; ++i) w[i] = (words & step) ? w[i + step] : w[i];
    }
    uint32_t out[kWords];
#pragma unroll
    for (int j = 0; j < kWords; ++j) out[j] = __funnelshift_r(w[j], w[j + 1], bits);
    Loaded v;
    memcpy(&v.raw, out, sizeof(Raw));
    return v;
  }
  // The aligned vector at p, its elements outside [begin, end) (the data's bytes) zero: a
  // phased lane's first or last row where its vector reaches past the data.
  __device__ __forceinline__ static Loaded load_within(const T* p, uintptr_t begin, uintptr_t end) {
    T lanes[kVec];
#pragma unroll
    for (int j = 0; j < kVec; ++j) {
      const uintptr_t at = reinterpret_cast<uintptr_t>(p + j);
      lanes[j] = at >= begin && at < end ? p[j] : T(0);
    }
    Loaded v;
    memcpy(&v.raw, lanes, sizeof(Raw));
    return v;
  }
  // Whether load_shifted(p) reads within [begin, end), the data's bytes.
  __device__ __forceinline__ static bool shifts_within(const T* p, uintptr_t begin, uintptr_t end) {
    const uintptr_t address = reinterpret_cast<uintptr_t>(p);
    const uintptr_t shift = address % sizeof(Raw), aligned = address - shift;
    return aligned >= begin && aligned + (shift == 0 ? 1 : 2) * sizeof(Raw) <= end;
  }
  template <typename Accumulators>
  __device__ __forceinline__ void add_to(Accumulators& acc) const {
    T lanes[kVec];
    memcpy(lanes, &raw, sizeof(raw));
    acc.add(lanes);
  }
};
template <typename T>
struct Loaded<T, 1> {
  T value = T(0);
  __device__ __forceinline__ static Loaded load(const T* p) { return {*p}; }
  template <typename Accumulators>
  __device__ __forceinline__ void add_to(Accumulators& acc) const {
    const T lanes[1] = {value};
    acc.add(lanes);
  }
};

// kVec outputs at `at`, 16 bytes at a time (kVec * sizeof(Out) a multiple of 16, `at`
// aligned to 16).
template <typename Out, int kVec>
__device__ __forceinline__ void store_vectors(Out* at, const Out (&values)[kVec]) {
#pragma unroll
  for (int k = 0; k < int{kVec * sizeof(Out) / 16}; ++k) {
    uint4 chunk;
    memcpy(&chunk, reinterpret_cast<const char*>(values) + 16 * k, 16);
    reinterpret_cast<uint4*>(at)[k] = chunk;
  }
}

// A thread's kVec adjacent outputs, the first `valid` of them (fewer in the last column
// of an outer slice whose inner extent is not a whole number of vectors); 16 bytes at a
// time where they fill whole aligned vectors: four 4-byte stores a thread left 68% of the
// full sum's speed on 8 x 2^24 dim 0. Exact sums are all certified before any fallback
// (whose call would otherwise keep the other sums alive across it: 52-112 bytes of
// spills a thread at 64 registers), then stored as vectors where all of them certified.
template <typename P, typename Out, typename C, int kVec>
__device__ __forceinline__ void store_outputs(const P& policy, Out* y, int64_t q,
                                              const C (&sums)[kVec], int valid) {
  constexpr bool kVectors = kVec * sizeof(Out) % 16 == 0;
  const bool whole = valid == kVec && reinterpret_cast<uintptr_t>(y + q) % 16 == 0;
  if constexpr (P::kExact && !std::is_same_v<Out, CertifiedSum>) {
    Out values[kVec];
    bool certified[kVec];
    bool all_certified = true;
#pragma unroll
    for (int j = 0; j < kVec; ++j) {
      certified[j] = exact::certify<Out>(P::certificate(sums[j]), &values[j]);
      all_certified = all_certified && certified[j];
    }
    if constexpr (kVectors) {
      if (whole && all_certified) return store_vectors(y + q, values);
    }
#pragma unroll
    for (int j = 0; j < kVec; ++j) {
      if (j < valid) y[q + j] = certified[j] ? values[j] : policy.recomputed(q + j);
    }
  } else {
    if constexpr (!P::kExact && kVectors) {
      if (whole && policy.order.ndim == 0) {
        Out values[kVec];
#pragma unroll
        for (int j = 0; j < kVec; ++j) values[j] = policy.template output<Out>(sums[j]);
        return store_vectors(y + q, values);
      }
    }
#pragma unroll
    for (int j = 0; j < kVec; ++j) {
      if (j < valid) policy.store(y, q + j, sums[j]);
    }
  }
}

// The thread's outputs where the inner dim is gapped: of its kVec columns from i0 of
// outer index o, those off the gaps, one by one (auto only: plan.cpp gaps no other sum).
template <typename P, typename Out, typename T, typename C, int kVec>
__device__ __forceinline__ void store_gapped_outputs(const P& policy, const Columns<T>& c, Out* y,
                                                     int64_t o, int64_t i0, const C (&sums)[kVec],
                                                     int valid) {
  if constexpr (!P::kExact) {
#pragma unroll
    for (int j = 0; j < kVec; ++j) {
      const unsigned i = static_cast<unsigned>(i0 + j);
      // (A span read in whole vectors ends in positions past its last output.)
      if (j < valid && c.gaps.keeps(i) && c.gaps.kept_index(i) < c.kept_inner)
        policy.store(y, o * c.kept_inner + c.gaps.kept_index(i), sums[j]);
    }
  }
}

// A folded lane's kVec sums (Columns::fold that divides kVec, one vector a folded row:
// the general kernel): lane j of every vector holds output j % fold, so halves are added
// until the first `fold` hold the outputs (both powers of two; a fixed order, as every
// sum here). (Wider folded rows take ColumnLoad::kFolded, store_folded below. Giving
// these to it too, with this branch and the general kernel's partial row dropped, changed
// ptxas's schedule of the general kernel: three float32 named shapes lost 4-8% on an
// H200, 32 x 256 x 56 x 56 over dim 1 3646 -> 3361 GB/s, one machine, 2026-11-28; as it
// is, the general kernels compile to the same cubin as before folded rows widened.)
template <typename C, int kVec>
__device__ __forceinline__ void fold_sums(C (&sums)[kVec], int64_t fold) {
#pragma unroll
  for (int half = kVec / 2; half >= 1; half /= 2) {
    if (half >= fold) {
#pragma unroll
      for (int j = 0; j < half; ++j) sums[j] += sums[j + half];
    }
  }
}

// Folded rows (Columns::fold; one tile, gridDim.y splits), the block's sums stored, by
// every thread of the block. Lane tx_index of the first ty row (a holder) has the sums of
// positions tx_index * kVec + j of the folded rows; the block's sum of output q is that
// of positions q, q + fold, q + 2 fold, ... in that order (of a block with gaps, the
// output of position q, where it is one: Columns::gaps). Split, each block leaves its
// `fold` sums and the last one adds them: split s to thread s % groups of output q, then
// the groups in order. (Leaving a folded row's positions, as other column tiles leave
// theirs, the finish's limit of loads a thread gave rows of 23 vectors 64 splits, a third
// of an H200: bfloat16 203103 x 46 over dim 0 ran at 0.86x the unfolded columns; 0.97x
// with the block's sums, 2026-11-28.)
template <typename P, typename Out, typename T, typename C, int kVec>
__device__ __forceinline__ void store_folded(const P& policy, const Columns<T>& c,
                                             const ColumnTiling& tiling, Out* y,
                                             const C (&sums)[kVec], C* shared, C* partials,
                                             unsigned* tickets, unsigned tx_index, bool holder) {
  static_assert(
      int64_t{kVec} * LaunchTuning::kColumnFoldMaxVectors <= int64_t{kColumnThreads} * kTyChunk<C>,
      "a folded row's sums fit sum_down_ty's shared memory");
  const int fold = static_cast<int>(c.fold), row = static_cast<int>(c.inner);  // <= 512
  const int q = static_cast<int>(threadIdx.x);  // the output of threads below `fold`
  __syncthreads();  // sum_down_ty's reads are done
  if (holder) {
#pragma unroll
    for (int j = 0; j < kVec; ++j) shared[tx_index * kVec + j] = sums[j];
  }
  __syncthreads();
  C sum{};
  if (q < fold) {  // (position p is read by thread p % fold alone)
    sum = shared[q];
    for (int p = q + fold; p < row; p += fold) sum += shared[p];
  }
  // Position q's output, where it is one (a block with gaps: Columns::gaps).
  const bool stores = q < fold && c.gaps.keeps(q) && c.gaps.kept_index(q) < c.kept_inner;
  if (tiling.splits == 1) {
    if (stores) policy.store(y, c.gaps.kept_index(q), sum);
    return;
  }
  if (q < fold) partials[blockIdx.y * fold + q] = sum;
  __shared__ bool is_last;
  __syncthreads();  // the block's partials are stored before thread 0 releases them
  if (threadIdx.x == 0) is_last = is_last_block(tickets, tiling.splits);
  __syncthreads();  // thread 0's acquire covers the block's reads below
  if (!is_last) return;
  const int groups = kColumnThreads / fold, group = q / fold, output = q % fold;
  if (group < groups) {
    C part{};
#pragma unroll 4
    for (int64_t s = group; s < tiling.splits; s += groups)
      part += load_coherent(partials + s * fold + output);
    shared[q] = part;  // group * fold + output
  }
  __syncthreads();
  if (stores) {
    C total = shared[q];
    for (int g = 1; g < groups; ++g) total += shared[g * fold + q];
    policy.store(y, c.gaps.kept_index(q), total);
  }
  if (threadIdx.x == 0) tickets[0] = 0;  // for the next launch on this stream
}

// A flat tile's outputs stored across (Launch::store_across), by every thread of the
// block: the result holds side by side the outputs tiling.apart apart in the pass's
// order, so that a lane's kVec adjacent outputs would go to kVec result rows, a few bytes
// to each of its warp's sectors. The tile's outputs (consecutive ones, from its first
// lane's) are staged in shared memory as stored values; then thread e of the enumeration
// stores the output of residue e / across_rows, the (e % across_rows)-th of that residue
// from the tile's first: consecutive threads store side by side.
template <typename P, typename Out, typename T, typename C, int kVec>
__device__ __forceinline__ void store_across(const P& policy, const Columns<T>& c,
                                             const ColumnTiling& tiling, Out* y, int64_t tile,
                                             const C (&sums)[kVec], int64_t q, int valid,
                                             bool holder, C* shared) {
  Out* staged = reinterpret_cast<Out*>(shared);  // (launch_columns checks that they fit)
  const int64_t total = c.outer_size * tiling.columns;
  const int64_t first = tile * tiling.tx, last = min(first + int64_t{tiling.tx}, total) - 1;
  const int64_t q0 = first / tiling.columns * c.inner + first % tiling.columns * kVec;
  const int64_t q_end =
      last / tiling.columns * c.inner + min(c.inner, (last % tiling.columns + 1) * kVec);
  __syncthreads();  // sum_down_ty's reads of shared memory are done
  if (holder) {
#pragma unroll
    for (int j = 0; j < kVec; ++j) {
      if (j < valid) staged[q - q0 + j] = policy.template output<Out>(sums[j]);
    }
  }
  __syncthreads();
  const unsigned apart = tiling.apart.divisor, rows = tiling.across_rows.divisor;
  const unsigned b0 = tiling.apart.div(static_cast<unsigned>(q0));  // (outputs < 2^31)
  for (unsigned e = threadIdx.x; e < apart * rows; e += kColumnThreads) {
    const unsigned a = tiling.across_rows.div(e);
    const int64_t at = int64_t{b0 + (e - a * rows)} * apart + a;
    if (at >= q0 && at < q_end) policy.order.put(y, at, staged[at - q0]);
  }
  __syncthreads();  // before the next tile's sums overwrite the staged outputs
}

// A lane's outputs take kWarpStoreMinBytes or more (1-byte elements summed into 8-byte
// integers: 16 outputs, 128 bytes a lane): each lane's 16-byte stores of them lie a
// lane's width apart, 32 lines an instruction. Auto's warps of whole columns store them
// through shared memory instead (store_by_warp): side by side, 16 bytes a lane. On an
// H200 (2026-11-29, 13 shapes of seeds 187-239, WARPREDUCE_NO_WARP_STORES=1 the other
// arm): int8 5 x 198810 x 23 x 8 over dim 0 351 -> 219 us, 2 x 7 x 9795354 sliced 217 ->
// 165, 8636677 x 7 transposed 112 -> 81, bool 35632607 x 2 transposed 335 -> 161, 3 x
// 4977651 over dim 0 58 -> 36; the rest 1.00-1.37x, none slower.
constexpr int kWarpStoreMinBytes = 64;
template <typename P, typename Out, int kVec>
constexpr bool kWarpStores = !P::kExact && kVec * sizeof(Out) >= kWarpStoreMinBytes;

// The warp's outputs, where its 32 lanes hold consecutive whole columns (`plain`: kVec
// outputs each, stored at q in the pass's order), 1 KiB of them a round through the warp's
// share of `shared` (16 KiB a block of 16 warps): a round's lanes write their 16-byte
// chunks swizzled (chunk c of round lane r at r * kLaneChunks + (c ^ r)), so that neither
// they nor the warp's reads of consecutive chunks meet on a bank; the warp then stores
// the chunks side by side. Otherwise (the last columns of a slice, a partial column, an
// output order) every lane with a column calls `store`.
template <typename P, typename Out, typename C, int kVec, typename Store>
__device__ __forceinline__ void store_by_warp(const P& policy, Out* y, int64_t q,
                                              const C (&sums)[kVec], bool plain, C* shared,
                                              const Store& store) {
  constexpr int kLaneChunks = kVec * sizeof(Out) / 16;
  constexpr int kRoundChunks = 1024 / 16, kRoundLanes = kRoundChunks / kLaneChunks;
  static_assert(kLaneChunks * 16 == kVec * sizeof(Out) && kRoundLanes >= 1 &&
                32 % kRoundLanes == 0 && (kLaneChunks & (kLaneChunks - 1)) == 0);
  const unsigned lane = threadIdx.x % 32;
  const int64_t q_first = __shfl_sync(~0u, q, 0);
  const bool together = __all_sync(~0u, plain && q == q_first + int64_t{lane} * kVec &&
                                            reinterpret_cast<uintptr_t>(y + q_first) % 16 == 0);
  if (!together) return store();
  uint4* stage = reinterpret_cast<uint4*>(shared) + threadIdx.x / 32 * kRoundChunks;
  for (int round = 0; round < 32 / kRoundLanes; ++round) {
    if (static_cast<int>(lane) / kRoundLanes == round) {
      Out values[kVec];
#pragma unroll
      for (int j = 0; j < kVec; ++j) values[j] = policy.template output<Out>(sums[j]);
      const int r = static_cast<int>(lane) % kRoundLanes;
#pragma unroll
      for (int k = 0; k < kLaneChunks; ++k) {
        uint4 chunk;
        memcpy(&chunk, reinterpret_cast<const char*>(values) + 16 * k, 16);
        stage[r * kLaneChunks + (k ^ (r % kLaneChunks))] = chunk;
      }
    }
    __syncwarp();
    uint4* to = reinterpret_cast<uint4*>(y + q_first) + round * kRoundChunks;
#pragma unroll
    for (int k = 0; k < kRoundChunks / 32; ++k) {
      const int g = k * 32 + static_cast<int>(lane), r = g / kLaneChunks, chunk = g % kLaneChunks;
      to[g] = stage[r * kLaneChunks + (chunk ^ (r % kLaneChunks))];
    }
    __syncwarp();  // before the next round overwrites the stage
  }
}

// Two blocks an SM where the accumulators leave room (64 registers a thread); the wide
// integer accumulators of 1- and 2-byte types, and exact sums, need more. Rounded exact
// sums (RoundedColumns) of 16-byte vectors had spilled 510 bytes a thread at two blocks
// (bfloat16; ptxas), their spills three times auto's loads and stores (ncu, bfloat16 8 x
// 2^24 over dim 0); at one block (up to 128 registers, none spilled) they ran 1.1-1.3x
// faster than two blocks in the vectors then chosen (16 bytes; 8 for float32 and for
// split tiles), on an H200: float32 8 x 2^24 over dim 0 238 -> 189 us, 64 x 512 x 1024
// over dim 1 67 -> 54, bfloat16 8 x 2^24 over dim 0 196 -> 158, 1024 x 2^16 66 -> 57.
// (16-bit tiles split over blocks had run in 8-byte vectors at two blocks: bfloat16 2^16
// x 128 over dim 0 36.6 -> 52.2 us, 2^14 x 1024 40.1 -> 42.9, against earlier runs; a
// lighter finish got most of it back: run_pass.cuh, kRoundedColumnMaxFinishLoads.)
template <typename P, int kVec>
constexpr int kColumnMinBlocks = sizeof(typename P::Acc) * kVec <= 32 ? 2 : 1;

// Where lane tx_index of `tile` works: its outer index and column (of kVec outputs), and
// whether it has one (lanes past the last column, or, flat, past the last tile, have none).
struct ColumnPlace {
  int64_t o, column;
  bool active;
};
__device__ __forceinline__ ColumnPlace place_column(const ColumnTiling& tiling, int64_t tile,
                                                    unsigned tx_index, int64_t outer_size) {
  const unsigned tx = tiling.tx;
  ColumnPlace at;
  if (tiling.outer_first) {
    const int64_t index = tile * tx + tx_index;
    const int64_t chunk = index / 32, per_group = tiling.column_group * tiling.outer_chunks;
    const int64_t within = chunk % per_group, lane = index % 32, span = tiling.outer_span;
    const int64_t column_set =
        chunk / per_group * tiling.column_group + within % tiling.column_group;
    at.column = column_set * (32 / span) + lane / span;
    at.o = within / tiling.column_group * span + lane % span;
    at.active = at.column < tiling.columns && at.o < outer_size;
  } else if (tiling.flat) {
    const int64_t index = tile * tx + tx_index;
    at.o = index / tiling.columns;
    at.column = index % tiling.columns;
    at.active = index < outer_size * tiling.columns;
  } else {
    at.o = tile / tiling.tiles_per_outer;
    at.column = (tile % tiling.tiles_per_outer) * tx + tx_index;
    at.active = at.column < tiling.columns;
  }
  return at;
}

// Phased columns (ColumnLoad::kPhased): rows not aligned alike read as aligned vectors.
// Row r's first element lies (r * reduced_stride) % kVec elements past a vector, a shift
// that repeats every few rows (its phases); the lanes down the reduced dim are a whole
// number of periods (launch_model.cpp), so that every row a lane reads has the same
// shift s. A lane of column t reads the aligned vector that holds its first output in
// each of its rows: positions s.. of it are its own outputs 0..kVec-1-s, positions ..s-1
// the last outputs of column t - 1. So a tile's lanes are numbered over one column more
// than an outer slice has (the last lane of a slice reads only for its neighbour), a tile
// is tx - 1 columns and its last lane reads the next tile's first column for the lane
// before it; at the end each lane's sums are rotated by s into its own part and its
// neighbour's, which goes to the lane before through shared memory (phased_sums).
__device__ __forceinline__ ColumnPlace place_phased(const ColumnTiling& tiling, int64_t tile,
                                                    unsigned tx_index, int64_t outer_size) {
  const int64_t per_outer = tiling.columns + 1;
  const int64_t index = tile * (tiling.tx - 1) + tx_index;
  ColumnPlace at;
  at.o = index / per_outer;
  at.column = index % per_outer;
  at.active = at.o < outer_size;
  return at;
}

// A phased lane's sums by position in its aligned vectors (shift s), rotated into its own
// outputs' (parts[j]: output j, from position j + s) and the column before's (parts[kVec
// + j]: its output j, from position j + s - kVec), each zero where the other holds it.
// (Zeros add nothing: a sum is never -0.0, its first addend being +0.0.)
template <typename C, int kVec>
__device__ __forceinline__ void phased_sums(const C (&sums)[kVec], int s, C (&parts)[2 * kVec]) {
  C rotated[kVec];
#pragma unroll
  for (int p = 0; p < kVec; ++p) rotated[p] = sums[p];
  // rotated[p] = sums[(p + s) % kVec], in binary steps (selects, no indexing).
#pragma unroll
  for (int step = kVec / 2; step >= 1; step /= 2) {
    C next[kVec];
#pragma unroll
    for (int p = 0; p < kVec; ++p) next[p] = (s & step) ? rotated[(p + step) % kVec] : rotated[p];
#pragma unroll
    for (int p = 0; p < kVec; ++p) rotated[p] = next[p];
  }
#pragma unroll
  for (int p = 0; p < kVec; ++p) {
    const bool mine = p < kVec - s;
    parts[p] = mine ? rotated[p] : C{};
    parts[kVec + p] = mine ? C{} : rotated[p];
  }
}

// How a lane reads its column's rows (ColumnLoad, launch_model.h): whole aligned
// vectors; shifted ones (Loaded::load_shifted: two aligned vectors and a shift each, 4
// rows in flight rather than 8, the same registers); or its kVec elements one by one
// (Loaded::load_elements, ordinary loads whose sectors L1 serves to the lane's
// neighbours), 8 rows in flight as with vectors (16 rows of 8-byte elements spilled 296
// bytes at 64 registers), where the rows are not aligned alike and a lane a column would
// have only the few elements of a short reduced dim in flight (launch_model.h,
// kColumnElementsMinBytes). `whole`: the column's vectors are whole and, shifted, read
// within the data (Loaded::shifts_within), so that the load for the layout serves.
template <typename T, int kVec, ColumnLoad kLoad>
__device__ __forceinline__ Loaded<T, kVec> load_column_row(const T* p, int valid, bool whole) {
  using Load = Loaded<T, kVec>;
  if constexpr (kVec == 1) {
    return Load::load(p);
  } else {
    if (!whole || kLoad == ColumnLoad::kElements) return Load::load_elements(p, valid);
    if constexpr (kLoad == ColumnLoad::kShifted) return Load::load_shifted(p);
    if constexpr (kLoad == ColumnLoad::kCached) return Load::load_cached(p);
    return Load::load(p);
  }
}

// Whether a lane's column, `valid` of its kVec outputs, reads whole vectors (aligned, or
// shifted) in its rows first, first + step, ... below `end`, row_at(r) row r's address
// (auto's shifted vectors, and tiles at once; the general kernel's aligned vectors, and
// exact's, decide alone).
// Shifted ones must lie within the data: rows run up in memory (slices too: geometry.h),
// so the first and last rows tell (the last found only where needed: a 64-bit division
// for every tile cost flat tiles of short columns). A partial column of auto
// (whole_partials) reads whole vectors too where they lie within the data: the sums of
// its positions past `valid` are never stored, so whatever the vectors hold there (the
// next outer slice's elements, a gap's) costs nothing, and the column runs its warp's
// loop rather than one of its own, its elements one by one (the warp ran both in turn:
// bfloat16 167773 x 2 x 100 over dim 1 97.8 -> 71.8 us, 111849 x 3 x 100 72.7 -> 56.5,
// 22628 x 5 x 61 x 2 transposed 39.5 -> 31.5; H200, 2026-11-30, against
// WARPREDUCE_NO_WHOLE_PARTIALS=1). (Exact sums share a certificate among a lane's sums;
// folded rows' positions are all stored.)
template <typename P, typename T, int kVec, ColumnLoad kLoad, typename RowAt>
__device__ __forceinline__ bool whole_column_reads(const Columns<T>& c, const ColumnTiling& tiling,
                                                   int valid, int64_t first, int64_t end,
                                                   int64_t step, const RowAt& row_at) {
  using Load = Loaded<T, kVec>;
  if constexpr (kVec == 1) {
    return true;
  } else {
    const bool partial = valid < kVec;
    if (partial &&
        (P::kExact || kLoad == ColumnLoad::kFolded || c.fold > 1 || !tiling.whole_partials))
      return false;
    if ((kLoad == ColumnLoad::kShifted || partial) && first < end) {
      const int64_t last = first + (end - 1 - first) / step * step;
      return Load::shifts_within(row_at(first), tiling.begin, tiling.end) &&
             Load::shifts_within(row_at(last), tiling.begin, tiling.end);
    }
    return true;
  }
}

// A lane's kVec sums, those of outer index o's columns from i0, `valid` of them, stored.
// (Not folded: folded columns take the general kernel.)
template <typename P, typename Out, typename T, typename C, int kVec>
__device__ __forceinline__ void store_column(const P& policy, const Columns<T>& c, Out* y,
                                             int64_t o, int64_t i0, C (&sums)[kVec], int valid) {
  if (c.gaps.gapped()) {
    store_gapped_outputs(policy, c, y, o, i0, sums, valid);
  } else {
    store_outputs(policy, y, o * c.inner + i0, sums, valid);
  }
}

// Flat tiles with one lane down the reduced dim (ty == 1, no splits), kTiles of them a
// block at once (Launch::tiles_at_once: 2-byte elements, kernel="auto"): a lane loads the
// rows of its kTiles columns, all of them, before it adds any. The rows of a short
// reduced dim alone leave each lane 2-4 loads in flight (launch_model.cpp has what this
// gained, and where it lost). A kernel of its own, so that its registers (a lane's
// columns' pointers while their loads are in flight; their places found again to store)
// leave the general kernel's alone. A group with a column that is not whole (a partial
// vector, or a shifted one at the data's edge) sums its columns one by one.
// With one tile (Launch::lean), the same loop is the lean kernel of short columns: half
// the general kernel's rows in flight a lane (all of a reduced dim that short), at three
// blocks an SM: 40 registers, where ptxas spills 0-24 bytes of the lanes the launch model
// takes it for (with all of a lane's rows in flight, 64-272 bytes: float32, float64).
constexpr int kLeanColumnMinBlocks = 3;
template <int kTiles, typename P, int kVec>
constexpr int kAtOnceMinBlocks = kTiles == 1 ? kLeanColumnMinBlocks : kColumnMinBlocks<P, kVec>;
template <int kTiles, typename T, typename Out, int kVec, ColumnLoad kLoad, typename P>
__global__ void __launch_bounds__(kColumnThreads, (kAtOnceMinBlocks<kTiles, P, kVec>))
    columns_at_once(Columns<T> c, ColumnTiling tiling, Out* __restrict__ y, P policy) {
  using C = typename P::Sum;
  using Load = Loaded<T, kVec>;
  // The rows a lane has in flight, of each of its kTiles columns.
  constexpr int kRows = kTiles == 1 ? lean_column_rows(kVec, sizeof(T), kLoad)
                                    : column_rows_in_flight(kVec, sizeof(T), kLoad) / kTiles;
  // The sums of the lane's column in `tile` (add_rows adds its rows), stored.
  auto sum_and_store = [&](int64_t tile, auto&& add_rows) {
    const ColumnPlace at = place_column(tiling, tile, threadIdx.x, c.outer_size);
    const int64_t i0 = at.column * kVec;
    const int valid = static_cast<int>(min(int64_t{kVec}, c.inner - i0));
    typename P::template Columns<kVec> acc;
    add_rows(acc, valid);
    C sums[kVec];
#pragma unroll
    for (int j = 0; j < kVec; ++j) sums[j] = acc.sum(j);
    store_column(policy, c, y, at.o, i0, sums, valid);
  };
  for (int64_t tile = int64_t{blockIdx.x} * kTiles; tile < tiling.tiles;
       tile += int64_t{gridDim.x} * kTiles) {
    const T* base[kTiles];  // nullptr: the lane has no column in that tile
    bool whole = true;
#pragma unroll
    for (int g = 0; g < kTiles; ++g) {
      const ColumnPlace at = place_column(tiling, tile + g, threadIdx.x, c.outer_size);
      const int64_t i0 = at.column * kVec;
      base[g] = at.active ? c.x + c.outer.offset(at.o) + i0 * c.inner_stride : nullptr;
      const int valid = static_cast<int>(min(int64_t{kVec}, c.inner - i0));
      whole = whole && (!at.active || whole_column_reads<P, T, kVec, kLoad>(
                                          c, tiling, valid, 0, c.length, 1, [&](int64_t r) {
                                            return base[g] + r * c.reduced_stride;
                                          }));
    }
    if (!whole) {
      for (int g = 0; g < kTiles; ++g) {
        if (base[g] == nullptr) continue;
        sum_and_store(tile + g, [&](auto& acc, int valid) {
#pragma unroll
          for (int r = 0; r < kRows; ++r) {
            if (r < c.length) {
              load_column_row<T, kVec, kLoad>(base[g] + r * c.reduced_stride, valid, false)
                  .add_to(acc);
            }
          }
        });
      }
      continue;
    }
    Load v[kTiles][kRows];
#pragma unroll
    for (int g = 0; g < kTiles; ++g) {
#pragma unroll
      for (int r = 0; r < kRows; ++r) {
        v[g][r] = base[g] != nullptr && r < c.length
                      ? load_column_row<T, kVec, kLoad>(base[g] + r * c.reduced_stride, kVec, true)
                      : Load{};
      }
    }
#pragma unroll
    for (int g = 0; g < kTiles; ++g) {
      if (base[g] == nullptr) continue;
      sum_and_store(tile + g, [&](auto& acc, int) {
#pragma unroll
        for (int r = 0; r < kRows; ++r) v[g][r].add_to(acc);  // zeros past the length
      });
    }
  }
}

// The body of the kernel `columns`: a block a tile (a grid-stride loop past the grid; or
// columns_at_once). kAcross: the tiles store across (store_across).
template <typename T, typename Out, int kVec, ColumnLoad kLoad, typename P, bool kAcross>
__device__ __forceinline__ void columns_body(const Columns<T>& c, const ColumnTiling& tiling,
                                             Out* __restrict__ y,
                                             typename P::Sum* __restrict__ partials,
                                             unsigned* __restrict__ tickets, const P& policy) {
  // Each output's running sum (P::Columns): for auto acc_t, float for float32 (as the
  // full reduction). In double the conversions cost 5-9% (NCHW dim 1: 3731 -> 3503 GB/s,
  // 2^19 x 100 dim 0: 3609 -> 3272, H200): float it is, combined in double (P::Sum) once
  // a thread's rows are done.
  using C = typename P::Sum;
  // 128 bytes in flight a thread with vectors (or their elements one by one); 32 elements
  // without (2^23 x 3 dim 0, 4-byte loads: 16 in flight ran at 0.96x torch.sum), and 32
  // 4-byte words of 1- or 2-byte ones.
  constexpr bool kShifted = kLoad == ColumnLoad::kShifted;
  constexpr bool kFolded = kLoad == ColumnLoad::kFolded;
  constexpr bool kPhased = kLoad == ColumnLoad::kPhased;
  constexpr int kUnroll = column_rows_in_flight(kVec, sizeof(T), kLoad);
  __shared__ __align__(16) C shared[kColumnThreads * kTyChunk<C>];
  static_assert(!kWarpStores<P, Out, kVec> || sizeof(shared) >= kColumnThreads / 32 * 1024,
                "store_by_warp stages 1 KiB a warp");
  const unsigned tx = tiling.tx, ty = tiling.ty;
  const unsigned tx_index = threadIdx.x % tx, ty_index = threadIdx.x / tx;
  const int64_t split = blockIdx.y;
  const int64_t r_begin = split * tiling.rows_per_split;
  const int64_t r_end = min(c.length, r_begin + tiling.rows_per_split);

  for (int64_t tile = blockIdx.x; tile < tiling.tiles; tile += gridDim.x) {
    const ColumnPlace at = kPhased ? place_phased(tiling, tile, tx_index, c.outer_size)
                                   : place_column(tiling, tile, tx_index, c.outer_size);
    const int64_t o = at.o, column = at.column;
    // Phased: a lane reads (at.active) past the columns it stores (place_phased).
    const bool reads = at.active;
    const bool active = kPhased ? reads && column < tiling.columns && tx_index + 1 < tx : reads;
    const int64_t i0 = column * kVec;
    const int valid = static_cast<int>(min(int64_t{kVec}, c.inner - i0));  // outputs of the column
    const T* base = c.x + c.outer.offset(o) + i0 * c.inner_stride;
    typename P::template Columns<kVec> acc;
    // The lane's rows added into acc, row r at row_at(r).
    auto add_rows = [&](auto&& row_at) {
      using Load = Loaded<T, kVec>;
      const int64_t step = ty, first = r_begin + ty_index;
      // Folded rows whose last vector is partial: that row by elements, after the rest.
      const bool partial_last = c.last_row_elements != 0 && r_end == c.length;
      const int64_t r_whole = partial_last ? r_end - 1 : r_end;
      // kUnroll rows in flight; the last round predicated rather than a row at a time.
      auto sum_rows = [&](auto load) {
        for (int64_t r = first; r < r_whole; r += kUnroll * step) {
          Load v[kUnroll];
#pragma unroll
          for (int u = 0; u < kUnroll; ++u) {
            const int64_t row = r + u * step;
            v[u] = row < r_whole ? load(row_at(row)) : Load{};
          }
#pragma unroll
          for (int u = 0; u < kUnroll; ++u) v[u].add_to(acc);  // zeros past r_whole
        }
      };
      // A column whose vectors are partial (but for whole_column_reads) or reach past the
      // data reads its elements one by one, in a loop of its own: the choice made at each
      // load cost every column 28 bytes of spills (ptxas, 16-bit columns).
      if constexpr (kVec == 1) {
        sum_rows([](const T* p) { return Load::load(p); });
      } else if constexpr (kPhased) {
        // Aligned vectors, row_at's rows aligned alike; the lane's first and last rows read
        // within the data (only they can reach past it: the rows run up in memory).
        if (first >= r_end) return;
        const int64_t last = first + (r_end - 1 - first) / step * step;
        int64_t from = first, to = last + step;
        if (reinterpret_cast<uintptr_t>(row_at(first)) < tiling.begin) {
          Load::load_within(row_at(first), tiling.begin, tiling.end).add_to(acc);
          from += step;
        }
        const bool last_past =
            from <= last && reinterpret_cast<uintptr_t>(row_at(last) + kVec) > tiling.end;
        if (last_past) to = last;
        for (int64_t r = from; r < to; r += kUnroll * step) {
          Load v[kUnroll];
#pragma unroll
          for (int u = 0; u < kUnroll; ++u) {
            const int64_t row = r + u * step;
            v[u] = row < to ? Load::load(row_at(row)) : Load{};
          }
#pragma unroll
          for (int u = 0; u < kUnroll; ++u) v[u].add_to(acc);  // zeros past `to`
        }
        if (last_past) Load::load_within(row_at(last), tiling.begin, tiling.end).add_to(acc);
      } else {
        // Auto's shifted vectors, 4-byte loads (2-byte pairs, 1-byte words) and 2-byte quads only
        // (whole_column_reads). This kernel's wider aligned vectors keep their partial
        // columns' own loop: with whole reads there, ptxas scheduled them so that float32
        // columns of 8 rows ran 8-13% slower (8192 x 8 x 256 over dim 1 20.7 -> 22.5 us,
        // H200, small extents, 2026-11-30). Exact's shifted vectors keep the check as it
        // was written before (the same test for them): both compile to the SASS of before.
        constexpr bool kWholeReads =
            (kShifted || (kLoad == ColumnLoad::kVectors && kVec * sizeof(T) <= 8)) && !P::kExact;
        bool edge = valid < kVec;
        if constexpr (kWholeReads) {
          edge =
              !whole_column_reads<P, T, kVec, kLoad>(c, tiling, valid, first, r_end, step, row_at);
        } else if (kShifted && first < r_end) {
          const int64_t last = first + (r_end - 1 - first) / step * step;
          edge = edge || !Load::shifts_within(row_at(first), tiling.begin, tiling.end) ||
                 !Load::shifts_within(row_at(last), tiling.begin, tiling.end);
        }
        if (edge || kLoad == ColumnLoad::kElements) {
          sum_rows([&](const T* p) { return Load::load_elements(p, valid); });
        } else if constexpr (kShifted) {
          sum_rows([](const T* p) { return Load::load_shifted(p); });
        } else if constexpr (kLoad == ColumnLoad::kCached) {
          sum_rows([](const T* p) { return Load::load_cached(p); });
        } else {
          sum_rows([](const T* p) { return Load::load(p); });
        }
        if constexpr (kFolded) {
          // The lanes' shares of that row: a whole vector, part of one, or nothing.
          const int64_t last_valid = min(int64_t{kVec}, c.last_row_elements - i0);
          if (partial_last && last_valid > 0 && r_whole >= first && (r_whole - first) % step == 0) {
            Load::load_elements(row_at(r_whole), static_cast<int>(last_valid)).add_to(acc);
          }
        } else if (partial_last && r_whole >= first && (r_whole - first) % step == 0) {
          // (tx == 1: the row is the lane's one vector.)
          Load::load_elements(row_at(r_whole), c.last_row_elements).add_to(acc);
        }
      }
    };
    // Phased: the lane's rows from the aligned vector that holds its first output, every
    // row it reads shifted alike (shift: elements).
    int shift = 0;
    if constexpr (kPhased) {
      const int64_t first_row = r_begin + ty_index;
      shift = static_cast<int>(reinterpret_cast<uintptr_t>(base + first_row * c.reduced_stride) %
                               16 / sizeof(T));
      if (reads) add_rows([&](int64_t row) { return base - shift + row * c.reduced_stride; });
    } else if (active) {
      auto plain = [&](int64_t row) { return base + row * c.reduced_stride; };
      // Slices only where the plan makes them (auto's passes; folded rows have none).
      if constexpr (!P::kExact && !kFolded) {
        if (c.slices > 1) {
          add_rows([&](int64_t row) { return base + c.row_offset(row); });
        } else {
          add_rows(plain);
        }
      } else {
        add_rows(plain);
      }
    }
    C sums[kVec];
#pragma unroll
    for (int j = 0; j < kVec; ++j) sums[j] = acc.sum(j);
    if constexpr (kPhased) {
      // Own and neighbour's parts summed down the tile, then each lane's own plus what the
      // lane after read of its outputs (the last lane's own is no output's).
      C parts[2 * kVec];
      phased_sums(sums, reads ? shift : 0, parts);
      sum_down_ty(parts, shared, tx, ty);
      __syncthreads();  // shared is free (sum_down_ty's last reads, or an earlier tile's)
      if (ty_index == 0) {
#pragma unroll
        for (int j = 0; j < kVec; ++j) shared[tx_index * kVec + j] = parts[kVec + j];
      }
      __syncthreads();
      if (ty_index == 0 && tx_index + 1 < tx) {
#pragma unroll
        for (int j = 0; j < kVec; ++j) sums[j] = parts[j] + shared[(tx_index + 1) * kVec + j];
      }
      __syncthreads();  // before shared's next use
    } else {
      sum_down_ty(sums, shared, tx, ty);
    }
    if constexpr (kFolded) {  // the one tile
      store_folded(policy, c, tiling, y, sums, shared, partials, tickets, tx_index,
                   ty_index == 0 && active);
      return;
    }
    const int64_t q = o * c.inner + i0;  // the first output of the thread's column
    auto store = [&] {
      if (c.fold > 1) {
        fold_sums(sums, c.fold);
        store_outputs(policy, y, o * c.fold, sums, static_cast<int>(c.fold));
      } else if (c.gaps.gapped()) {
        store_gapped_outputs(policy, c, y, o, i0, sums, valid);
      } else {
        store_outputs(policy, y, q, sums, valid);
      }
    };
    if (tiling.splits == 1) {
      if constexpr (kAcross) {
        store_across(policy, c, tiling, y, tile, sums, q, valid, ty_index == 0 && active, shared);
      } else if constexpr (kWarpStores<P, Out, kVec>) {
        // (ty 1: every lane holds its columns' sums, and shared memory is the warps' own.)
        if (ty == 1 && tiling.warp_stores) {
          const bool plain =
              active && valid == kVec && c.fold == 1 && !c.gaps.gapped() && policy.order.ndim == 0;
          store_by_warp(policy, y, q, sums, plain, shared, [&] {
            if (active) store();
          });
        } else if (ty_index == 0 && active) {
          store();
        }
      } else {
        if (ty_index == 0 && active) store();
      }
      continue;
    }

    // Several splits: the grid is exactly one block per (tile, split).
    const int64_t width = int64_t{tx} * kVec;  // outputs a tile holds
    C* tile_partials = partials + tile * tiling.splits * width;
    if (ty_index == 0) {
#pragma unroll
      for (int j = 0; j < kVec; ++j) tile_partials[split * width + tx_index * kVec + j] = sums[j];
    }
    __shared__ bool is_last;
    __syncthreads();  // the block's partials are stored before thread 0 releases them
    if (threadIdx.x == 0) is_last = is_last_block(tickets + tile, tiling.splits);
    __syncthreads();  // thread 0's acquire covers the block's reads below
    if (!is_last) return;
#pragma unroll
    for (int j = 0; j < kVec; ++j) sums[j] = C{};
#pragma unroll 4
    for (int64_t s = ty_index; s < tiling.splits; s += ty) {
#pragma unroll
      for (int j = 0; j < kVec; ++j)
        sums[j] += load_coherent(tile_partials + s * width + tx_index * kVec + j);
    }
    sum_down_ty(sums, shared, tx, ty);
    if constexpr (kAcross) {
      store_across(policy, c, tiling, y, tile, sums, q, valid, ty_index == 0 && active, shared);
    } else {
      if (ty_index == 0 && active) store();
    }
    if (threadIdx.x == 0) tickets[tile] = 0;  // for the next launch on this stream
    return;
  }
}

// The kernel: columns_body, whose paths return at their ends, then the tail if any.
template <typename T, typename Out, int kVec, ColumnLoad kLoad, typename P, bool kAcross = false>
__global__ void __launch_bounds__(kColumnThreads, (kColumnMinBlocks<P, kVec>))
    columns(Columns<T> c, ColumnTiling tiling, Out* __restrict__ y,
            typename P::Sum* __restrict__ partials, unsigned* __restrict__ tickets, P policy) {
  columns_body<T, Out, kVec, kLoad, P, kAcross>(c, tiling, y, partials, tickets, policy);
  finish_with_tail<kColumnThreads>(policy);
}

}  // namespace warpreduce
