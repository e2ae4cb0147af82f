// Carrying out the launch model's decisions (launch_model.h): one pass of the geometry
// by the kernel and launch shape chosen for it, and the chain of passes of a plan, for
// kernel="auto" (auto_passes) and kernel="exact" (exact_passes). Templates, instantiated
// dtype by dtype in the passes_*.cu files, so that the compiler builds them in parallel.
#pragma once

#include <ATen/ops/empty.h>
#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAStream.h>

#include <algorithm>
#include <limits>

#include "../pass_chain.h"
#include "../plan.h"
#include "columns.cuh"
#include "rows.cuh"
#include "runtime.h"
#include "slabs.cuh"
#include "tail.cuh"

namespace warpreduce {

// The policy of the same kind for the short-row kernels and the full reduction (auto
// keeps acc_t in the first and exact float32 lanes in the second; exact is one policy).
template <typename Q, typename P>
Q policy_variant(const P& policy) {
  if constexpr (std::is_same_v<Q, P>) {
    return policy;
  } else if constexpr (has_tail_v<Q>) {
    return Q{{policy.repeat, policy.order}, policy.tail};
  } else {
    return Q{policy.repeat, policy.order};
  }
}

template <typename T>
uintptr_t address_of(const T* p) {
  return reinterpret_cast<uintptr_t>(p);
}

// A thread of a split should read at least this many 16-byte vectors.
constexpr int64_t kSplitMinVectorsPerThread = SplitPolicy::kUnroll;
// The last block of a column split reads at most this many partials a thread; of rounded
// exact sums (RoundedSum: four fields to load and add), kRoundedColumnMaxFinishLoads. With
// 32, that one block's reads held bfloat16 2^16 x 128 over dim 0 (one tile, 128 splits) to
// 51.8 us; with 8, 39.4 (2^14 x 1024: 42.6 -> 39.7; eight other split column shapes of
// exact_dims.py within 3%; H200, 2026-11-27, one build, a scratch knob). Certified sums
// (ExactChain's columns) keep 32: their blocks' own rows cost more, and with 16 float32
// 2^19 x 100 over dim 0 took 166 us, not 108. (8-byte vectors at two blocks an SM, the
// finish of two tiles for one, gave 2^16 x 128 32.8 us but lost 10-17% on bfloat16 4096 x
// 4096, 2^20 x 32, 2^22 x 8 and float32 4096 x 4096 over dim 0.)
constexpr int64_t kColumnMaxFinishLoads = 32;
constexpr int64_t kRoundedColumnMaxFinishLoads = 8;

// Several blocks a row, as many as fill the GPU (one row: the full reduction), or a
// block a row when the rows are many.
template <typename T, typename Out, typename Rows, typename P>
void split_rows(const Rows& rows, Out* y, const at::Tensor& like, const P& policy) {
  constexpr int64_t kLanes = 16 / sizeof(T);
  constexpr unsigned kThreads = SplitPolicy::kThreads;
  constexpr auto kernel = rows_split<T, Out, Rows, P>;
  const cudaStream_t stream = c10::cuda::getCurrentCUDAStream();
  const int64_t capacity = resident_blocks<kernel>(kThreads);
  const int64_t per_block = int64_t{kThreads} * kSplitMinVectorsPerThread * kLanes;
  int64_t parts = std::clamp<int64_t>(ceil_div(rows.length, per_block), 1,
                                      std::max<int64_t>(1, capacity / rows.count));
  parts = std::min(parts, max_split_blocks() * 2 / rows.count);  // what the scratch holds
  TORCH_CHECK(rows.count * parts <= std::numeric_limits<int>::max(), "warpreduce.sum: ", rows.count,
              " rows do not fit one launch");
  if (parts <= 1) {
    kernel<<<rows.count, kThreads, 0, stream>>>(rows, 1u, y, nullptr, nullptr, policy);
  } else {
    const SplitScratch scratch = split_scratch(like);
    kernel<<<rows.count * parts, kThreads, 0, stream>>>(
        rows, static_cast<unsigned>(parts), y, static_cast<typename P::Sum*>(scratch.partials),
        scratch.tickets, policy);
  }
  C10_CUDA_KERNEL_LAUNCH_CHECK();
}

// The tiles of a columns launch in vectors of `vector` elements (before outer-first groups).
inline int64_t column_tiles(int64_t outer_size, int64_t inner, int64_t vector,
                            const Launch& launch) {
  const int64_t columns = ceil_div(inner, vector);
  return launch.flat ? ceil_div(outer_size * columns, int64_t{launch.tx})
                     : outer_size * ceil_div(columns, int64_t{launch.tx});
}

template <typename T, typename Out, int kVec, ColumnLoad kLoad, bool kAcross, typename P>
void launch_columns_kernel(const Columns<T>& c, const Launch& launch, Out* y,
                           const at::Tensor& like, const P& policy) {
  using C = typename P::Sum;
  constexpr auto kernel = columns<T, Out, kVec, kLoad, P, kAcross>;
  const cudaStream_t stream = c10::cuda::getCurrentCUDAStream();
  ColumnTiling t;
  t.tx = launch.tx;
  t.ty = launch.ty;
  t.flat = launch.flat;
  t.columns = ceil_div(c.inner, kVec);
  t.tiles_per_outer = ceil_div(t.columns, t.tx);
  t.tiles = column_tiles(c.outer_size, c.inner, kVec, launch);
  if constexpr (kLoad == ColumnLoad::kPhased) {
    // A tile is tx - 1 columns of an outer slice's columns + 1 (columns.cuh, place_phased);
    // each lane's rows shifted alike; the parts handed over fit the shared memory.
    TORCH_INTERNAL_ASSERT(launch.flat && !launch.outer_first && !launch.store_across && t.ty >= 2 &&
                              c.inner_stride == 1 && c.slices == 1 && c.fold == 1 &&
                              int64_t{t.ty} * c.reduced_stride * int64_t{sizeof(T)} % 16 == 0 &&
                              address_of(c.x) % sizeof(T) == 0,
                          "warpreduce: ", launch.describe());
    t.tiles = ceil_div(c.outer_size * (t.columns + 1), int64_t{t.tx} - 1);
  }
  t.outer_first = launch.outer_first;
  t.outer_span = launch.outer_span;
  t.column_group = 1;
  t.outer_chunks = ceil_div(c.outer_size, t.outer_span);
  if (t.outer_first) {
    TORCH_INTERNAL_ASSERT(t.flat && t.tx % 32 == 0, "warpreduce: ", launch.describe());
    // As many columns a group as a tile has warps, evenly: a block reads whole spans of
    // its outer indices' rows. Groups of a 32-byte sector's columns only (two 16-byte
    // vectors) read less of each DRAM page at a time: on an H100, bool 806 x 7 x 38762
    // permuted over dim 1 ran at 405 GB/s that way, 568 in groups of 13 columns (213 in
    // result order); bfloat16 384 x 2 x 4 x 20686 permuted over dim 2 at 698 and 1045
    // (429). WARPREDUCE_OUTER_FIRST_SECTORS=1 groups a sector's columns: a knob for
    // measuring (benchmarks), read once.
    static const bool sectors = knob_is_set("WARPREDUCE_OUTER_FIRST_SECTORS");
    TORCH_INTERNAL_ASSERT(t.outer_span >= 1 && t.outer_span <= 32 && 32 % t.outer_span == 0,
                          "warpreduce: ", launch.describe());
    const int64_t warps = t.tx / 32, per_set = 32 / t.outer_span;
    const int64_t sets = ceil_div(t.columns, per_set);  // a warp's columns: a column set
    t.column_group = sectors ? std::max<int64_t>(1, 32 / (kVec * int64_t{sizeof(T)}) / per_set)
                             : ceil_div(sets, ceil_div(sets, warps));
    const int64_t groups = ceil_div(sets, t.column_group);
    t.tiles = ceil_div(groups * t.column_group * t.outer_chunks * 32, t.tx);
  }
  // Strides are not negative (geometry.h): the data runs from c.x to its last element.
  const int64_t last_row = c.last_row_elements ? c.last_row_elements : c.inner;
  const T* last = c.x + c.outer.offset(c.outer_size - 1) + c.row_offset(c.length - 1) +
                  (last_row - 1) * c.inner_stride;
  t.begin = address_of(c.x);
  t.end = address_of(last + 1);
  // WARPREDUCE_NO_WHOLE_PARTIALS=1: partial columns read their elements one by one, as
  // before whole_column_reads (columns.cuh): a knob for measuring the two side by side.
  static const bool no_whole_partials = knob_is_set("WARPREDUCE_NO_WHOLE_PARTIALS");
  t.whole_partials = !no_whole_partials;
  // WARPREDUCE_NO_WARP_STORES=1: every lane stores its own wide outputs (a knob for
  // measuring).
  static const bool no_warp_stores = knob_is_set("WARPREDUCE_NO_WARP_STORES");
  t.warp_stores = !no_warp_stores;
  if constexpr (kAcross) {
    // (The launch model's conditions, and the kernel's: flat tiles whose outputs, fewer
    // than 2^31, fit the shared memory staged.)
    TORCH_INTERNAL_ASSERT(
        t.flat && !t.outer_first && c.gaps.period.divisor == 1 && c.fold == 1 &&
            c.outer_size * c.inner < (int64_t{1} << 31) &&
            int64_t{t.tx} * kVec * int64_t{sizeof(Out)} <= LaunchTuning::kStoreAcrossBytes &&
            policy.order.ndim > 0,
        "warpreduce: ", launch.describe());
    t.apart = FastDivmod(static_cast<unsigned>(c.result_apart));
    t.across_rows =
        FastDivmod(static_cast<unsigned>((int64_t{t.tx} * kVec - 1) / c.result_apart + 2));
  }
  // When the tiles fill less than half the GPU, a tile's rows split over blocks, while every
  // thread keeps kColumnRowsPerSplitLane rows and the finish stays cheap. Only then: a split
  // writes and reads splits x outputs partial sums, and splitting for more rounds of
  // blocks (to shorten the last one) cost 32 x 2^20 dim 0 a third of its speed.
  const int64_t capacity = resident_blocks<kernel>(kColumnThreads);
  t.splits = 1;
  if (2 * t.tiles <= capacity) {
    // (Whole rounds: ceil_div here put 63 tiles x 5 splits of bfloat16 859 x 34 x 2 x 234
    // over dim 0 on 264 resident blocks, a second round of 51, at 0.66x torch.sum.)
    const int64_t fill = capacity / t.tiles;
    const int64_t enough_rows = c.length / (int64_t{t.ty} * LaunchTuning::kColumnRowsPerSplitLane);
    const int64_t finish_loads =
        std::is_same_v<C, RoundedSum> ? kRoundedColumnMaxFinishLoads : kColumnMaxFinishLoads;
    // (Folded rows: the splits leave `fold` sums each, not a tile's.)
    const int64_t cheap_finish = kLoad == ColumnLoad::kFolded
                                     ? finish_loads * kColumnThreads / c.fold
                                     : finish_loads * t.ty / kVec;
    t.splits = std::clamp<int64_t>(std::min({fill, enough_rows, cheap_finish}), 1,
                                   max_split_blocks() / t.tiles);
  }
  t.rows_per_split = ceil_div(c.length, t.splits);
  t.splits = ceil_div(c.length, t.rows_per_split);
  // Tiles at once: auto only (exact's policies hold more registers a column), with no
  // tail (choose_tail), and only the elements the launch model takes them for (no kernels
  // compiled for the rest).
  constexpr bool kAtOnce = !P::kExact && !has_tail_v<P> && !kAcross &&
                           sizeof(T) == LaunchTuning::kColumnAtOnceBytes &&
                           kLoad != ColumnLoad::kFolded && kLoad != ColumnLoad::kPhased;
  const int64_t at_once = !kAtOnce || t.splits > 1 ? 1 : launch.tiles_at_once;
  TORCH_INTERNAL_ASSERT(
      at_once == 1 || (t.ty == 1 && t.flat && c.fold == 1 && (at_once == 2 || at_once == 4) &&
                       at_once * c.length <= column_rows_in_flight(kVec, sizeof(T), kLoad)),
      "warpreduce: ", launch.describe());
  // Lean columns (Launch::lean): compiled only for the lanes the launch model takes them
  // for, and for auto without a tail (the general kernel finishes with the tail).
  constexpr bool kLean = !P::kExact && !has_tail_v<P> && !kAcross &&
                         lean_column_lanes(kVec, sizeof(T), sizeof(typename P::Acc), kLoad);
  if (kLean && launch.lean && t.splits == 1) {
    if constexpr (kLean) {
      TORCH_INTERNAL_ASSERT(t.ty == 1 && t.flat && c.fold == 1 && c.slices == 1 &&
                                c.length <= lean_column_rows(kVec, sizeof(T), kLoad),
                            "warpreduce: ", launch.describe());
      constexpr auto lean = columns_at_once<1, T, Out, kVec, kLoad, P>;
      const int64_t blocks = std::min(t.tiles, resident_blocks<lean>(kColumnThreads) * 8);
      lean<<<blocks, kColumnThreads, 0, stream>>>(c, t, y, policy);
    }
  } else if (at_once > 1) {
    if constexpr (kAtOnce) {
      const int64_t blocks = std::min(ceil_div(t.tiles, at_once), capacity * 8);
      if (at_once == 2) {
        columns_at_once<2, T, Out, kVec, kLoad, P>
            <<<blocks, kColumnThreads, 0, stream>>>(c, t, y, policy);
      } else {
        columns_at_once<4, T, Out, kVec, kLoad, P>
            <<<blocks, kColumnThreads, 0, stream>>>(c, t, y, policy);
      }
    }
  } else if (t.splits == 1) {
    const int64_t blocks = std::min(t.tiles, capacity * 8);
    kernel<<<blocks, kColumnThreads, 0, stream>>>(c, t, y, nullptr, nullptr, policy);
  } else {
    // The partials in the stream's scratch where they fit (an allocation less a call:
    // 3-5 us of host time on the H100 machine, torch.profiler), else their own memory.
    // A tile's split leaves its tx x kVec sums; of folded rows, the block's `fold` sums.
    const int64_t split_sums = kLoad == ColumnLoad::kFolded ? c.fold : int64_t{t.tx} * kVec;
    const int64_t partial_bytes = t.tiles * t.splits * split_sums * int64_t{sizeof(C)};
    const SplitScratch scratch = split_scratch(like);
    at::Tensor memory;
    void* partials = scratch.partials;
    if (partial_bytes > scratch.partial_bytes) {
      memory = at::empty({partial_bytes}, like.options().dtype(at::kByte));
      partials = memory.data_ptr();
    }
    const dim3 grid(static_cast<unsigned>(t.tiles), static_cast<unsigned>(t.splits));
    kernel<<<grid, kColumnThreads, 0, stream>>>(c, t, y, static_cast<C*>(partials), scratch.tickets,
                                                policy);
  }
  C10_CUDA_KERNEL_LAUNCH_CHECK();
}

// launch_columns_kernel, storing across where the launch says so (Launch::store_across:
// auto's last pass, whose tiles' outputs fit the shared memory staged; no other
// instantiations, for build time: a pass that writes a float wider than it reads carries
// sums to a later one).
template <typename T, typename Out, int kVec, ColumnLoad kLoad, typename P>
void launch_columns(const Columns<T>& c, const Launch& launch, Out* y, const at::Tensor& like,
                    const P& policy) {
  constexpr bool kMayBeLast = std::is_integral_v<Out> || sizeof(Out) <= sizeof(T);
  if constexpr (!P::kExact && !has_tail_v<P> && kMayBeLast && kLoad != ColumnLoad::kFolded &&
                kLoad != ColumnLoad::kPhased &&
                int64_t{kColumnThreads} * kVec * int64_t{sizeof(Out)} <=
                    LaunchTuning::kStoreAcrossBytes) {
    if (launch.store_across) {
      return launch_columns_kernel<T, Out, kVec, kLoad, true>(c, launch, y, like, policy);
    }
  }
  TORCH_INTERNAL_ASSERT(!launch.store_across, "warpreduce: ", launch.describe());
  launch_columns_kernel<T, Out, kVec, kLoad, false>(c, launch, y, like, policy);
}

// One pass of the geometry: the launch model's choice, carried out.
template <typename T, typename Out, typename P>
void run_pass(const T* x, const ReductionPass& pass, Out* y, const at::Tensor& like,
              const P& policy) {
  const cudaStream_t stream = c10::cuda::getCurrentCUDAStream();
  const Launch launch = choose_launch(
      pass,
      ElementShape{int64_t{sizeof(T)}, address_of(x), int64_t{sizeof(Out)},
                   /*auto_sums=*/!P::kExact, P::kExact ? 0 : int64_t{sizeof(typename P::Acc)}},
      device_shape());
  // Gapped rows are long enough for a group of lanes or blocks a row (plan.cpp), the
  // kernels that read them; gapped inner dims take columns, or slab tiles where they are
  // made for them (the launch model).
  TORCH_INTERNAL_ASSERT(!pass.gapped() || launch.kind == LaunchKind::kRowsGrouped ||
                            launch.kind == LaunchKind::kRowsSplit ||
                            (launch.kind == LaunchKind::kColumns && !P::kExact) ||
                            (launch.kind == LaunchKind::kSlabs && pass.tiled_gaps && !P::kExact),
                        "warpreduce: a gapped pass for ", launch.describe());
  // The rows of a pass, gapped or not, for the row kernels' general layout.
  StridedRows<T> rows{x, pass.outer, pass.outer_size, pass.length, pass.reduced_stride};
  if (pass.gapped()) rows.gaps = GapMask(pass.period, pass.width);
  // WARPREDUCE_ROW_EDGES_LAST=1 loads a lane's edge elements after its vectors, and
  // WARPREDUCE_NO_GAP_MASK=1 chooses a gapped row's lanes vector by vector, as before
  // (rows.cuh, thread_share): knobs for measuring.
  static const bool edges_last = knob_is_set("WARPREDUCE_ROW_EDGES_LAST");
  static const bool no_gap_mask = knob_is_set("WARPREDUCE_NO_GAP_MASK");
  rows.edges_first = !edges_last;
  rows.uniform_gaps = !no_gap_mask;
  switch (launch.kind) {
    case LaunchKind::kRowsVectors: {
      using Q = typename P::Short;
      // WARPREDUCE_EXACT_SERIAL_ROW_STORES=1: a group's exact rows certified by its lane 0
      // in turn, as before (rows.cuh): a knob for measuring the two side by side.
      static const bool serial_stores = knob_is_set("WARPREDUCE_EXACT_SERIAL_ROW_STORES");
      const int64_t row_stride = pass.outer.ndim == 1 ? pass.outer.strides[0] : 0;
      auto launch_vectors = [&](auto covering) {
        constexpr auto kernel = rows_vectors<T, Out, Q, decltype(covering)::value>;
        const int64_t blocks =
            std::min(ceil_div(pass.outer_size * launch.group, kVectorRowsThreads),
                     resident_blocks<kernel>(kVectorRowsThreads));
        kernel<<<blocks, kVectorRowsThreads, 0, stream>>>(
            x, pass.outer_size, static_cast<unsigned>(launch.vectors_per_row), launch.group,
            !serial_stores, y, policy_variant<Q>(policy), row_stride,
            static_cast<unsigned>(pass.length),
            address_of(x + (pass.outer_size - 1) * row_stride + pass.length));
      };
      TORCH_INTERNAL_ASSERT(!launch.covering || (pass.outer.ndim == 1 && pass.reduced_stride == 1),
                            "warpreduce: ", launch.describe());
      if (launch.covering) {
        launch_vectors(std::true_type{});
      } else {
        launch_vectors(std::false_type{});
      }
      break;
    }
    case LaunchKind::kRowsShort: {
      using Q = typename P::Short;
      auto launch_short = [&](auto row_slots) {
        constexpr int kRowSlots = decltype(row_slots)::value;
        constexpr auto kernel = rows_short<T, Out, Q, kRowSlots>;
        const int64_t rows_a_block = int64_t{kShortRowThreads} * kShortRowsPerLane<T, kRowSlots>;
        const int64_t blocks = std::min(ceil_div(pass.outer_size, rows_a_block),
                                        resident_blocks<kernel>(kShortRowThreads));
        kernel<<<blocks, kShortRowThreads, 0, stream>>>(rows, y, policy_variant<Q>(policy));
      };
      TORCH_INTERNAL_ASSERT(launch.row_slots == 2 || launch.row_slots == 4 || launch.row_slots == 8,
                            "warpreduce: ", launch.describe());
      if (launch.row_slots == 2) launch_short(std::integral_constant<int, 2>{});
      if (launch.row_slots == 4) launch_short(std::integral_constant<int, 4>{});
      if (launch.row_slots == 8) launch_short(std::integral_constant<int, 8>{});
      break;
    }
    case LaunchKind::kSlabs:
    case LaunchKind::kColumnTiles: {
      using Q = typename P::Short;
      constexpr auto kernel = tiled<T, Out, Q>;
      Tiles<T> g{};
      g.x = x;
      g.outer = pass.outer;
      g.outer_size = pass.outer_size;
      g.length = pass.length;
      g.reduced_stride = pass.reduced_stride;
      g.inner = pass.inner;
      g.inner_stride = pass.inner_stride;
      g.column_tiles = launch.kind == LaunchKind::kColumnTiles;
      g.segments = static_cast<int>(launch.segments);
      g.slots = static_cast<int>(launch.slots);
      g.slots_div = FastDivmod(static_cast<unsigned>(g.slots));
      if (g.column_tiles) {
        g.width = launch.width;
        g.tiles_per_outer = ceil_div(pass.inner, g.width);
        g.tiles = pass.outer_size * g.tiles_per_outer;
      } else {
        g.run = slabs_per_run(pass);
        g.stride = slab_stride(pass);
        g.span = slab_span(pass);
        g.per_segment = launch.per_segment;
        g.segments_per_run = ceil_div(g.run, g.per_segment);
        g.total_segments = pass.outer_size / g.run * g.segments_per_run;
        g.tiles = ceil_div(g.total_segments, g.segments);
        g.kept_inner = pass.kept_inner();
        g.gapped = pass.gapped();
        g.width_div = FastDivmod(static_cast<unsigned>(pass.width));
        g.period = static_cast<int>(pass.period);
        g.segment_outputs = FastDivmod(static_cast<unsigned>(g.per_segment * g.kept_inner));
        g.inner_div = FastDivmod(static_cast<unsigned>(g.kept_inner));
        g.rotate_rows = launch.rotate_rows;
      }
      const size_t shared = size_t{2} * launch.segments * launch.slots * 16;
      const int64_t blocks = std::min(g.tiles, resident_blocks<kernel>(kTileThreads, shared));
      kernel<<<blocks, kTileThreads, shared, stream>>>(g, launch.group, y,
                                                       policy_variant<Q>(policy));
      break;
    }
    case LaunchKind::kRowsGrouped: {
      constexpr auto kernel = rows_grouped<T, Out, P>;
      const int64_t capacity = resident_blocks<kernel>(kGroupedThreads) * kGroupedThreads;
      const int64_t blocks = std::min(ceil_div(pass.outer_size * launch.group, kGroupedThreads),
                                      capacity / kGroupedThreads);
      kernel<<<blocks, kGroupedThreads, 0, stream>>>(rows, launch.group, y, policy);
      break;
    }
    case LaunchKind::kRowsSplit: {
      const EvenRows<T> even{x, pass.outer.ndim == 0 ? 0 : pass.outer.strides[0], pass.outer_size,
                             pass.length};
      using Full = typename P::Full;
      if (pass.even_rows() && pass.outer_size == 1) {
        split_rows<T>(even, y, like, policy_variant<Full>(policy));
      } else if (pass.even_rows()) {
        split_rows<T>(even, y, like, policy);
      } else {
        split_rows<T>(rows, y, like, policy);
      }
      return;  // split_rows checked its launch
    }
    case LaunchKind::kColumns: {
      Columns<T> c{x,
                   pass.outer,
                   pass.outer_size,
                   pass.length,
                   pass.reduced_stride,
                   pass.inner,
                   pass.inner_stride,
                   GapMask(pass.period, pass.width),
                   pass.kept_inner()};
      c.result_apart = pass.result_apart;
      if (pass.slices > 1) {  // (the launch model gives sliced passes the general kernel)
        TORCH_INTERNAL_ASSERT(
            launch.fold == 1 && launch.tiles_at_once == 1 && pass.rows() < (int64_t{1} << 31),
            "warpreduce: ", launch.describe(), " of ", pass.slices, " slices");
        c.length = pass.rows();
        c.slices = pass.slices;
        c.slice_stride = pass.slice_stride;
        c.slice_rows = FastDivmod(static_cast<unsigned>(pass.length));
      }
      // Folded rows (a dense block of outputs, rows one after another): one outer slice
      // of fold_vectors vectors, the last row partial where the elements are not a whole
      // number of them.
      // A gapped span whose last vector is partial, read whole where the storage goes on
      // (the span of x[..., ::2] ends one element short of a vector, and every warp that
      // held a partial column ran its rows twice, by vectors and by elements: float32 89 x
      // 19603 x 2 x 8 of a strided last dim, over dims (0, 1), 0.69x torch.sum, H200).
      auto pad_span = [&](int64_t vec) {
        if (pass.gapped()) c.inner = pass.read_span(vec);
      };
      // A block with gaps (launch_model.h, FoldBlock) stores the positions of its outputs
      // only: their mask, in the kernel's gaps (the folded kernel reads no other gaps).
      auto fold_into = [&](int64_t vec) {
        if (launch.fold == 1) return;
        const int64_t row = launch.fold_vectors * vec;  // elements of a folded row
        const FoldBlock block = fold_block(pass);
        TORCH_INTERNAL_ASSERT(block.span > 0 && block.span <= launch.fold &&
                                  pass.reduced_stride == launch.fold && row % launch.fold == 0 &&
                                  int64_t{launch.tx} >= launch.fold_vectors && !launch.flat &&
                                  (block.span == launch.fold || launch.load == ColumnLoad::kFolded),
                              "warpreduce: ", launch.describe(), " in vectors of ", vec);
        const int64_t elements = (pass.length - 1) * launch.fold + block.span;
        c.outer = OuterDims{};
        c.outer_size = 1;
        c.fold = launch.fold;
        if (block.span < launch.fold) c.gaps = GapMask(block.stride, block.width);
        c.kept_inner = block.count * block.width;
        c.inner = c.reduced_stride = row;
        c.length = ceil_div(elements, row);
        c.last_row_elements = static_cast<int>(elements % row);
      };
      if constexpr (sizeof(T) <= LaunchTuning::kColumnPairBytes) {
        // 4-byte words: pairs of 2-byte elements (rows aligned to 4 only), four 1-byte ones.
        constexpr int kWord = 4 / sizeof(T);
        if (launch.vector == kWord) {
          pad_span(kWord);
          return launch_columns<T, Out, kWord, ColumnLoad::kVectors>(c, launch, y, like, policy);
        }
      }
      if constexpr (sizeof(T) == LaunchTuning::kColumnPairBytes && !P::kExact) {
        // 8-byte quads of 2-byte elements (rows aligned alike to 8 bytes only): auto's.
        constexpr int kQuad = 8 / sizeof(T);
        if (launch.vector == kQuad) {
          pad_span(kQuad);
          return launch_columns<T, Out, kQuad, ColumnLoad::kVectors>(c, launch, y, like, policy);
        }
      }
      if (launch.vector > 1) {  // 16-byte vectors
        constexpr int kVec = 16 / sizeof(T);
        // (4-byte words and 8-byte quads returned above, where the instantiation has them.)
        TORCH_INTERNAL_ASSERT(launch.vector == kVec, "warpreduce: ", launch.describe(), " of ",
                              sizeof(T), "-byte elements");
        fold_into(kVec);
        pad_span(kVec);
        // Shifted vectors and elements one by one only for the element sizes the launch
        // model gives them to (no other instantiations: build time).
        if constexpr (sizeof(T) <= LaunchTuning::kColumnMaxShiftedBytes) {
          if (launch.load == ColumnLoad::kShifted)
            return launch_columns<T, Out, kVec, ColumnLoad::kShifted>(c, launch, y, like, policy);
        }
        if constexpr (sizeof(T) >= LaunchTuning::kColumnElementsMinBytes) {
          if (launch.load == ColumnLoad::kElements)
            return launch_columns<T, Out, kVec, ColumnLoad::kElements>(c, launch, y, like, policy);
        }
        // Phased columns: auto's passes without a tail (choose_tail), of the element sizes
        // the launch model gives them to, only.
        if constexpr (!P::kExact && !has_tail_v<P> && (sizeof(T) == 2 || sizeof(T) == 8)) {
          if (launch.load == ColumnLoad::kPhased)
            return launch_columns<T, Out, kVec, ColumnLoad::kPhased>(c, launch, y, like, policy);
        }
        // Cached vectors: auto's passes only (16-byte vectors: launch_model.cpp).
        if constexpr (!P::kExact) {
          if (launch.load == ColumnLoad::kCached)
            return launch_columns<T, Out, kVec, ColumnLoad::kCached>(c, launch, y, like, policy);
        }
        if constexpr (sizeof(T) >= LaunchTuning::kColumnFoldMinBytes) {
          if (launch.load == ColumnLoad::kFolded)
            return launch_columns<T, Out, kVec, ColumnLoad::kFolded>(c, launch, y, like, policy);
        }
        // (Exact sums read cached columns as whole vectors: no kernels of their own.)
        TORCH_INTERNAL_ASSERT(launch.load == ColumnLoad::kVectors ||
                                  (P::kExact && launch.load == ColumnLoad::kCached),
                              "warpreduce: ", launch.describe(), " of ", sizeof(T),
                              "-byte elements");
        launch_columns<T, Out, kVec, ColumnLoad::kVectors>(c, launch, y, like, policy);
      } else {
        launch_columns<T, Out, 1, ColumnLoad::kVectors>(c, launch, y, like, policy);
      }
      return;  // launch_columns checked its launch
    }
  }
  C10_CUDA_KERNEL_LAUNCH_CHECK();
}

// What a pass that is not the last writes for the next: combine_t as a tensor dtype
// (double for float32, float for 16-bit floats, int64 for integers).
template <typename T>
using carry_t = std::conditional_t<std::is_integral_v<combine_t<T>>, int64_t, combine_t<T>>;

// Where a pass writing to `y` puts its outputs: the plan's output_order on the last pass
// (the one that writes `out`), in order before it.
inline OutputOrder pass_output_order(const SumPlan& plan, const void* y, const at::Tensor& out) {
  if (y != out.const_data_ptr()) return OutputOrder();
  return OutputOrder(plan.output_order, plan.output_copies, plan.output_copy_stride);
}

// A plan's passes in one launch (TailLaunch): the first pass's kernel with a policy that
// carries the rest (tail.cuh). Instantiated in passes_tail_*.cu, apart from auto_passes
// (their kernels are as many again as the first passes', compiled in parallel); a dtype
// missing there fails the link, not a call.
template <typename T>
void auto_passes_with_tail(const SumPlan& plan, at::Tensor& out, const TailLaunch& launch) {
  using Carry = carry_t<T>;
  using Out = out_t<T>;
  using Tail = TailPass<Carry, Out>;
  const auto& passes = plan.passes;
  // Every pass's carries in one scratch tensor, each pass's 16-byte aligned.
  c10::SmallVector<int64_t, 4> starts{0};
  for (size_t k = 0; k + 1 < passes.size(); ++k) {
    const int64_t bytes = passes[k].outputs() * static_cast<int64_t>(sizeof(Carry));
    starts.push_back(starts.back() + ceil_div(bytes, 16) * 16);
  }
  const at::Tensor carried = at::empty({starts.back()}, out.options().dtype(at::kByte));
  auto carries = [&](size_t k) {
    return reinterpret_cast<Carry*>(static_cast<char*>(carried.data_ptr()) + starts[k]);
  };
  Out* y = out.mutable_data_ptr<Out>();
  const SplitScratch scratch = split_scratch(out);
  Tail tail{};
  tail.count = launch.steps;
  tail.blocks = static_cast<unsigned>(launch.blocks);
  for (int k = 0; k < launch.steps; ++k) {
    const ReductionPass& pass = passes[k + 1];
    tail.steps[k] = {
        carries(k),        pass.outer,          pass.outputs(),
        pass.length,       pass.reduced_stride, pass.inner,
        pass.inner_stride, launch.groups[k],    k + 1 < launch.steps ? carries(k + 1) : nullptr};
  }
  tail.y = y;
  tail.ticket = scratch.tail_ticket;
  tail.policy = AutoSums<Carry>{passes.back().repeat, pass_output_order(plan, y, out)};
  using P = WithTail<AutoSums<T>, Tail>;
  const ReductionPass& first = passes[0];
  run_pass(kernel_data<T>(plan.input), first, carries(0), out,
           P{{first.repeat, OutputOrder()}, tail});
}

// Whether a plan's passes after the first run in its launch (choose_tail).
template <typename T>
TailLaunch tail_launch(const SumPlan& plan) {
  if (plan.passes.size() < 2) return {};
  const ReductionPass& first = plan.passes[0];
  const T* x = kernel_data<T>(plan.input);
  const ElementShape element{int64_t{sizeof(T)}, address_of(x), int64_t{sizeof(carry_t<T>)}};
  const DeviceShape device = device_shape();
  return choose_tail(first, choose_launch(first, element, device), int64_t{sizeof(T)},
                     c10::ArrayRef<ReductionPass>(plan.passes).slice(1), device);
}

// The passes of an auto sum (pass_chain.h), each by the launch model's kernel; those
// after the first in the first's launch where choose_tail says so.
template <typename T>
void auto_passes(const SumPlan& plan, at::Tensor& out) {
  const TailLaunch tail = tail_launch<T>(plan);
  if (tail.fused) return auto_passes_with_tail<T>(plan, out, tail);
  run_pass_chain<carry_t<T>>(plan, kernel_data<T>(plan.input), out.mutable_data_ptr<out_t<T>>(),
                             out, [&](const auto* x, const ReductionPass& pass, auto* y) {
                               using In = std::remove_cv_t<std::remove_pointer_t<decltype(x)>>;
                               run_pass(x, pass, y, out,
                                        AutoSums<In>{pass.repeat, pass_output_order(plan, y, out)});
                             });
}

constexpr unsigned kCarryThreads = 256;

// A pass of an exact sum after the first: its elements are the certified sums the pass
// before left, combined a thread an output (these passes are short: the first pass took
// the innermost reduced dim, or a longer one above rows of at most 16, geometry.cpp),
// then stored as the policy says (certified again for the next pass, or rounded and
// checked at the last).
template <typename T, typename Out>
__global__ void __launch_bounds__(kCarryThreads)
    exact_carry_pass(Columns<CertifiedSum> c, Out* __restrict__ y, ExactSums<T> policy) {
  const int64_t outputs = c.outer_size * c.inner;
  for (int64_t q = int64_t{blockIdx.x} * kCarryThreads + threadIdx.x; q < outputs;
       q += int64_t{gridDim.x} * kCarryThreads) {
    const CertifiedSum* first = c.x + c.outer.offset(q / c.inner) + (q % c.inner) * c.inner_stride;
    CertifiedSum sum = exact::zero_sum();
    for (int64_t r = 0; r < c.length; ++r) sum += first[r * c.reduced_stride];
    policy.store(y, q, sum);
  }
}

// Whether a first pass of an exact sum of 16- or 32-bit floats combines RoundedSums,
// certified once an output (accumulate.cuh), rather than certified sums at every level.
// A rounded sum's bound is 0 where exact_in_double proves it exact, else gamma(depth)
// sum |x|, which must stay well below half an ulp of the result for the certificate to
// hold. The 16-bit results' ulps are so wide that it always does; a float32 output of
// n N(0, 1) values is exact in double to about 2^14 elements (its smallest element's
// last bit sets the limit) and past that fails its certificate with a chance of about
// depth sqrt(n) 2^-29, each failure a recomputation by one thread: float32 takes
// rounded sums up to 2^14 elements an output, the certified ones (exact chunks, exact
// combining) above.
// WARPREDUCE_EXACT_CERTIFY_EACH=1 certifies at every level everywhere: a knob for
// measuring the two side by side (benchmarks), read once.
inline bool certify_once(const ReductionPass& pass, size_t element_bytes) {
  static const bool certify_each = knob_is_set("WARPREDUCE_EXACT_CERTIFY_EACH");
  constexpr int64_t kFloatMaxLength = int64_t{1} << 14;
  return !certify_each && (element_bytes == 2 || pass.length <= kFloatMaxLength);
}

// Where an exact sum's outputs' elements are (ExactSource): the pass's own geometry for
// one pass; for several, the kept and reduced dims of the input's layout, if they fit
// (else nullopt: the sum then runs over plan.rows(), one pass).
template <typename T>
std::optional<ExactSource<T>> exact_source(const SumPlan& plan, const T* x) {
  ExactSource<T> source{};
  source.x = x;
  if (plan.passes.size() == 1) {
    const ReductionPass& pass = plan.passes[0];
    source.outer = pass.outer;
    source.inner = pass.inner;
    source.inner_stride = pass.inner_stride;
    source.reduced_ndim = 1;
    source.reduced_sizes[0] = pass.length;
    source.reduced_strides[0] = pass.reduced_stride;
    return source;
  }
  c10::SmallVector<LayoutDim, 8> kept, reduced;
  for (const LayoutDim& d : plan.layout) (d.reduced ? reduced : kept).push_back(d);
  if (kept.size() > kMaxOuterDims + 1 || reduced.size() > ExactSource<T>::kMaxReducedDims) {
    return std::nullopt;
  }
  source.inner = 1;
  source.inner_stride = 0;
  if (!kept.empty()) {
    source.inner = kept.back().size;
    source.inner_stride = kept.back().stride;
    kept.pop_back();
  }
  source.outer.ndim = static_cast<int>(kept.size());
  for (size_t d = 0; d < kept.size(); ++d) {
    source.outer.sizes[d] = kept[d].size;
    source.outer.strides[d] = kept[d].stride;
  }
  source.reduced_ndim = static_cast<int>(reduced.size());
  for (size_t d = 0; d < reduced.size(); ++d) {
    source.reduced_sizes[d] = reduced[d].size;
    source.reduced_strides[d] = reduced[d].stride;
  }
  return source;
}

// The passes of an exact sum: the first by the launch model's kernel with certified
// sums, leaving them for the next (three doubles an output) when there are more passes;
// those by exact_carry_pass. The last pass rounds each output once and recomputes those
// whose certificate fails from the input itself.
template <typename T>
void exact_passes(const SumPlan& plan, at::Tensor& out) {
  const T* x = kernel_data<T>(plan.input);
  T* y = out.mutable_data_ptr<T>();
  const std::optional<ExactSource<T>> source = exact_source(plan, x);
  if (!source) {  // a layout of more dims than a source holds: one pass over a copy
    const at::Tensor rows = plan.rows();
    ReductionPass pass;
    pass.outer.ndim = 1;
    pass.outer.sizes[0] = pass.outer_size = plan.outputs;
    pass.outer.strides[0] = pass.length = plan.length;
    SumPlan one = plan;
    one.input = rows;
    one.passes.assign({pass});
    return exact_passes<T>(one, out);
  }
  const ExactSums<T> policy{*source};
  const cudaStream_t stream = c10::cuda::getCurrentCUDAStream();
  run_pass_chain<CertifiedSum>(
      plan, x, y, out, [&](const auto* in, const ReductionPass& pass, auto* to) {
        using In = std::remove_cv_t<std::remove_pointer_t<decltype(in)>>;
        using To = std::remove_pointer_t<decltype(to)>;
        if constexpr (std::is_same_v<In, T>) {
          if constexpr (!std::is_same_v<T, double>) {
            if (certify_once(pass, sizeof(T))) {
              return run_pass(in, pass, to, out, ExactRoundedSums<T>{*source});
            }
          }
          run_pass(in, pass, to, out, policy);
        } else {
          const Columns<CertifiedSum> c{
              in,         pass.outer,       pass.outer_size, pass.length, pass.reduced_stride,
              pass.inner, pass.inner_stride};
          const int64_t blocks =
              std::min(ceil_div(pass.outputs(), kCarryThreads),
                       resident_blocks<exact_carry_pass<T, To>>(kCarryThreads) * 4);
          exact_carry_pass<T, To><<<blocks, kCarryThreads, 0, stream>>>(c, to, policy);
          C10_CUDA_KERNEL_LAUNCH_CHECK();
        }
      });
}

// The instantiations, one line per dtype in the passes_*.cu files, a few dtypes a file so
// that they compile in parallel (one file of both 16-bit floats was the build's longest:
// 408 s of a 2-core build; the H200 machine's build took 221 s split, 235-330 before).
#define WARPREDUCE_INSTANTIATE_AUTO(T)                                                           \
  extern template void auto_passes_with_tail<T>(const SumPlan&, at::Tensor&, const TailLaunch&); \
  template void auto_passes<T>(const SumPlan& plan, at::Tensor& out);
#define WARPREDUCE_INSTANTIATE_TAIL(T) \
  template void auto_passes_with_tail<T>(const SumPlan&, at::Tensor&, const TailLaunch&);
#define WARPREDUCE_INSTANTIATE_EXACT(T) \
  template void exact_passes<T>(const SumPlan& plan, at::Tensor& out);

}  // namespace warpreduce
