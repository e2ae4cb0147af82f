// The launch model: for one pass of the reduction geometry (geometry.h) on a GPU, which
// kernel runs it and in what shape of launch. The one place where that is decided, from
// the pass's extents and strides, the element size, the alignment of the data and the
// device's size; cuda/sum_cuda.cu carries the decision out. Plain C++ (no CUDA, no
// ATen), so that the CPU-only build describes the decisions too (warpreduce_torch._C.plan)
// and the tests check them on machines without a GPU.
//
// The kernels (cuda/rows.cuh, cuda/slabs.cuh, cuda/columns.cuh) and when each is chosen:
//
//   rows_vectors  rows of at most 32 whole 16-byte vectors, one after the other: a
//                 vector a lane, a group of lanes a row; and short rows far apart, as
//                 the aligned vectors that cover each ("covering").
//   rows_short    rows of at most 8 elements otherwise (odd lengths, unaligned,
//                 stepped, apart): a lane a row, its elements in registers.
//   slabs         every output's elements within a short span of memory ("a slab": a
//                 short row, or a few rows of a few columns): tiles of whole slabs
//                 copied into shared memory with 16-byte copies whatever the alignment,
//                 strides or steps, then summed from there. Small reduced extents, small
//                 inner extents, unaligned and stepped views all land here when their
//                 slabs are short; short rows a gap apart under the reduced dim as one
//                 gapped span a slab, its kept positions summed (geometry.h,
//                 Gaps::tiled_gaps).
//   column_tiles  a short reduced dim above wide columns that 16-byte loads cannot read
//                 (stepped ones): tiles of a few rows of many columns through shared
//                 memory, the same kernel.
//   rows_grouped  longer rows (or rows far apart): a group of lanes a row.
//   rows_split    long rows, few of them, and the full reduction: several blocks a row.
//                 Both also read gapped rows (geometry.h): a strided last dim, or short
//                 rows a little apart summed together, as one span, the gaps masked.
//   columns       the reduced dim above kept adjacent outputs, slabs too long to tile:
//                 a lane per 16-byte vector of adjacent outputs (shifted, or read
//                 element by element, in rows not aligned alike; 4-byte pairs of 2-byte
//                 elements or words of 1-byte ones; or per output), the block's other
//                 lanes down the reduced dim, over several blocks when the
//                 outputs are few; when the reduced extent is short, each lane owns its
//                 outputs' whole column and lanes run across outer slices ("flat").
//                 Rows not aligned alike under longer reduced dims (8-byte elements,
//                 wide 2-byte ones that pairs cannot read): "phased", whole aligned
//                 vectors, each lane's rows shifted alike, its sums rotated into place
//                 at the end and the column before's part handed to its lane.
//                 Also gapped inner dims (geometry.h): kept dims a short gap apart, or
//                 a strided last dim, read as one span, the gaps' sums left unstored;
//                 and, over whole aligned vectors, a second reduced dim among the
//                 outer dims as slices of the rows (geometry.h, ReductionPass::slices);
//                 and folded ones: a dense block of a few outputs under a long
//                 reduced dim, rows one after another, read as one stream of whole
//                 vectors (a block of narrow rows with gaps too, the gaps read and
//                 left unstored); and padded ones (a narrow innermost dim in rows a gap
//                 apart, read as whole vectors). Where the result holds consecutive
//                 outer indices side by side (a permuted input's), a warp takes 32 of
//                 them in one column ("outer-first"), or, of a shorter outer extent,
//                 all of them in each of several columns; where it holds side by side
//                 outputs a few apart, flat tiles stage theirs in shared memory and
//                 store them in result order ("store across"). A lane's outputs
//                 of 64 bytes or more (1-byte elements into int64) go out a warp
//                 at a time, through shared memory (columns.cuh, store_by_warp).
//
// A plan whose passes after the first are short runs them inside the first's launch, by
// the blocks that finish last (choose_tail, cuda/tail.cuh): launches less.
#pragma once

#include <array>
#include <cstdint>
#include <string>

#include "geometry.h"

namespace warpreduce {

// What the launch model needs to know of the device (read once per device).
struct DeviceShape {
  int64_t sms = 132;              // multiprocessors
  int64_t threads_per_sm = 2048;  // resident threads a multiprocessor holds
};

// The element a pass reads: its size, and how its data are aligned. (Outputs: the
// kernels check each store's alignment.)
struct ElementShape {
  int64_t bytes = 4;           // sizeof(T); vectors are 16 bytes, 16 / bytes elements
  uintptr_t data_address = 0;  // the pass's first element
  int64_t out_bytes = 0;        // sizeof(Out), the outputs' (0: not known)
  bool auto_sums = true;        // auto's kernels: phased columns, 2-byte quads (exact's: not)
  // A lane's running sum of one output, its bytes (auto's acc_t: 4 for floats up to 4
  // bytes, 8 for float64 and integers; 0: not known, exact's): lean columns
  // (Launch::lean) only where a lane's sums fit their registers.
  int64_t acc_bytes = 0;
  bool vectors() const { return bytes <= 16 && 16 % bytes == 0; }
  int64_t lanes() const { return vectors() ? 16 / bytes : 1; }
};

enum class LaunchKind {
  kRowsVectors,
  kRowsShort,
  kSlabs,
  kColumnTiles,
  kRowsGrouped,
  kRowsSplit,
  kColumns
};

const char* launch_kind_name(LaunchKind kind);

// Whether the environment variable `name` is "1": the WARPREDUCE_* knobs that turn one
// decision off (or on) for measuring it side by side; each caller reads its knob once.
bool knob_is_set(const char* name);

// columns: how a lane reads its vector of a row (columns.cuh): whole aligned vectors;
// shifted ones, two aligned vectors and a shift each (rows not aligned alike, 1- and
// 2-byte elements); the vector's elements one by one (rows not aligned alike, 4- and
// 8-byte elements); or whole aligned vectors of folded rows (Launch::fold), a kernel of
// their own; or phased: whole aligned vectors of rows not aligned alike, each lane's rows
// shifted alike, its sums rotated into place at the end (columns.cuh, place_phased); or
// cached: whole aligned 16-byte vectors as kVectors, through L1, where a column's rows
// share sectors, so that the rows after the first find them there (launch_model.cpp,
// columns_launch, has what that gained).
enum class ColumnLoad { kVectors, kShifted, kElements, kFolded, kPhased, kCached };

struct Launch {
  LaunchKind kind = LaunchKind::kRowsSplit;
  // rows_vectors, slabs, rows_grouped: lanes that share one output (a power of two <= 32).
  unsigned group = 1;
  // rows_vectors: 16-byte vectors a row; covering: rows a stride apart of any alignment,
  // read as the aligned vectors that cover each (rows.cuh), vectors_per_row the most a
  // row takes.
  int64_t vectors_per_row = 0;
  bool covering = false;
  // rows_short: the elements a lane's slots hold of a row, the row's length to a power
  // of two (2, 4 or 8).
  int64_t row_slots = 0;
  // slabs, column_tiles: the segments of a tile (contiguous spans copied whole), the
  // 16-byte slots of shared memory each may take; slabs: the slabs a segment holds;
  // column_tiles: the outputs a tile holds.
  int64_t segments = 0;
  int64_t slots = 0;
  int64_t per_segment = 0;
  int64_t width = 0;
  // slabs of one segment a tile, a lane an output: each lane reads its output's rows from
  // row (its slab % length) on, wrapping round, where lanes reading row for row would
  // meet on the same shared-memory banks (slabs a multiple of 128 bytes apart).
  bool rotate_rows = false;
  // columns: elements a lane loads at once (1, a 16-byte vector, an 8-byte one or a 4-byte
  // one of 2-byte elements whose rows are aligned alike to 8 or 4 bytes only, a 4-byte one
  // of 1-byte elements), lanes across the outputs (tx) and down the reduced dim (ty),
  // whether a tile's lanes run across outer slices (flat), and the blocks a tile's rows
  // are split over.
  int64_t vector = 1;
  ColumnLoad load = ColumnLoad::kVectors;
  unsigned tx = 0, ty = 0;
  bool flat = false;
  // Flat columns whose result holds consecutive outer indices side by side (the pass's
  // outer_outputs_adjacent): a warp's lanes take outer_span consecutive outer indices of
  // each of 32 / outer_span columns rather than 32 consecutive columns, so that its
  // stores are adjacent (outer_span: 32, or the outer extent to a power of two).
  bool outer_first = false;
  unsigned outer_span = 32;
  int64_t splits = 1;
  // Flat columns of 2-byte elements with one lane down the reduced dim, in result order
  // (not outer-first): tiles a block takes at once (1, 2 or 4), so that a lane has the
  // rows of that many columns in flight where a short reduced dim alone leaves it few
  // (columns.cuh, columns_at_once).
  int64_t tiles_at_once = 1;
  // Flat columns with one lane down a reduced dim short enough for half a lane's rows in
  // flight, one tile a block: the lean kernel (columns.cuh, columns_at_once with one
  // tile), whose registers leave three blocks an SM where the general kernel's leave two.
  // (A pass that a tail finishes runs the general kernel, which has the tail.)
  bool lean = false;
  // Flat columns whose result holds side by side outputs pass.result_apart apart (a
  // permuted input's result, its innermost dim above a few kept columns in memory): a
  // tile's outputs are staged in shared memory and stored in result order, a warp 32
  // side by side, rather than a lane's adjacent outputs result_apart rows apart.
  bool store_across = false;
  // columns: where a block of a few outputs (one dense block of memory: the inner dim
  // and any outer dim right above it; or such a block with gaps, FoldBlock) sits under a
  // long reduced dim whose rows follow one another, the reduced stride: the rows run as
  // one stream of whole vectors, cut into folded rows of fold_vectors vectors (a whole
  // number of the stream's periods), a lane a vector of each, and the lanes' sums are
  // folded into the period's positions at the end, those of outputs stored (columns.cuh).
  // 1: not folded.
  int64_t fold = 1;
  int64_t fold_vectors = 1;
  std::string describe() const;
};

// columns: the rows a lane loads before it adds them (columns.cuh): 128 bytes of vectors
// (8 of 16 bytes, 16 of 8: 2-byte quads), 4 shifted ones (each two aligned loads), 32 of
// 4-byte loads.
constexpr int column_rows_in_flight(int64_t vector, int64_t bytes, ColumnLoad load) {
  return vector == 1 || vector * bytes == 4 ? 32
         : load == ColumnLoad::kShifted     ? 4
                                            : static_cast<int>(128 / (vector * bytes));
}

// The decision for `pass`, its elements described by `element`, on `device`.
Launch choose_launch(const ReductionPass& pass, const ElementShape& element,
                     const DeviceShape& device);

// The passes after the first, run inside the first pass's launch (cuda/tail.cuh): the
// blocks of the first kernel that finish last sum the first pass's outputs from L2 and
// write the result, launches less. A small input's call is bound by the host, which
// spends about 5 us on each launch; the tail stays within that while it is a few rounds
// of loads. The last pass of two runs on up to kMaxBlocks blocks (the fewest that keep
// it within the rounds), the passes of a longer plan one after another on one block.
// `groups`: lanes an output of each pass after the first (a power of two up to 32, 0 for
// the whole block); `rounds`: the loads in a row a lane of the tail waits for,
// kTailLoadsInFlight at a time, over all of them.
struct TailLaunch {
  static constexpr int kMaxSteps = 3;  // passes after the first
  // The tail's blocks wait for the rest of the grid in their SMs' slots: at most this
  // many and under half the SMs (choose_tail), so that the blocks still to run always
  // find room.
  static constexpr int64_t kMaxBlocks = 32;
  bool fused = false;
  int steps = 0;
  std::array<unsigned, kMaxSteps> groups{};
  int64_t blocks = 1;
  int64_t rounds = 0;
  std::string describe() const;
};

// Whether the passes after the first (`rest`) run in the launch of the first (`first`,
// launched as `first_launch`, reading elements of `element_bytes`) on `device`.
TailLaunch choose_tail(const ReductionPass& first, const Launch& first_launch,
                       int64_t element_bytes, c10::ArrayRef<ReductionPass> rest,
                       const DeviceShape& device);

// Folded columns (Launch::fold): the pass's outputs as one block of memory, `count`
// rows of `width` contiguous outputs (the inner dim) `stride` apart (the outer dim, at
// most one), `span` elements from the first to the last; span 0 where they are not.
// Folded, position p of a period (the reduced stride) is output (p / stride) * width +
// p % stride where p % stride < width (cuda/columns.cuh, store_folded).
struct FoldBlock {
  int64_t count = 1, stride = 0, width = 0, span = 0;
};
FoldBlock fold_block(const ReductionPass& pass);
// What reading one block of `bytes`-byte elements in a period of `period` elements costs
// in DRAM bytes: its elements, and each gap after a row, all of a gap under a 32-byte
// sector (the sectors either side hold elements), about a sector of a longer one.
int64_t block_read_bytes(const FoldBlock& block, int64_t period, int64_t bytes);

// slabs: the memory span of one output's elements, in elements, and whether slabs sit
// close enough together (in their innermost outer dim) for tiles of them to be copied
// whole. Shared with the kernel's launcher, which lays the tiles out.
int64_t slab_span(const ReductionPass& pass);
// The most segments a tile may have, for elements of `bytes` (cuda/slabs.cuh,
// kMaxTileSegments: the scalars at their ends are held two a thread of 256).
int64_t max_tile_segments(int64_t bytes);
// The stride between consecutive slabs of a tile: the innermost outer dim's (0 without
// outer dims: one slab) and how many slabs a run of them has.
int64_t slab_stride(const ReductionPass& pass);
int64_t slabs_per_run(const ReductionPass& pass);

// Tuning kept as data: each constant's comment says what it assumes and the measurement
// that set it (benchmarks/RESULTS.md has the tables).
struct LaunchTuning {
  // A tile in shared memory: 4 16-byte copies per thread of a 256-thread block, two
  // stages deep (the rows_tiled kernel this generalises: cp.async two deep took rows of 3
  // floats from 35% to 61% of a full sum's speed on an H200).
  static constexpr int64_t kTileBytes = 16 * 1024;
  // Column tiles for reduced dims up to this long, and tiles at least this wide (tiles of
  // 31 outputs, 7 rows of a sliced bfloat16 tensor, ran at 0.13x torch.sum).
  static constexpr int64_t kColumnTileMaxRows = 32;
  static constexpr int64_t kColumnTileMinWidth = 64;
  // Rows up to this long are tiled (longer rows took rows_grouped at 70-90% of a full
  // sum's speed on an H200), and slabs of columns up to kSlabMaxBytes: a tile then holds
  // at least 4 slabs (bfloat16 160 x 38 x 97 x 12 over dim 2 has slabs of 2.3 KiB).
  static constexpr int64_t kRowSlabMaxBytes = 1024;
  // Rows a gap apart (geometry.h, gapped rows) whose gaps reach past a 32-byte sector,
  // where at least this per cent of the span's sectors hold elements, periods of up to
  // kWideRowGapMaxPeriodBytes: one pass that reads at most 4/3 of the sectors, against
  // short rows or slabs and a second pass over their sums. On an H200 (2026-12-01,
  // against WARPREDUCE_NO_WIDE_ROW_GAPS=1, interleaved processes): float32 2858128 x 2 of
  // rows of 10 summed whole (80%; seed 431's second lowest, 0.73x torch.sum) 45.9 -> 30.4
  // us, 60000 x 64 x 6 of 14 over the last two dims (85%) 73.2 -> 58.5, 8192 x 64 x 27 of
  // 35 (97%) 31.7 -> 27.4, bfloat16 4096 x 64 x 40 of 56 (85%) 24.2 -> 13.5, 1000000 x 4
  // x 4 of 20 (80%) 53.4 -> 41.6, float64 4096 x 64 x 40 of 44 (90%) 36.0 -> 28.8. A
  // strided dim alone (x[..., ::k]) lost or tied, its other plan one pass too: bfloat16
  // 30000 x 80 of stride 17 over dim 1 31.1 -> 43.1 us, float32 8 x 65536 of stride 9 8.9
  // -> 9.7, float32 2 x 2000000 of 9 and float64 3000000 of 5 within 1%: left out.
  static constexpr int64_t kWideRowGapMinSectorPercent = 75;
  static constexpr int64_t kWideRowGapMaxPeriodBytes = 1024;
  // Rows a gap apart whose span is under kRowSlabMaxBytes (x[..., :2] of rows of 5,
  // summed over both dims) are gapped rows too, read by groups of lanes (rows_grouped),
  // where a row holds at most Numerator / Denominator times a partial sum's bytes
  // (pass_element_bytes), of elements of 4 bytes and more: summed apart, their first pass
  // writes two thirds of the bytes it reads or more. On an H200 (2026-12-03, against
  // WARPREDUCE_NO_SHORT_GAPPED_ROWS=1, two rounds; x torch.sum), rows of 2 or 3 float32s:
  // seed 479's lowest, 69 x 7 x 11 x 35 x 18 x 2 of rows of 5 sliced over (0, 2, 4, 5),
  // 0.47 -> 0.72-0.73 (54 -> 35 us), 1000000 x 18 x 2 of 5 1.63 -> 2.60, 3000 x 40 x 18 x
  // 2 over (0, 2, 3) 1.28 -> 2.02, 2000000 x 5 x 3 of 4 1.55 -> 2.36, 6 x 194727 x 5 x 2
  // offset 1.72 -> 1.97; int32 2000000 x 6 x 3 of 4 3.74 -> 4.49. Wider rows lost, their
  // partial sums fewer: int32 rows of 7 of 8 4.42 -> 2.84, float32 8 of 11 1.16 -> 0.99
  // (float64 5 of 7 gained, 1.32 -> 1.45; float32 27 of 32 1.05 -> 1.22, 100 of 104
  // tied). Narrower elements lost at any width, a lane a row reading a few bytes: bfloat16
  // rows of 2 of 3 3.44 -> 1.19, 3 of 6 2.42 -> 1.16, float16 3 of 5 4.48 -> 2.58, int16
  // 6 of 8 5.11 -> 4.83, int8 5 of 7 3.53 -> 1.11, 12 of 15 9.81 -> 4.15.
  static constexpr int64_t kShortGappedRowCarryNumerator = 3, kShortGappedRowCarryDenominator = 2;
  static constexpr int64_t kSlabMaxBytes = 4096;
  // A tile copies the memory between its slabs too: only where it is at most this share
  // of the tile (below a 32-byte sector it costs nothing: DRAM reads whole sectors).
  static constexpr int64_t kSlabGapNumerator = 1, kSlabGapDenominator = 2;
  // Rows of up to this many elements that rows_vectors does not take: a lane a row
  // (launch_model.cpp has the measurement; longer rows were not measured that way).
  static constexpr int64_t kShortRowMaxLength = 8;
  // Column vectors whose last one is partial (an inner extent of no whole number of
  // vectors: elements one by one there) or whose rows are not aligned alike (a sliced or
  // offset view, an odd row stride: two aligned loads and a shift each, 4 rows in
  // flight), where the inner extent holds at least kColumnMinUnalignedVectors vectors
  // and the reduced dim is at most kColumnMaxUnalignedRows long: they replace the tiles
  // (slabs, column tiles) of short reduced dims. Longer columns read elements one by
  // one, 32 in flight, which beat shifted vectors on an H100 (1967 x 23037 float32 over
  // dim 0: 0.83x torch.sum shifted, 1.03x by elements). Shifted vectors for elements of
  // up to kColumnMaxShiftedBytes only: on the H100's random shapes (seed 22) they beat
  // column tiles by 1.14-1.22x in 16-bit types (float16 26737654 x 2 over dim 1,
  // transposed: 1.38 -> 1.69x torch.sum) and lost 8-30% in 4- and 8-byte ones (float64
  // 28 x 574455 over dim 0: 0.89 -> 0.74x), whose tiles hold fewer outputs to add.
  static constexpr int64_t kColumnMinUnalignedVectors = 4;
  static constexpr int64_t kColumnMaxUnalignedRows = 32;
  // Longer reduced dims over aligned rows take a partial last vector too where the
  // partial columns are rare: one outer slice, or slices of at least this many vectors
  // (each warp that holds a partial column runs its rows twice, by vectors and by
  // elements). By elements, bfloat16 38 x 3008865 over dim 0 (a slice of a wider
  // tensor) ran at 0.61x torch.sum on an H200.
  static constexpr int64_t kColumnRarePartialVectors = 256;
  static constexpr int64_t kColumnMaxShiftedBytes = 2;
  // Larger elements there read a vector's elements one by one, a vector of outputs a lane
  // (columns.cuh, ColumnLoad::kElements; launch_model.cpp has what that gained), rather
  // than the column tiles above; 4-byte ones up to kColumnMaxElementsRows rows (float32
  // 45 x 1 x 7 x 5 x 34063 over dim 0: 0.88 -> 1.06x torch.sum, H200, seed 97; longer
  // ones not measured).
  static constexpr int64_t kColumnElementsMinBytes = 4;
  static constexpr int64_t kColumnMaxElementsRows = 64;
  // Longer reduced dims of 2-byte elements whose rows are an even number of elements
  // apart read 4-byte pairs (bfloat16 68 x 1077306 over dim 0, an element a lane: 0.56x
  // torch.sum on an H200, seed 53), and so do those past kColumnMaxShiftedRows rows that
  // shifted vectors would read: a lane's bytes in flight are then at least those of 4
  // shifted rows (float16 26 x 138 x 6 x 3921 over dim 0, 26 rows: 0.64 -> 0.88x
  // torch.sum, H200, seed 97, 2026-11-28; pairs lost at 2 and 7 rows, launch_model.cpp).
  // 9-16 rows, six shapes of seeds 187-199 (H200, 2026-11-28, against shifted vectors):
  // 1.00-2.14x, bfloat16 4375 x 16 x 1738 over dim 1 1574 -> 3368 GB/s (0.57 -> 1.22x
  // torch.sum), float16 4 x 5 x 11 x 526 x 267 transposed 946 -> 1312, bfloat16 805011 x
  // 9 permuted 1035 -> 1117.
  static constexpr int64_t kColumnPairBytes = 2;
  // Pairs under an odd inner extent, more than kColumnTileMaxRows rows and fewer outputs
  // than resident threads only from this many elements (launch_model.cpp; set when a
  // partial last pair was a loop of its own, not measured again since it is read whole).
  static constexpr int64_t kColumnOddPairsMinInner = 4096;
  static constexpr int64_t kColumnMaxShiftedRows = 8;
  // 8-byte quads of 2-byte elements in shifted vectors' place from this many rows
  // (launch_model.cpp: 2 rows lost, four tiles at once).
  static constexpr int64_t kColumnQuadMinRows = 4;
  // Phased columns (ColumnLoad::kPhased) of 2-byte elements where the inner dim holds at
  // least this many vectors (launch_model.cpp has the measurement: fewer lost, their few
  // columns split over blocks).
  static constexpr int64_t kColumnPhasedMinVectors = 2048;
  // ... where a lane has at least this many rows with the fewest lanes down a column
  // (the rows' phases; launch_model.cpp has the measurements: 24 first, 12 since).
  static constexpr int64_t kColumnPhasedRowsPerLane = 12;
  // Folded columns (Launch::fold) for elements of at least this many bytes: int8 2 x
  // 4428784 over dim 1 (transposed) took 31.9 us folded, 16 wide integer accumulators a
  // lane, and 16.8 us an element a lane (H200, seed 41).
  static constexpr int64_t kColumnFoldMinBytes = 2;
  // A folded row is at most a warp's vectors: a warp reads whole rows of it, and the
  // fold at the end adds at most 32 vectors' sums.
  static constexpr int64_t kColumnFoldMaxVectors = 32;
  // Blocks with gaps fold where the stream's bytes are at most this many times what the
  // block alone costs to read and the block's rows at most this many elements wide
  // (launch_model.cpp has the measurement: widths 3 and 5 gained up to 2.8x, 9-20 lost
  // 7-15%; a read of 1.3x the block's gained).
  static constexpr int64_t kColumnFoldMaxRead = 2;
  static constexpr int64_t kColumnGappedFoldMaxWidth = 5;
  // 1-byte elements in rows aligned alike to 4 bytes but not 16 read 4-byte words from this
  // many rows up, shifted vectors below (launch_model.cpp: 2 rows lost in words, 16 won;
  // between, not measured: from 8 rows a lane's words are the 32 bytes of a shifted row).
  static constexpr int64_t kColumnMinWordRows = 8;
  // A column lane sums at least this many rows (4 rounds of 8 vector loads; 2 rounds of
  // 32 scalar loads) before another lane shares its column.
  static constexpr int64_t kColumnRowsPerLane = 32;
  static constexpr int64_t kColumnRowsPerLaneScalar = 64;
  // A column split keeps at least this many rows a lane (a round of 8 vector loads): with
  // 32, the one tile of 3 x 8 x 357390 bfloat16 over dim -1 got 87 blocks (of 132 SMs).
  static constexpr int64_t kColumnRowsPerSplitLane = 8;
  // The lanes that flat tiles put down the reduced dim where the columns alone leave half
  // the GPU's lanes idle keep at least this many rows each (bfloat16 23 x 725094 over
  // dim 0, 90637 columns, 67% of an H200's lanes at two blocks an SM: 0.64x torch.sum
  // with a lane a column, 0.65x with two). 4, not the split's 8: on an H100 (2026-12-07,
  // a knob in one build, processes taking turns, two rounds), bfloat16 53 x 93991 over
  // dim 0 (seed 541's second lowest, 0.72x torch.sum on an H200) took 8 lanes down its 53
  // rows, not 4: 15.6 -> 12.8 us, 0.85 -> 0.99x torch.sum; of the other 76 column sums
  // measured (seed 541's flat columns under 1.6x torch.sum, 36 of seeds 503-521), one
  // more changed its plan, float32 61 x 150 x 758 offset over (0, 2), 27.0 -> 27.1 us.
  static constexpr int64_t kFlatColumnRowsPerLane = 4;
  // Flat columns of kColumnAtOnceBytes elements take up to this many tiles a block at
  // once (Launch::tiles_at_once), only while their blocks make kColumnAtOnceMinRounds
  // rounds of the resident blocks (other sizes and fewer rounds lost: launch_model.cpp).
  static constexpr int64_t kColumnMaxTilesAtOnce = 4;
  static constexpr int64_t kColumnAtOnceMinRounds = 3;
  static constexpr int64_t kColumnAtOnceBytes = 2;
  // Lean columns (Launch::lean) where a lane's sums take at most this many bytes of
  // registers: 1-byte elements' 16 int64 sums spilled 250-520 bytes at the lean kernel's
  // 40 registers (ptxas); 32 bytes (8 float sums of 16-bit elements) spilled up to 16.
  static constexpr int64_t kColumnLeanMaxSumBytes = 32;
  // Column loads through L1 (ColumnLoad::kCached) where a column's rows are under this
  // many bytes apart and share sectors: 16 or 48 (launch_model.cpp: both gained, on
  // every shape measured; 80 and 112, which share fewer, not measured alone).
  static constexpr int64_t kColumnCachedMaxRowBytes = 64;
  static constexpr unsigned kColumnThreads = 512;
  // A permuted result's innermost dim stays apart from the kept dims below it in memory
  // (outer-first columns store along it) unless those hold fewer than this many bytes
  // (plan.cpp has the measurement): then they merge, and the columns store across. A
  // tile stores across where it holds at least kStoreAcrossMinRuns outputs of each
  // result row it touches and its outputs fit kStoreAcrossBytes of shared memory.
  static constexpr int64_t kApartMinBytes = 64;
  static constexpr int64_t kStoreAcrossMinRuns = 8;
  static constexpr int64_t kStoreAcrossBytes = 16384;
  // Outer-first columns where a column's bytes are at most this many times its output's
  // (launch_model.cpp has the measurement: 301 and 12 rows lost 4.7x and 1.4x).
  static constexpr int64_t kOuterFirstMaxColumnBytes = 8;
  // Outer-first warps whose lanes' outputs take at most kOuterFirstNarrowLaneBytes span
  // at most kOuterFirstNarrowSpan outer indices (launch_model.cpp has the measurement).
  static constexpr int64_t kOuterFirstNarrowSpan = 4;
  static constexpr int64_t kOuterFirstNarrowLaneBytes = 32;
  // Rows shorter than this many vectors a lane go to a group per row only while the rows
  // keep a quarter of the GPU's threads busy; else several blocks a row.
  static constexpr int64_t kGroupedMaxVectorsPerLane = 64;
  // A group of lanes a row gives each lane at least this many of the row's loads, up to
  // a warp a row (launch_model.cpp has the measurement).
  static constexpr int64_t kGroupedLoadsPerLane = 4;
  // The last pass of two runs in the first's launch (choose_tail) for inputs of up to
  // kTailMaxInputBytes (where the host's launches bound the call), a tail of up to
  // kTailMaxRounds rounds of kTailLoadsInFlight loads a lane, in the smallest block a
  // first pass's kernel has (kTailThreads). On an H200 (2026-11-30, seeds 331 and 337,
  // against WARPREDUCE_NO_TAIL=1): tails of 1-4 rounds 0.4-12.0 us a call faster on 16
  // of 16 shapes (bfloat16 324 x 4 x 79 x 9 x 14 permuted 22.3 -> 12.0 us), of 5-12
  // rounds 0.9-6.4 us faster on 4 of 6 and 0.1-0.7 us slower on 2 (int32 2 x 4 x 217 x
  // 8 x 374 expanded, 7 rounds: 17.0 -> 17.7 us).
  static constexpr int64_t kTailMaxInputBytes = int64_t{64} << 20;
  static constexpr int64_t kTailMaxRounds = 12;
  // A last pass longer than that for one block runs on up to TailLaunch::kMaxBlocks
  // blocks, where that takes it to kTailMaxBlockRounds rounds: the fewest blocks that do.
  // A tail's rounds follow one another after the whole grid, while a launch of its own
  // loads every output at once: on an H200 (2026-12-01, against WARPREDUCE_NO_TAIL=1),
  // tails of 7-12 rounds on 2-26 blocks were 1.3-11.6 us slower than two launches on 14
  // of 14 shapes; of 2 rounds on 7-32 blocks 2.2-4.4 us faster on 4 of 7 (float32 64 x
  // 512 x 20 over (0, 2) 14.1 -> 10.4 us), the rest within the noise (arms interleaved);
  // in a run of one process an arm, 4 rounds lost and 1 gained nothing on 64 x 512 x 20
  // (15.7, 11.9 us against 10.4). Several passes after the first (one block) keep
  // kTailMaxRounds in all: float32 3 x 23 x 2 x 8 x 251 over (0, 2, 4), 3 rounds, 21.2 ->
  // 10.9 us.
  static constexpr int64_t kTailMaxBlockRounds = 2;
  static constexpr int64_t kTailLoadsInFlight = 4;
  static constexpr int64_t kTailThreads = 256;
};

// Lean columns (Launch::lean; columns.cuh, columns_at_once with one tile): the lanes
// they are taken for, lanes of `vector` elements of `bytes` each whose sums take
// `acc_bytes` each (0: not known, exact's), loaded as `load` (launch_model.cpp has the
// measurement: lanes of 4 elements loaded one by one lost, of one element not measured).
// The launch model decides with it at run time and run_pass.cuh compiles the kernel for
// these lanes alone.
constexpr bool lean_column_lanes(int64_t vector, int64_t bytes, int64_t acc_bytes,
                                 ColumnLoad load) {
  return vector > 1 && vector * bytes >= 8 && acc_bytes > 0 &&
         vector * acc_bytes <= LaunchTuning::kColumnLeanMaxSumBytes &&
         (load == ColumnLoad::kVectors || load == ColumnLoad::kCached ||
          load == ColumnLoad::kShifted || (load == ColumnLoad::kElements && vector <= 2));
}
// The rows a lean lane has in flight: half the general kernel's, so that its registers
// leave three blocks an SM; a reduced dim of at most these many rows takes it.
constexpr int lean_column_rows(int64_t vector, int64_t bytes, ColumnLoad load) {
  return column_rows_in_flight(vector, bytes, load) / 2;
}

}  // namespace warpreduce
