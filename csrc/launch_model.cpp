#include "launch_model.h"

#include <algorithm>
#include <array>
#include <cstdlib>
#include <numeric>
#include <sstream>

namespace warpreduce {
namespace {

using Tuning = LaunchTuning;

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }
int64_t pow2_ceil(int64_t v) {
  int64_t p = 1;
  while (p < v) p *= 2;
  return p;
}
int64_t pow2_floor(int64_t v) {
  int64_t p = 1;
  while (p * 2 <= v) p *= 2;
  return p;
}

// Whether every row of `pass` starts on a multiple of `bytes` bytes: the data there, and
// the reduced and outer strides multiples of `elements` (elements x element bytes ==
// bytes), so that loads of `bytes` bytes read each row's columns alike.
bool rows_aligned(const ReductionPass& pass, const ElementShape& element, int64_t elements,
                  int64_t bytes) {
  bool aligned = element.data_address % bytes == 0 && pass.reduced_stride % elements == 0 &&
                 pass.slice_stride % elements == 0;
  for (int d = 0; d < pass.outer.ndim; ++d)
    aligned = aligned && pass.outer.strides[d] % elements == 0;
  return aligned;
}

// Whether tiles of whole slabs can be copied: slabs short enough.
bool slabs_fit(const ReductionPass& pass, int64_t bytes) {
  const int64_t most = pass.is_rows() ? Tuning::kRowSlabMaxBytes : Tuning::kSlabMaxBytes;
  return slab_span(pass) * bytes <= most;
}

// How many times a warp's shared-memory load of these 32 elements (-1: a lane that
// loads none) is replayed: the most distinct 4-byte words one of the 32 banks serves.
int bank_replays(const std::array<int64_t, 32>& elements, int64_t bytes) {
  // (The table of words is left uninitialized: only its first distinct[bank] words of a
  // bank are read. Zeroed, its 8 KiB cost ~15 us of host time a call of a slab pass,
  // which runs this up to 38 times: more than a small pass's kernel.)
  std::array<std::array<int64_t, 32>, 32> words;  // per bank, the words seen
  std::array<int, 32> distinct{};
  int most = 0;
  for (const int64_t element : elements) {
    if (element < 0) continue;
    const int64_t word = element * bytes / 4;
    auto& seen = words[word % 32];
    int& count = distinct[word % 32];
    if (std::find(seen.begin(), seen.begin() + count, word) == seen.begin() + count) {
      seen[count++] = word;
      most = std::max(most, count);
    }
  }
  return most;
}

// How lanes share the outputs of a tile of slabs: the cost of reading the tile from
// shared memory, modelled for each power of two g of lanes an output, and, for a lane an
// output where a tile is one segment, for rows read from a rotated start (the kernel's
// lean loop, slabs.cuh). A warp's loads (lane l reads row l % g of output l / g) are laid
// on the 32 banks: the most distinct 4-byte words one bank must serve is how many times a
// load is replayed (the first load, or the worst of a rotation's). Per pass of the block
// over the tile's outputs, a lane makes ceil(length / g) such loads and log2(g) shuffles,
// besides the work of an output.
struct SlabLanes {
  unsigned group = 1;
  bool rotate_rows = false;
};
SlabLanes slab_lanes(const ReductionPass& pass, int64_t bytes, int64_t outputs_per_tile,
                     bool one_segment, unsigned threads) {
  const int64_t stride = slab_stride(pass), kept = pass.kept_inner();
  // The element lane `lane` reads first, a group of g lanes an output (output k of a
  // slab at its kept position: slabs.cuh, slab_position).
  auto element = [&](unsigned lane, unsigned g) -> int64_t {
    const int64_t u = lane / g, r = lane % g;
    if (r >= pass.length || u >= outputs_per_tile) return -1;
    const int64_t q = u / kept, k = u % kept;
    const int64_t i = pass.gapped() ? k / pass.width * pass.period + k % pass.width : k;
    return q * stride + i * pass.inner_stride + r * pass.reduced_stride;
  };
  // Each output a lane takes costs about kOutputWork instructions besides its loads
  // (its index, its sums, its store): ncu counted 6.5 warp instructions an output of
  // rows of 2 floats with index divisions and two lanes an output. A rotated load costs
  // kRotatedLoadWork more (its wrap), set by two shapes on an H200: float32 1048576 x 8
  // x 2 over dim 1, 45.3 us in order (two lanes an output, 4 to a bank), 27.1 rotated;
  // bfloat16 838574 x 8 x 4, 27.9 us in order (4 to a bank), 31.0 rotated (at 2 it was).
  constexpr int64_t kOutputWork = 24;
  constexpr int64_t kRotatedLoadWork = 4;
  // WARPREDUCE_NO_ROTATED_ROWS=1: rows in order (a knob for measuring the two).
  static const bool no_rotated_rows = knob_is_set("WARPREDUCE_NO_ROTATED_ROWS");
  SlabLanes best;
  double best_cost = 0;
  for (unsigned g = 1; g <= 32; g *= 2) {
    std::array<int64_t, 32> first{};
    for (unsigned lane = 0; lane < 32; ++lane) first[lane] = element(lane, g);
    const int replays = bank_replays(first, bytes);
    const int64_t passes = ceil_div(outputs_per_tile * g, threads);
    int shuffles = 0;
    for (unsigned s = g; s > 1; s /= 2) ++shuffles;
    const double cost = static_cast<double>(passes) *
                        (kOutputWork + replays * ceil_div(pass.length, g) + 2 * shuffles);
    if (g == 1 || cost < best_cost) {
      best = {g, false};
      best_cost = cost;
    }
    if (g == 1 && one_segment && replays > 1 && !no_rotated_rows) {
      // Lane u (output u) reads row (k + q) % length of its slab q at step k: its row,
      // stepped and wrapped here without a division (the planner runs on every call).
      std::array<int64_t, 32> row{}, step{};
      for (unsigned lane = 0; lane < 32; ++lane) {
        if (first[lane] >= 0) row[lane] = (lane / kept) % pass.length;
      }
      int rotated_replays = 0;
      for (int64_t k = 0; k < std::min<int64_t>(pass.length, 32); ++k) {
        for (unsigned lane = 0; lane < 32; ++lane) {
          step[lane] = first[lane] < 0 ? -1 : first[lane] + row[lane] * pass.reduced_stride;
          if (++row[lane] == pass.length) row[lane] = 0;
        }
        rotated_replays = std::max(rotated_replays, bank_replays(step, bytes));
      }
      const double rotated_cost =
          static_cast<double>(passes) *
          (kOutputWork + (rotated_replays + kRotatedLoadWork) * pass.length);
      if (rotated_cost < best_cost) {
        best = {1, true};
        best_cost = rotated_cost;
      }
    }
  }
  return best;
}

// slab_lanes, remembered for the passes last asked about, a few a thread: it lays up to
// 38 warps' loads on the banks, which took 2.0-8.7 us of host time a call on the H200
// machine's host (2026-11-29, a timing build: float64 3 x 7114 x 6 x 29 expanded, a slab
// pass and a column pass, 6.6-8.7 us of its 19 us a call), more than a small pass's
// kernel, and a model sums the same shapes call after call. What slab_lanes reads is
// the key (the knob it reads is fixed for the process).
SlabLanes remembered_slab_lanes(const ReductionPass& pass, int64_t bytes, int64_t outputs_per_tile,
                                bool one_segment, unsigned threads) {
  using Key = std::array<int64_t, 10>;
  struct Entry {
    Key key;
    SlabLanes lanes;
  };
  constexpr int kRemembered = 16;
  thread_local std::array<Entry, kRemembered> entries;
  thread_local int filled = 0, next = 0;  // the oldest entry is replaced first
  const Key key{pass.length,       pass.reduced_stride,
                pass.inner,        pass.inner_stride,
                pass.period,       pass.width,
                slab_stride(pass), bytes,
                outputs_per_tile,  int64_t{threads} * 2 + (one_segment ? 1 : 0)};
  for (int e = 0; e < filled; ++e) {
    if (entries[e].key == key) return entries[e].lanes;
  }
  const SlabLanes lanes = slab_lanes(pass, bytes, outputs_per_tile, one_segment, threads);
  entries[next] = {key, lanes};
  next = (next + 1) % kRemembered;
  filled = std::min(filled + 1, kRemembered);
  return lanes;
}

// Whether slabs lie close together: far apart, the memory between two is more than a
// slab and more than a sector (and a run holds more than one).
bool slabs_close(const ReductionPass& pass, int64_t bytes) {
  const int64_t span = slab_span(pass), stride = slab_stride(pass);
  return slabs_per_run(pass) == 1 || stride <= span || (stride - span) * bytes <= 32 ||
         (stride - span) * 2 <= stride;
}

// Slabs: segments of whole runs of slabs where the runs are short, else pieces of a run;
// slabs far apart one a segment.
Launch slabs_launch(const ReductionPass& pass, int64_t bytes) {
  Launch launch;
  launch.kind = LaunchKind::kSlabs;
  const int64_t span = slab_span(pass), stride = slab_stride(pass), run = slabs_per_run(pass);
  const int64_t tile = Tuning::kTileBytes / bytes;  // elements
  const int64_t most = max_tile_segments(bytes);
  const bool close = slabs_close(pass, bytes);
  const int64_t run_span = (run - 1) * stride + span;
  if (!close) {
    launch.per_segment = 1;
    launch.segments = std::clamp<int64_t>(tile / (span + 16 / bytes), 1, most);
  } else if (run_span <= tile) {
    launch.per_segment = run;
    launch.segments = std::clamp<int64_t>(tile / (run_span + 16 / bytes), 1, most);
  } else {
    launch.per_segment =
        std::max<int64_t>(1, (tile - span - 16 / bytes) / std::max<int64_t>(stride, 1) + 1);
    launch.segments = 1;
  }
  const int64_t segment_span = (launch.per_segment - 1) * stride + span;
  launch.slots = ceil_div(segment_span * bytes, 16) + 1;
  const SlabLanes lanes = remembered_slab_lanes(pass, bytes, launch.per_segment * pass.kept_inner(),
                                                launch.segments == 1, /*threads=*/256);
  launch.group = lanes.group;
  launch.rotate_rows = lanes.rotate_rows;
  return launch;
}

// Column tiles: `length` segments (the rows), as wide as a tile's bytes allow.
Launch column_tiles_launch(const ReductionPass& pass, int64_t bytes) {
  Launch launch;
  launch.kind = LaunchKind::kColumnTiles;
  launch.segments = pass.length;
  const int64_t elements = (Tuning::kTileBytes / pass.length - 16) / bytes;
  launch.width = std::min(pass.inner, (elements - 1) / pass.inner_stride + 1);
  launch.slots = ceil_div(((launch.width - 1) * pass.inner_stride + 1) * bytes, 16) + 1;
  launch.group = 1;  // consecutive outputs read consecutive words
  return launch;
}

Launch rows_launch(const ReductionPass& pass, const ElementShape& element,
                   const DeviceShape& device) {
  Launch launch;
  const int64_t bytes = element.bytes, row_bytes = pass.length * bytes;
  if (pass.outer_size == 1) return launch;  // the full reduction: rows_split
  // Rows of up to 32 whole vectors: a vector a lane, pow2_ceil(vectors) lanes a row, as
  // long as at least 3 in 4 lanes have a vector. On 2^19 rows of 100 floats (25 vectors,
  // 32 lanes) this ran at 86% of a full sum's speed, tiled rows at 71%.
  const int64_t row_vectors = row_bytes / 16;
  if (element.vectors() && pass.packed_rows() && element.data_address % 16 == 0 &&
      row_bytes % 16 == 0 && row_vectors <= 32 && 4 * row_vectors >= 3 * pow2_ceil(row_vectors)) {
    launch.kind = LaunchKind::kRowsVectors;
    launch.vectors_per_row = row_vectors;
    launch.group = static_cast<unsigned>(pow2_ceil(row_vectors));
    return launch;
  }
  // Rows of a few elements otherwise: a lane a row, its elements in registers, rather
  // than tiles through shared memory, which spent their time on each output's index and
  // sum (rows of 6 bytes ran at a third of a full sum's speed). On an H200, the 29 such
  // shapes of random seeds 151, 157, 163 and 167 (rows of 2-8 elements; 2026-11-28):
  // 1.37x the tiles' speed on the geometric mean, 1.01-1.83x; bfloat16 4 x 18488576
  // permuted over dim 0 1473 -> 2200 GB/s, float16 21430670 x 3 over dim 1 1204 -> 1713,
  // float32 7477158 x 2 1472 -> 2197, 3599307 x 7 2573 -> 3184; least, bool 13188308 x 8
  // (int64 outputs as many bytes as its rows) 1104 -> 1178. Rows of 9 and more, not
  // measured, stay tiled. WARPREDUCE_NO_SHORT_ROWS=1 tiles them all: a knob for
  // measuring the two side by side (benchmarks), read once.
  static const bool no_short_rows = knob_is_set("WARPREDUCE_NO_SHORT_ROWS");
  if (!no_short_rows && !pass.gapped() && pass.length <= Tuning::kShortRowMaxLength &&
      slabs_fit(pass, bytes)) {
    launch.kind = LaunchKind::kRowsShort;
    launch.row_slots = std::max<int64_t>(2, pow2_ceil(pass.length));
    return launch;
  }
  // Short rows far apart (x[:, :15] of rows of 36 floats): a group of lanes a row, each
  // lane an aligned 16-byte vector of those that cover the row (the row's own sectors),
  // its elements outside the row masked, rather than tiles of a row a segment (the tile
  // loop of far-apart slabs), where at least 3 in 4 lanes have a vector, as for whole
  // rows. On an H200 (2026-11-30, against WARPREDUCE_NO_COVERING_ROWS=1, which tiles
  // them: a knob for measuring): float32 811805 x 15 of rows of 36 63.7 -> 29.3 us (0.78
  // -> 1.69x torch.sum), 232351 x 118 of rows of 242 83.0 -> 51.2 (0.81 -> 1.31x),
  // bfloat16 2912593 x 22 of rows of 50 576 -> 2120 GB/s, 2126989 x 17 of 40 609 ->
  // 1968, int32 839689 x 13 of 32 795 -> 2007.
  static const bool no_covering_rows = knob_is_set("WARPREDUCE_NO_COVERING_ROWS");
  if (!no_covering_rows && element.vectors() && pass.reduced_stride == 1 && !pass.gapped() &&
      pass.outer.ndim == 1 && slabs_fit(pass, bytes) && !slabs_close(pass, bytes)) {
    const int64_t lanes = element.lanes();
    // The elements before a row in its first vector: the same for every row where the
    // rows are 16 bytes apart alike, else up to a vector's less one.
    const bool alike = pass.outer.strides[0] * bytes % 16 == 0;
    const int64_t head =
        alike ? static_cast<int64_t>(element.data_address % 16) / bytes : lanes - 1;
    const int64_t covering = ceil_div(head + pass.length, lanes);
    if (covering <= 32 && 4 * covering >= 3 * pow2_ceil(covering)) {
      launch.kind = LaunchKind::kRowsVectors;
      launch.covering = true;
      launch.vectors_per_row = covering;
      launch.group = static_cast<unsigned>(pow2_ceil(covering));
      return launch;
    }
  }
  // Short rows: tiled; gapped ones, which the tiles do not read, grouped however few
  // they are (rows_split would give a block to each row of a few hundred bytes).
  const bool short_rows = slabs_fit(pass, bytes);
  if (short_rows && !pass.gapped()) return slabs_launch(pass, bytes);
  // A group of lanes per row (a warp for rows of 512 bytes or more) while the rows keep a
  // quarter of the GPU's threads busy and a lane's share of the row's memory is at most
  // 64 vectors' worth (1 KiB); else whole blocks, several per row when the rows are few.
  // (Counting the loads of stepped rows instead sent rows of 2226 float16s, 2 apart, to a
  // block each: 1278 GB/s where torch.sum read 3885.)
  const int64_t loads =
      pass.reduced_stride == 1 ? ceil_div(pass.length, element.lanes()) : pass.length;
  const int64_t group = std::min<int64_t>(32, pow2_ceil(loads));
  const int64_t capacity = device.sms * device.threads_per_sm;
  const int64_t lane_bytes = slab_span(pass) * bytes / group;
  if ((short_rows || pass.outer_size * group >= capacity / 4) &&
      lane_bytes <= 16 * Tuning::kGroupedMaxVectorsPerLane) {
    launch.kind = LaunchKind::kRowsGrouped;
    // Fewer lanes a row where that leaves each lane kGroupedLoadsPerLane loads of it: a
    // group finishes its row before it loads the next, so a lane a load leaves little in
    // flight (float32 134 x 168 x 10 x 66 x 1 sliced over dims (3, 0, 4), rows of 66
    // vectors, a warp each: 0.28x torch.sum on an H200, 34% of its warps resident, ncu).
    // WARPREDUCE_WIDE_ROW_GROUPS=1 keeps a lane a load: a knob for measuring.
    static const bool wide_groups = knob_is_set("WARPREDUCE_WIDE_ROW_GROUPS");
    const int64_t narrow = pow2_floor(std::max<int64_t>(1, loads / Tuning::kGroupedLoadsPerLane));
    launch.group = static_cast<unsigned>(wide_groups ? group : std::min(group, narrow));
  }
  return launch;
}

Launch columns_launch(const ReductionPass& pass, const ElementShape& element,
                      const DeviceShape& device) {
  const int64_t bytes = element.bytes, lanes = element.lanes();
  // The rows a column adds, its slices' together (geometry.h); sliced passes take the
  // general kernel only: no tiles, no folded rows, a tile at a time.
  const int64_t rows = pass.rows();
  const bool sliced = pass.slices > 1;
  // Short rows a gap apart in slabs that a tile holds (geometry.h, Gaps::tiled_gaps): the
  // slab tiles, a slab an outer index (its gaps copied with it, its kept positions summed),
  // rather than a run of short rows an outer index, several runs a tile, whose tiles took
  // the general loop (a segment's division an output, two lanes an output). On an H200
  // (2026-12-03 16:28, against WARPREDUCE_NO_TILED_GAPS=1, two rounds): float32 199395 x 6
  // x 7 x 5 of rows of 6 over dim 1 (seed 491's lowest, 0.55x torch.sum) 149.5 -> 65.5 us
  // (1.26x), 400000 x 4 x 8 x 5 of 8 317.6 -> 125.8, bfloat16 300000 x 6 x 7 x 5 of 6
  // 205.7 -> 67.3, float16 300000 x 4 x 9 x 3 of 8 163.5 -> 57.3, float64 150000 x 6 x 7
  // x 3 of 6 231.2 -> 81.7, int8 400000 x 5 x 9 x 3 of 16 240.0 -> 108.7; the least, rows
  // of 2 of 9 floats, 104.4 -> 106.5 (tied). A draft that summed the gaps' positions too
  // lost where they are most of the span (rows of 2 of 5 and of 9 floats, of 3 of 8
  // bfloat16s, of 3 of 16 int8s: 1.1-1.5x the time).
  if (pass.tiled_gaps) return slabs_launch(pass, bytes);
  // A lane's column is a vector of adjacent outputs where the inner dim is contiguous (or
  // a gapped span): aligned loads where every row starts on a vector and the vectors are
  // whole; for short reduced dims over an inner dim of enough vectors also a partial last
  // vector, and, for 1- and 2-byte elements, shifted loads (LaunchTuning says where each
  // ends); for longer ones a partial last vector where the partial columns are rare.
  const bool contiguous = element.vectors() && lanes > 1 && pass.inner_stride == 1;
  const bool aligned = rows_aligned(pass, element, lanes, 16);
  // (A gapped span counts as whole where the storage lets it be read so: read_span. On
  // an H200, seed 431's lowest, bfloat16 67 x 11 x 40 x 21 x 12 of a strided last dim
  // over dim 2, a span of 503 over 40 rows, had taken an element a lane: 0.61x torch.sum;
  // read as 504, 23.6 -> 13.7 us against torch.sum's 11.9.)
  const bool whole = contiguous && aligned && pass.read_span(lanes) % lanes == 0;
  const bool enough_vectors =
      contiguous && pass.inner >= Tuning::kColumnMinUnalignedVectors * lanes;
  const bool wide = enough_vectors && rows <= Tuning::kColumnMaxUnalignedRows;
  const bool rare_partials =
      pass.outer_size == 1 || pass.inner >= Tuning::kColumnRarePartialVectors * lanes;
  const bool long_partial = enough_vectors && aligned && rare_partials;
  // Fewer vectors than that (wider ones, and whole ones, are vectors here already), the
  // last partial, in rows aligned alike (x[..., :5] of rows of 8 floats: the gap after
  // each row is storage), under a reduced dim short enough for the lean kernel (auto's):
  // vectors too, whose partial ones the lean kernel reads whole where they lie within the
  // data (columns.cuh, whole_column_reads: a lane's positions past the row are read, never
  // stored), so that a warp reads the rows' sectors and no more, rather than tiles of a
  // slab a segment. Only where the slabs lie far apart
  // (slabs_close: a tile then copies a slab a segment) and for 4- and 8-byte elements
  // (2-byte far slabs take far_slab_columns, below). On an H200 (2026-12-02 13:41,
  // against WARPREDUCE_NO_NARROW_PARTIALS=1, two rounds): float32 x[:, :2, :5] of N x 4 x
  // 8 (seed 461's lowest, 0.54x torch.sum) 71.0 -> 39.2 us (torch.sum 37.9), x[:, :3, :6]
  // of N x 8 x 8 54.2 -> 37.5, x[:, :4, :7] of N x 12 x 8 35.9 -> 28.7, x[:, :3, :2] of
  // N x 8 x 4 80.7 -> 37.4, x[:, :2, :13] of N x 6 x 16 97.7 -> 71.9, float64 x[:, :2,
  // :3] of N x 4 x 4 54.6 -> 37.4, int32 x[:, :2, :5] of N x 4 x 8 73.9 -> 48.2. Slabs
  // close together lost that way (13:31, a draft without that limit): float32 x[..., :9]
  // of N x 2 x 12 44.0 -> 57.2 us, x[..., :5] of N x 3 x 8 27.4 -> 31.9, float64 x[...,
  // :3] of N x 3 x 4 65.4 -> 73.1; and 2-byte ones in tiles at once, bfloat16 x[..., :13]
  // of N x 2 x 16 71.2 -> 124.3. WARPREDUCE_NO_NARROW_PARTIALS=1 leaves them out: a knob
  // for measuring.
  static const bool no_narrow_partials = knob_is_set("WARPREDUCE_NO_NARROW_PARTIALS");
  const bool narrow_partial =
      !no_narrow_partials && contiguous && aligned && !pass.gapped() && !sliced && bytes >= 4 &&
      !(slabs_fit(pass, bytes) && slabs_close(pass, bytes)) &&
      lean_column_lanes(lanes, bytes, element.acc_bytes, ColumnLoad::kVectors) &&
      pass.length <= lean_column_rows(lanes, bytes, ColumnLoad::kVectors);
  // Past kColumnMaxShiftedRows rows, 2-byte elements in rows aligned alike to 4 bytes read
  // 4-byte pairs instead (below; launch_model.h has the measurement).
  // Reduced dims of 2-byte elements up to twice that long that pairs cannot read either
  // (rows an odd number of elements apart, or the data not on 4 bytes) take shifted
  // vectors too where their slabs are too long to tile, rather than an element a lane.
  // On an H200 (2026-11-29, WARPREDUCE_NO_LONG_SHIFTED=1 the other arm): bfloat16 34 x
  // 912925 over dim 0 49.4 -> 33.0 us, float16 53407 x 2 x 5 x 1 x 4 x 20 permuted (40
  // rows) 114.9 -> 70.3; longer ones, split over lanes down the reduced dim, lost 1.2-2x
  // (bfloat16 123 x 55709 over dim 0 11.0 -> 20.2 us, 554 x 265 x 616 permuted 90.9 ->
  // 140.2, 7 x 5279 x 3601 120.9 -> 146.4).
  // Rows not aligned alike (an odd row stride, a sliced or offset view) under a longer
  // reduced dim: phased columns (columns.cuh, place_phased), whole aligned vectors, each
  // lane's rows a whole number of `phases` apart (the rows' shifts repeat every `phases`
  // rows), so that they are shifted alike and its sums are rotated into place once, at
  // the end. Only where the rows do not overlap (the aligned vectors of a lane's rows then
  // lie within the data but for its first and last row, read within it), of elements
  // aligned to their size, and for auto (element.auto_sums). Against what they replace, on
  // an H200 (2026-11-30, WARPREDUCE_NO_PHASED=1 the other arm, the 49 shapes of seeds 337
  // and 367 that took them from 33 rows for every element size of 2 bytes and more):
  // 2-byte elements an element a lane (or shifted) before, kColumnPhasedMinVectors
  // vectors wide and more, 0.87-1.64x, geomean 1.13 (6 shapes: bfloat16 114175 x 273
  // permuted over dim 0 37.8 -> 23.1 us, 251 x 95059 25.1 -> 20.4; 113 x 61853, 13 MiB,
  // 10.7 -> 12.3); narrower 0.33-0.92x (6: their few columns split over blocks, whose
  // finish adds 8 sums a lane: 130732 x 5 x 7 offset over dim 0 14.2 -> 42.9 us); 2-byte
  // pairs before 0.28-1.14x, 10 of 12 slower; 4-byte elements 0.70-1.10x, geomean 0.94
  // (20); 8-byte ones 0.97-1.19x, geomean 1.04 (5: float64 801 x 85 x 241 over dims (1,
  // 0) 44.1 -> 37.0 us). So wide 2-byte rows that pairs cannot read, and 8-byte rows;
  // and only where a lane keeps kColumnPhasedRowsPerLane rows at the fewest lanes down a
  // column that the phases allow: the 2-byte shapes above that gained had 198-349 rows
  // (8 phases: 25-44 rows a lane), those that lost 62-113 (8-14). With both limits, on
  // fresh seeds 379 and 383 (the same A/B, 16:26): 11 shapes, 0.75-1.49x, geomean 1.11
  // (bfloat16 61 x 112 x 59 x 4 x 82 offset over dim 0, one phase, 140.6 -> 94.3 us;
  // 2 x 6 x 61 x 26651 expanded, 13.9 -> 18.5, slower). The rows a lane keeps, 24 then,
  // are 12 since seed 457's lowest (bfloat16 144 x 243231 over dim 0, 18 rows a lane, an
  // element a lane: 0.64x torch.sum): wide 2-byte shapes of 12-23 rows a lane, many
  // columns (no split), on an H200 (2026-12-02 13:31-13:41, against 24, two rounds):
  // bfloat16 144 x 243231 42.4 -> 31.4 us (0.65 -> 0.86x torch.sum), float16 160 x 3 x
  // 70001 37.7 -> 31.0, bfloat16 120 x 120000 offset 16.8 -> 14.5, 190 x 200003 35.5 ->
  // 33.4, 130 x 17001 13.9 -> 12.9, float64 40 x 3 x 100001 (8-byte: 2 phases, past 32
  // rows) 35.2 -> 30.8; 100 x 300001 tied (35.6, 35.3), 96 x 250001 lost 24.7 -> 25.4.
  // WARPREDUCE_NO_PHASED=1 leaves them out: a knob for measuring.
  static const bool no_phased = knob_is_set("WARPREDUCE_NO_PHASED");
  const int64_t phases = 16 / std::gcd(pass.reduced_stride * bytes, int64_t{16});
  const bool phased_elements =
      bytes == 8 || (bytes == 2 && !rows_aligned(pass, element, 2, 4) &&
                     pass.inner >= Tuning::kColumnPhasedMinVectors * lanes);
  const bool phased = !no_phased && element.auto_sums && phased_elements && enough_vectors &&
                      !aligned && !sliced && element.data_address % bytes == 0 &&
                      pass.reduced_stride >= pass.inner && rows > Tuning::kColumnMaxUnalignedRows &&
                      rows >= phases * Tuning::kColumnPhasedRowsPerLane;
  static const bool no_long_shifted = knob_is_set("WARPREDUCE_NO_LONG_SHIFTED");
  const bool long_shifted = !phased && !no_long_shifted && enough_vectors && !aligned &&
                            bytes == Tuning::kColumnPairBytes &&
                            rows > Tuning::kColumnMaxUnalignedRows &&
                            rows <= 2 * Tuning::kColumnMaxUnalignedRows &&
                            !rows_aligned(pass, element, 2, 4) && !slabs_fit(pass, bytes);
  const bool shifted =
      long_shifted ||
      (!phased && wide && !aligned && bytes <= Tuning::kColumnMaxShiftedBytes &&
       !(bytes == Tuning::kColumnPairBytes && rows > Tuning::kColumnMaxShiftedRows &&
         rows_aligned(pass, element, 2, 4)));
  // 4- and 8-byte elements there in rows not aligned alike: a vector's adjacent outputs a
  // lane all the same, its elements read one by one, 8 rows in flight, rather than column
  // tiles or an element a lane (only the short reduced dim's few in flight). On an H200
  // (seeds 59, 61): float32 7 x 7 x 347750 offset over dim 0 67.9 -> 28.4 us (0.44 ->
  // 1.05x torch.sum; an element a lane before), 4436 x 3 x 2392 offset 70.9 -> 51.7,
  // 4236215 x 7 permuted 49.1 -> 36.1 (column tiles before); int32 6 x 5 x 279625
  // transposed lost 21.9 -> 23.8 (int64 outputs; still 4.9x torch.sum). Also where the
  // rows are aligned alike to 8 bytes, in place of 8-byte vectors (two outputs a lane, half
  // the bytes in flight): float32 20 x 190 x 3 x 4 x 2 x 130 over dim 4 0.73 -> 0.87x
  // torch.sum, 2 x 5552940 sliced over dim 0 0.69 -> 1.02, 70 x 5 x 87 x 90 x 5 over dim 1
  // 0.93 -> 1.12 (H200, seeds 97 and 101, 2026-11-28). 4-byte elements up to
  // kColumnMaxElementsRows rows: float32 45 x 1 x 7 x 5 x 34063 over dim 0, rows an odd
  // number apart, 0.88 -> 1.06x (an element a lane, 32 rows in flight, before).
  // WARPREDUCE_NO_COLUMN_ELEMENTS=1 leaves them out: a knob for measuring (benchmarks).
  static const bool no_elements = knob_is_set("WARPREDUCE_NO_COLUMN_ELEMENTS");
  const int64_t element_rows =
      bytes == 4 ? Tuning::kColumnMaxElementsRows : Tuning::kColumnMaxUnalignedRows;
  const bool elements = !phased && !no_elements && enough_vectors && rows <= element_rows &&
                        !aligned && bytes >= Tuning::kColumnElementsMinBytes;
  const bool vectors =
      whole || (wide && aligned) || long_partial || narrow_partial || shifted || elements || phased;
  // 2-byte elements under longer reduced dims, rows an even number of elements apart but
  // not aligned alike to 16 bytes: 4-byte loads, two outputs a lane, rather than an
  // element a lane. WARPREDUCE_NO_PAIRS=1 leaves them out: a knob for measuring.
  // (Pairs rather than shifted vectors under short reduced dims lost: bfloat16 2 x 6132872
  // of a sliced tensor over dim 0, 25 -> 94 us; float16 18416420 x 7 over dim 1, 133 ->
  // 266 us; H100, seeds 53 and 59.)
  // An odd inner extent leaves each outer slice's last pair partial; its lane reads it
  // whole where it lies within the data (columns.cuh, whole_column_reads), in its warp's
  // loop. Where the outputs are fewer than the GPU's resident threads, those columns take
  // an element a lane instead, twice the lanes, under reduced dims longer than column
  // tiles take. On an H200 (2026-12-01 02:28, pairs read whole against an element a lane
  // against pairs whose partial last pair was a loop of its own, sliced views): float16
  // 4000 x 40 x 339 over dim 1 (1.36 M outputs) 53.4 / 71.0 / 120.5 us, 3000 x 33 x 339
  // 38.9 / 55.0 / 77.0, 1000 x 300 x 339 (339 K) 86.0 / 103.0 / 170.4; with fewer
  // outputs elements won: float16 2 x 22 x 7 x 80 x 339 over dims (2, 3) (14916) 20.3 /
  // 13.3 / 25.1, bfloat16 2 x 127 x 53900 x 3 over dims (2, 1) 120.2 / 49.9 / 137.9,
  // 2000000 x 7 over dim 0 45.7 / 26.4 / 48.7; on either side of the rule (02:40, as
  // built against pairs): float16 600 x 50 x 339 (203400 outputs) 16.3 against 19.0 us,
  // bfloat16 300 x 2000 x 7 10.1 against 15.1, float16 40 x 1000 x 1001 36.9 against 50.2,
  // float16 900 x 50 x 339 (305100 outputs) pairs both, 23.4. At 9 rows, column tiles in
  // pairs' place lost (bfloat16 20000 x 9 x 339 sliced: 62.0 us in pairs two tiles at
  // once, 92.4 in tiles): pairs stay while the reduced dim is at most kColumnTileMaxRows
  // long.
  // WARPREDUCE_ODD_PAIRS=1 keeps pairs for every inner extent: a knob for measuring.
  static const bool no_pairs = knob_is_set("WARPREDUCE_NO_PAIRS");
  static const bool odd_pairs = knob_is_set("WARPREDUCE_ODD_PAIRS");
  const bool pairs = !no_pairs && contiguous && !vectors && bytes == Tuning::kColumnPairBytes &&
                     rows_aligned(pass, element, 2, 4) && pass.inner >= 2 &&
                     (pass.read_span(2) % 2 == 0 || pass.inner >= Tuning::kColumnOddPairsMinInner ||
                      pass.outputs() >= device.sms * device.threads_per_sm ||
                      pass.length <= Tuning::kColumnTileMaxRows || odd_pairs);
  // 2-byte elements in rows aligned alike to 8 bytes but not to 16 (rows 4 elements past
  // a multiple of 8 apart; sliced and offset views by chance) under 4-8 rows (shifted
  // vectors' rows: pairs past 8): 8-byte quads, four outputs a lane, 16 rows in flight,
  // rather than shifted vectors (two aligned 16-byte loads and a funnel shift a row).
  // Partial last quads as pairs' partial pairs: read whole within the data. Auto's
  // kernels only. On an H200 (2026-12-03 19:14-19:35, against WARPREDUCE_NO_QUADS=1, two
  // rounds): float16 8 x 1 x 5247028 over dim 0 (seed 503's third lowest, 0.78x
  // torch.sum) 42.6 -> 33.4 us, bfloat16 29556 x 6 x 36 over dim 1 16.4 -> 9.2, 3932220 x
  // 6 transposed 29.6 -> 23.4, 7 x 13723091 sliced (fresh seed 509) 87.0 -> 74.0, float16
  // 4 x 4194308 22.1 -> 21.3; 2 rows lost (bfloat16 2 x 8388612, four tiles at once,
  // 25.4 -> 34.1). In pairs' place (longer reduced dims) they won on 5 of 16 shapes
  // (bfloat16 118204 x 888 permuted 64.8 -> 57.1 us, 8 x 5 x 7 x 38172 over dims (2, 1)
  // 14.9 -> 11.8), were within 3% on 6 and lost 4-8% on 3 (4096 x 4100 over dim 0 14.3
  // -> 15.4, 75909 x 2 x 132 permuted 17.6 -> 19.1; the rounds of two ~10 us sums
  // disagreed): no rule yet, pairs stay there.
  // WARPREDUCE_NO_QUADS=1 leaves them out: a knob for measuring.
  static const bool no_quads = knob_is_set("WARPREDUCE_NO_QUADS");
  const bool quads = !no_quads && element.auto_sums && shifted &&
                     bytes == Tuning::kColumnPairBytes && rows >= Tuning::kColumnQuadMinRows &&
                     rows_aligned(pass, element, 4, 8);
  // 1-byte elements in rows aligned alike to 4 bytes: 4-byte words, four outputs a lane
  // (two blocks an SM), rather than an element a lane, shifted vectors or, under long
  // reduced dims, whole 16-byte vectors (16 wide integer accumulators a lane, one block an
  // SM). On an H100 (seeds 53, 59): bool 21398 x 156 x 4 over dims (0, 1) 19.0 -> 14.5 us
  // (from an element a lane), 3 x 24352 x 696 permuted over dims (0, 2) 51 -> 36 (from
  // whole vectors, 24352 rows); under short reduced dims whole vectors stay, their lanes'
  // 128 contiguous bytes of outputs a store: int8 18083888 x 6 over dim 1 took 234 us in
  // words, 206 in vectors; and so do rows not aligned alike under the shortest reduced
  // dims, shifted, whose 2 rows of words are 8 bytes in flight a lane (H200, seed 151:
  // int8 2 x 7773363 sliced over dim 0, 1.12 -> 1.46x torch.sum; 3 x 6 x 7 x 18162 x 16
  // permuted over dims (4, 2), 16 rows, took 14.5x torch.sum in words, 9.4 shifted).
  // WARPREDUCE_NO_BYTE_WORDS=1 leaves them out: a knob for measuring.
  static const bool no_byte_words = knob_is_set("WARPREDUCE_NO_BYTE_WORDS");
  const bool byte_words =
      !no_byte_words && contiguous && bytes == 1 && rows_aligned(pass, element, 4, 4) &&
      pass.inner >= 4 &&
      (!aligned ? rows >= Tuning::kColumnMinWordRows : rows > Tuning::kColumnMaxUnalignedRows);
  // Short slabs: through shared memory, unless the loads are whole vectors already (a
  // lane then owns a vector of adjacent outputs, and its loads down a short reduced dim
  // are in flight together): 8 rows of 4, 8 and 12 floats ran at 59%, 84% and 87% of a
  // full sum's speed that way on an H200, at 32%, 45% and 45% tiled (where the tiled
  // kernel issues an instruction nearly every cycle: ncu, 3.9 warp instructions an
  // output). WARPREDUCE_PREFER_SLABS=1 tiles every slab that fits: a knob for measuring
  // the two side by side (benchmarks), read once.
  static const bool prefer_slabs = knob_is_set("WARPREDUCE_PREFER_SLABS");
  // Slabs of 2-byte elements far apart (slabs_close) take columns, a lane an output (or a
  // pair), its short reduced dim's rows in flight together, rather than tiles of a slab a
  // segment. On an H200 (2026-11-29 14:50, against WARPREDUCE_NO_FAR_SLAB_COLUMNS=1, the
  // corner of a larger tensor over its middle dim): float16 1348662 x 3 x 3 of 1348662 x
  // 6 x 6 (the strides of seed 293's lowest shape, 0.27x torch.sum) 129.9 -> 67.4 us,
  // bfloat16 2000000 x 4 x 2 of 2000000 x 8 x 4 179.0 -> 51.4; wider elements lost:
  // float32 1000000 x 3 x 3 of 1000000 x 6 x 6 63.3 -> 75.9, 500000 x 5 x 3 of 500000 x 10
  // x 8 37.7 -> 44.7, float64 400000 x 3 x 3 27.3 -> 40.3, int32 64.5 -> 84.5 (float32
  // 2000000 x 2 x 2, 102.9 -> 97.6, gained). WARPREDUCE_NO_FAR_SLAB_COLUMNS=1 tiles them
  // all: a knob for measuring.
  static const bool no_far_slab_columns = knob_is_set("WARPREDUCE_NO_FAR_SLAB_COLUMNS");
  const bool far_slab_columns =
      !no_far_slab_columns && bytes == 2 && !vectors && !slabs_close(pass, bytes);
  // (Neither tiles read the gaps of a gapped inner dim: its columns take every element.)
  if (!pass.gapped() && !sliced && slabs_fit(pass, bytes) &&
      (!vectors || elements || prefer_slabs) && !far_slab_columns) {
    return slabs_launch(pass, bytes);
  }
  // A long reduced dim over a few outputs that lie in one dense block of memory (the
  // inner dim, and an outer dim right above it: x.sum(0) of an N x 3 tensor, or of N x 4
  // x 5 permuted so that the result's dims are the memory's in another order), each row
  // right after the one before: the block repeats every `kept` elements, so the data are
  // one stream of whole vectors. A folded row is the fewest vectors that hold a whole
  // number of blocks, times the count that best fills a power of two of lanes (up to a
  // warp): every lane then holds the same positions of every folded row, and the lanes'
  // sums are folded into the outputs at the end (position p into output p % kept).
  // Blocks that divide a vector were folded first: an element a lane, tx = inner, left
  // bfloat16 20194023 x 4 over dim 0 at 0.79x torch.sum on an H200 (seed 41). Any block
  // of up to 32 vectors' worth, against an element a lane (or 2-byte pairs), on an H200
  // (2026-11-28, WARPREDUCE_NO_FOLDED_COLUMNS=1 the other arm, 22 shapes of seeds 197 and
  // 199): 0.93-2.42x, geomean 1.20; bfloat16 5 x 5820113 x 4 permuted over dim 1 (a 4 x 5
  // block) 1559 -> 3768 GB/s, float32 1214185 x 6 x 8 transposed over dim 0 2139 -> 3714,
  // float16 450168 x 25 x 4 permuted 1666 -> 2994, float16 3 x 1155011 x 5 permuted 1376
  // -> 2072; the least, blocks of 2, 0.93-0.96x in the new kernel (they fold in the
  // general one, as before: columns.cuh, fold_sums). (Split, each block leaves its
  // block's sums, not its folded row's: columns.cuh, store_folded.)
  // Whole aligned vectors of one outer slice are such a stream already (columns below),
  // but for a permuted result's block (narrow kept dims merged: plan.cpp) whose folded
  // rows fill more of their lanes than its own vectors do: float32 5 x N x 4 permuted
  // over dim 1, a block of 5 vectors, 5 of 8 lanes, folded 15 of 16, as it was folded
  // before the merge (2026-11-29: a block of 16 vectors, merged, ran 17.8 -> 15.7 us
  // unfolded, float32 8 x 8 x 101177 permuted over dim 2, H200).
  // WARPREDUCE_NO_FOLDED_COLUMNS=1 leaves them out: a knob for measuring (benchmarks).
  // Blocks with gaps fold too (launch_model.h, FoldBlock): the inner dim and an outer dim
  // above it any distance apart, the rows any distance apart past the block (x.sum(0) of
  // x[:, :3] of an N x 12 tensor): the stream then holds the gaps, read and left
  // unstored, where it is at most kColumnFoldMaxRead times the bytes that reading the
  // block alone costs, and the block's rows at most kColumnGappedFoldMaxWidth wide (their
  // columns otherwise give lanes enough to read). On an H200 (2026-11-29, against
  // WARPREDUCE_NO_GAPPED_FOLDS=1, rows 3 or 5 wide): bfloat16 20000000 x 3 of rows of 12
  // over dim 0 284.1 -> 119.0 us, 4000000 x 4 x 3 of 8 x 6 288.9 -> 103.2, 10000000 x 5
  // of 20 245.1 -> 100.5, float16 300000 x 3 of 12 15.2 -> 9.7, float64 4000000 x 3 of 5
  // 50.4 -> 43.0, float32 46.3 -> 43.4; float16 6000000 x 3 of 13 43.4 -> 44.8. Wider
  // rows lost: float32 3000000 x 20 of 46 116.6 -> 137.5 us, 2000000 x 9 of 31 55.8 ->
  // 65.5, bfloat16 2000000 x 10 of 30 35.1 -> 37.6 (their columns read an element or a
  // pair a lane at 2300-2700 GB/s).
  // WARPREDUCE_NO_GAPPED_FOLDS=1 folds dense blocks only: a knob for measuring.
  static const bool no_folded = knob_is_set("WARPREDUCE_NO_FOLDED_COLUMNS");
  static const bool no_gapped_folds = knob_is_set("WARPREDUCE_NO_GAPPED_FOLDS");
  const int64_t kept = pass.outer_size * pass.inner;
  const FoldBlock block = fold_block(pass);  // (none of a gapped inner dim)
  const int64_t period = pass.reduced_stride;  // the stream repeats every row
  const int64_t block_vectors = period / std::gcd(period, lanes);  // the fewest: lcm / lanes
  const bool dense_block = block.span == kept && period == kept;
  // (A period that divides a vector folds within each lane, in the general kernel, which
  // stores every position: blocks with gaps take the folded kernel only.)
  const bool block_fits =
      block.span > 0 && period >= block.span && !whole && block_vectors > 1 &&
      block.width <= Tuning::kColumnGappedFoldMaxWidth &&
      period * bytes <= Tuning::kColumnFoldMaxRead * block_read_bytes(block, period, bytes);
  // The multiple of block_vectors that leaves the fewest of its power of two of lanes
  // idle (3 vectors: 15 of 16 lanes), the fewest vectors among equals.
  int64_t best = block_vectors;
  for (int64_t v = 2 * block_vectors; v <= Tuning::kColumnFoldMaxVectors; v += block_vectors) {
    if (v * pow2_ceil(best) > best * pow2_ceil(v)) best = v;
  }
  const bool stream =
      whole && pass.outer_size == 1 && !(pass.result_apart > 1 && best > block_vectors);
  const bool folded = !no_folded && !sliced && contiguous && bytes >= Tuning::kColumnFoldMinBytes &&
                      (dense_block || (block_fits && !no_gapped_folds)) && period > 1 && !stream &&
                      block_vectors <= Tuning::kColumnFoldMaxVectors &&
                      element.data_address % 16 == 0;
  if (folded) {
    Launch launch;
    launch.kind = LaunchKind::kColumns;
    launch.vector = lanes;
    launch.fold = period;
    launch.fold_vectors = best;
    // A block that divides a vector (fold_vectors 1) folds within each lane, in the
    // general kernel; wider folded rows take a kernel of their own (columns.cuh).
    launch.load = best > 1 ? ColumnLoad::kFolded : ColumnLoad::kVectors;
    launch.tx = static_cast<unsigned>(pow2_ceil(launch.fold_vectors));
    launch.ty = static_cast<unsigned>(Tuning::kColumnThreads / launch.tx);
    return launch;
  }
  // A short reduced dim above wide columns that neither vectors nor pairs read: column
  // tiles.
  if (!pass.gapped() && !sliced && !vectors && !pairs &&
      pass.length <= std::min(Tuning::kColumnTileMaxRows, max_tile_segments(bytes)) &&
      pass.inner_stride * bytes <= 16) {
    const Launch tiles = column_tiles_launch(pass, bytes);
    if (tiles.width >= Tuning::kColumnTileMinWidth) return tiles;
  }

  Launch launch;
  launch.kind = LaunchKind::kColumns;
  launch.vector = byte_words || quads ? 4 : vectors ? lanes : pairs ? 2 : 1;
  launch.load = phased                             ? ColumnLoad::kPhased
                : shifted && !byte_words && !quads ? ColumnLoad::kShifted
                : elements                         ? ColumnLoad::kElements
                                                   : ColumnLoad::kVectors;
  // Rows of whole 16-byte vectors that share 32-byte sectors (rows a vector apart, or
  // three: a row's last sector holds the next row's first elements): the vector loads
  // that skip L1 (columns.cuh, load_streaming) fetch such a sector from L2 once for every
  // row it holds, loads through L1 once (the rows after the first find it there). Nsight
  // Compute, float32 1044119 x 7 x 2 x 4 over dims (1, 2) (rows 16 bytes apart): L1 hit
  // rate 0%, 1.85x torch.sum's L2 sectors, L2 the limit. On an H200 (2026-12-02 06:52,
  // against WARPREDUCE_NO_CACHED_COLUMNS=1, two rounds): float32 1000000 x 8 x 4 over dim 1 62.9 -> 46.3 us (torch.sum 46.1),
  // 1044119 x 7 x 2 x 4 113.9 -> 82.2 (81.4), 300000 x 40 x 4 103.2 -> 84.0 (80.0), 6 x
  // 39132 x 16 x 4 over dims (2, 0) 41.0 -> 31.9 (26.3), bfloat16 1000000 x 16 x 8 118.8
  // -> 101.0 (87.9), float64 1000000 x 8 x 2 53.6 -> 46.0 (45.0), int8 4000000 x 9 x 16
  // 659.9 -> 544.4, float16 3000000 x 3 x 8 (lean) 56.3 -> 50.4, bfloat16 2000000 x 4 x 8
  // 51.1 -> 42.7; rows 48 bytes apart, float32 1000000 x 5 x 12 88.1 -> 76.9, bfloat16
  // 1000000 x 6 x 24 109.1 -> 99.3; none lost (rows 64 bytes apart, not cached,
  // unchanged). (torch.sum reads such columns with plain loads: its L1 hit rate there is
  // 51%.) Exact sums read them as whole vectors (run_pass.cuh). 4-byte words of 1- and
  // 2-byte elements (rows 4-12 bytes apart) were not measured: where slabs fit they take
  // those.
  // WARPREDUCE_NO_CACHED_COLUMNS=1 leaves them out: a knob for measuring.
  static const bool no_cached = knob_is_set("WARPREDUCE_NO_CACHED_COLUMNS");
  const int64_t row_bytes = pass.reduced_stride * bytes;
  const bool rows_share_sectors =
      row_bytes < Tuning::kColumnCachedMaxRowBytes && (row_bytes < 32 || row_bytes % 32 != 0);
  if (!no_cached && launch.load == ColumnLoad::kVectors && launch.vector * bytes == 16 &&
      rows_share_sectors) {
    launch.load = ColumnLoad::kCached;
  }
  const int64_t columns = ceil_div(pass.inner, launch.vector);  // of vectors, an outer slice
  const int64_t rows_per_lane =
      vectors && !byte_words ? Tuning::kColumnRowsPerLane : Tuning::kColumnRowsPerLaneScalar;
  const int64_t threads = Tuning::kColumnThreads;
  // Lanes down the reduced dim while each keeps rows_per_lane rows.
  const int64_t ty_by_rows =
      std::min(pow2_floor(std::max<int64_t>(1, rows / rows_per_lane)), threads);
  // A warp across a slab's columns when they are at least 32 (512 contiguous bytes with
  // vectors), or, when fewer, across one slab's columns and several of its rows, if the
  // rows keep that many lanes busy; otherwise the lanes run across outer slices (flat),
  // each with its outputs' whole column of a short reduced dim.
  if (!phased && columns < 32 && ty_by_rows >= threads / pow2_ceil(columns)) {
    launch.tx = static_cast<unsigned>(pow2_ceil(columns));
    launch.ty = static_cast<unsigned>(threads / launch.tx);
    launch.flat = false;
  } else {
    // Flat: more lanes down the reduced dim where the columns leave half the GPU's lanes
    // idle or more (two blocks an SM: the kernel's launch bounds), while each keeps
    // kFlatColumnRowsPerLane rows. (Up to all of them, bfloat16 32 x 2^20 over dim 0, 97%
    // of the lanes with one a column, took 0.91x the time with two.)
    // Tiles that read an element a lane of a contiguous inner dim (rows not aligned
    // alike: odd strides, offset views) of 4-byte and wider elements start with four
    // warps across, a block's rows 128 elements wide, not one: on an H200 (2026-11-29
    // 14:21-14:23, a knob in one build, against a warp across), float32 1100 x 3 x 40001
    // sliced over dim 0 165.8 -> 138.6 us, 1110 x 8831 over dim 0 20.4 -> 18.8, int32
    // 2951 x 1434 x 5 permuted 28.5 -> 25.9, float64 2000 x 20001 94.5 -> 91.6; ten such
    // shapes of seeds 277-283 and hand-made, 0.96-1.20x. Narrower elements lost where
    // they gained: bfloat16 3234 x 8 x 4778 offset 111.8 -> 126.3 against 4 x 474 x
    // 67211 108.7 -> 97.8; int8 and bool 16-20% slower. On fresh seeds (14:38, the rule
    // against WARPREDUCE_NO_WIDE_ELEMENT_TILES=1): float32 1574 x 21983 over dim -2 49.0
    // -> 43.9 us, int32 13 x 1558 x 3 x 43 x 7 permuted 31.8 -> 31.2, and a strided last
    // dim lost, float32 1289 x 7 x 1146 x 4 of stride 2 over dim 2 96.5 -> 115.8 (seed
    // 307): strided inner dims (and gapped spans, read as one) are left out (the only
    // other measured, 490 x 1 x 1 x 986 x 122 of stride 2, tied).
    // WARPREDUCE_NO_WIDE_ELEMENT_TILES=1 leaves them all a warp across: a knob for
    // measuring.
    static const bool no_wide_element_tiles = knob_is_set("WARPREDUCE_NO_WIDE_ELEMENT_TILES");
    const bool wide_element_tiles = !no_wide_element_tiles && launch.vector == 1 && bytes >= 4 &&
                                    pass.inner_stride == 1 && !pass.gapped();
    int64_t ty = std::min<int64_t>(ty_by_rows, threads / (wide_element_tiles ? 128 : 32));
    const int64_t resident = device.sms * 2 * threads;
    while (ty * 2 <= threads / 32 && 2 * pass.outer_size * columns * ty < resident &&
           rows >= ty * 2 * Tuning::kFlatColumnRowsPerLane) {
      ty *= 2;
    }
    // Phased: a whole number of the phases' period down, and at least two lanes (a tile's
    // lanes, one past its columns, then fit the shared memory that hands the parts over).
    if (phased) ty = std::max({ty, phases, int64_t{2}});
    launch.ty = static_cast<unsigned>(ty);
    launch.tx = static_cast<unsigned>(threads / launch.ty);
    launch.flat = true;
    // Where the result holds consecutive outer indices side by side, a warp takes 32 of
    // them in one column: its stores are adjacent. Across columns, each lane's outputs
    // lay a whole result row apart (bool 806 x 7 x 38762 permuted (2, 1, 0), over dim 1:
    // 833 us on an H200, torch.compile 154). On an H100 (seed 59), that sum went from 213
    // to 568 GB/s, bfloat16 384 x 2 x 4 x 20686 permuted over dim 2 from 429 to 1045,
    // int8 79164 x 8 x 191 permuted from 179 to 387 (with 4-byte words).
    // Short outer extents too, a warp across pow2_ceil(outer) of them and as many columns
    // as fill it: in result order, int8 2 x 2 x 1204931 x 4 permuted over dim 0 (outer
    // extent 4) wrote each 32-byte sector of its int64 result a quarter at a time, from
    // blocks far apart: 662 us on an H100 (seed 151, 0.38x torch.sum, torch.compile 40
    // us); a warp of 4 outer indices x 8 columns: 2.87x torch.sum on an H200.
    // Only where the stores matter: a column's bytes at most kOuterFirstMaxColumnBytes
    // times its output's (every measured gain above: 2-8 rows, outputs at least a quarter
    // of the input's bytes). Longer columns read as outer-first lost to the same tiles in
    // the pass's order, whose warps read 32 adjacent columns (H200, 2026-11-29, seed 263,
    // WARPREDUCE_NO_OUTER_FIRST=1, one round): bfloat16 12122 x 7 x 43 x 23 permuted over
    // dims (2, 1), 301 rows, 280.9 -> 59.2 us; float16 43 x 170 x 12 x 65 permuted, a
    // second pass of 12 rows of float partial sums, 25.5 -> 18.2; bool 1456524 x 1 x 5 x 6
    // permuted (6 rows, int64 outputs) kept it: 121.7 us, 372.4 without. The rule against
    // outer-first for long columns too (11:09, WARPREDUCE_LONG_OUTER_FIRST=1, the twelve
    // shapes of seeds 257-277 it changes): 1.2-3.0x faster on nine (349-35531 rows; float32
    // 370 x 3 x 827 x 24 transposed over dim 0 86.2 -> 28.9 us), tied on three (28-908).
    // WARPREDUCE_NO_OUTER_FIRST=1 leaves it out, WARPREDUCE_LONG_OUTER_FIRST=1 keeps it for
    // long columns too: knobs for measuring (benchmarks).
    static const bool no_outer_first = knob_is_set("WARPREDUCE_NO_OUTER_FIRST");
    static const bool long_outer_first = knob_is_set("WARPREDUCE_LONG_OUTER_FIRST");
    const bool stores_matter =
        element.out_bytes == 0 ||
        rows * bytes <= Tuning::kOuterFirstMaxColumnBytes * element.out_bytes;
    launch.outer_first = !phased && !no_outer_first && pass.outer_outputs_adjacent &&
                         pass.outer_size > 1 && (stores_matter || long_outer_first);
    // A warp of 32 outer indices reads 32 vectors each of another outer slice; one of 4
    // reads 8 adjacent vectors (128 bytes) of each, and stores runs of 4 outputs. Where a
    // lane's outputs take at most 32 bytes, that won on an H200 (2026-11-29 17:12-17:28, a
    // scratch knob capping the span, one build, against 32): float32 64 x 4 x 262144
    // permuted (2, 1, 0) over dim 1 322.5 -> 138.6 us, int8 191 x 8 x 79164 (int64
    // outputs, 4-byte words) 317.7 -> 183.0, bfloat16 20686 x 4 x 2 x 384 permuted over
    // dim 2 120.9 -> 102.6, 778 x 6 x 22483 176.4 -> 164.6 (seed 311's 3.0-4.0x torch.sum,
    // 0.51x torch.compile), int32 440608 x 5 x 7 (span 8 before) 41.5 -> 38.8; a span of 8
    // gained less on each (141.5, 185.7, 106.6, 168.7). bool 38762 x 7 x 806 (16 int64
    // outputs a lane, 128 bytes) lost: 376.4 -> 456.6 (398.4 at 8). As built (17:42, on
    // another machine): 141.0, 253.5, 106.5, 158.7 us; the bool sum at 32, 373.4.
    const bool narrow_lanes = element.out_bytes > 0 && launch.vector * element.out_bytes <=
                                                           Tuning::kOuterFirstNarrowLaneBytes;
    // A warp takes 32 / span columns of each outer index: where an outer slice has fewer,
    // the span widens until they fill the warp. On an H200 (2026-12-01 00:09, against
    // WARPREDUCE_NO_SPAN_FILL=1, seeds 379-401's three such shapes): float64 4 x 4 x
    // 1856258 permuted over dim 1 (2 columns of 2 elements: at a span of 4, 6 of every 8
    // lanes had none) 323.0 -> 95.8 us (0.81 -> 2.76x torch.sum), float16 4 x 6 x 8 x
    // 86196 permuted (4 columns) 40.1 -> 24.2; float32 3 x 413 x 6 x 8 x 8 x 14 permuted,
    // a second pass of 3 columns, 17.9 -> 19.1 (12 MiB, two launches).
    // WARPREDUCE_NO_SPAN_FILL=1 leaves the span as above: a knob for measuring.
    static const bool no_span_fill = knob_is_set("WARPREDUCE_NO_SPAN_FILL");
    const int64_t span = narrow_lanes ? Tuning::kOuterFirstNarrowSpan : 32;
    const int64_t filling_span =
        no_span_fill ? span : 32 / std::min<int64_t>(32, pow2_ceil(columns));
    launch.outer_span = static_cast<unsigned>(
        std::min<int64_t>(std::max(span, filling_span), pow2_ceil(pass.outer_size)));
    // Otherwise, where the result holds side by side outputs a few apart in the pass's
    // order (the narrow kept dims that the plan merges below the result's innermost dim:
    // plan.cpp), a lane's adjacent outputs lie in as many result rows, its warp's stores
    // a few bytes to each sector: the tile's outputs are staged and stored in result
    // order (columns.cuh, store_across). Against stores in the pass's order (the same
    // merged plans, H200, 2026-11-28): float16 2 x 5 x 3 x 171730 permuted over dims (2,
    // 0) 749 -> 788 GB/s, float32 2 x 1067 x 2 x 5 x 1910 transposed 3595 -> 3818,
    // bfloat16 6 x 7 x 1862928 permuted 1425 -> 1583, 3 x 3 x 84 x 5 x 25 x 100
    // transposed 490 -> 703. Outputs 23-58 apart, last passes of two, lost up to 6%
    // (float32 20 x 23 x 173 x 87 permuted over dims (3, 0), 1547 -> 1486; bfloat16 4 x 7
    // x 3 x 2 x 217 x 577 permuted, 1939 -> 1828): left out, as are wider ones.
    // WARPREDUCE_NO_STORE_ACROSS=1 leaves it out: a knob for measuring.
    static const bool no_store_across = knob_is_set("WARPREDUCE_NO_STORE_ACROSS");
    const int64_t tile_outputs = int64_t{launch.tx} * launch.vector;
    launch.store_across =
        !no_store_across && !phased && !launch.outer_first && !pass.gapped() &&
        pass.result_apart > 1 && pass.result_apart * bytes < Tuning::kApartMinBytes &&
        element.out_bytes > 0 && pass.result_apart * Tuning::kStoreAcrossMinRuns <= tile_outputs &&
        Tuning::kColumnThreads * launch.vector * element.out_bytes <= Tuning::kStoreAcrossBytes;
    // A short reduced dim gives a lane of one tile few loads in flight (2 rows of 16-byte
    // vectors: 32 bytes): for 2-byte elements a block takes tiles_at_once tiles and each
    // lane loads the rows of all its columns before it adds any, up to the rows a lane
    // has in flight, where the blocks still make kColumnAtOnceMinRounds rounds of the
    // resident ones (two an SM). On an H200 (2026-11-28, against one tile a block): with
    // 3 rounds and more, float16 3 x 11 x 4 x 16357 x 40 over dim 0 (3 rows, 7029 tiles)
    // 1.17x, float16 2 x 30860432 sliced 1.16x, 2 x 7461031 offset 1.10x, 6624195 x 2
    // transposed 1.04x (seeds 179, 183), and 1 x 2 x 24706515 over dim 1 1.17x (seed 191);
    // 4- and 8-byte elements gained nothing (12 shapes of seeds 187-197: 0.91-1.05x,
    // geomean 0.99; float32 4 x 8 x 131219 x 3 sliced 0.91x), nor 1-byte ones (bool
    // 35632607 x 2 transposed 0.85x, int64 outputs); with fewer rounds 8 of 9 shapes lost,
    // to 0.69x, and outer-first tiles lost at any count (0.76-1.00x), their places several
    // 64-bit divisions a tile, found twice when at once.
    static const bool one_tile = knob_is_set("WARPREDUCE_ONE_TILE_AT_ONCE");
    const int64_t rows_in_flight = column_rows_in_flight(launch.vector, bytes, launch.load);
    const int64_t tiles = ceil_div(pass.outer_size * columns, launch.tx);
    while (!one_tile && !sliced && bytes == Tuning::kColumnAtOnceBytes && launch.ty == 1 &&
           !launch.outer_first && !launch.store_across &&
           launch.tiles_at_once * 2 <= Tuning::kColumnMaxTilesAtOnce &&
           launch.tiles_at_once * 2 * pass.length <= rows_in_flight &&
           tiles >=
               launch.tiles_at_once * 2 * Tuning::kColumnAtOnceMinRounds * resident / threads) {
      launch.tiles_at_once *= 2;
    }
    // Otherwise, one lane down a short reduced dim: the lean kernel, a tile a block, half
    // the general kernel's rows in flight a lane and none of its trees, splits and staged
    // stores, at 40 registers and three blocks an SM (the general kernel: 64, two). On an
    // H200 (2026-11-30 21:08-21:14, a scratch knob in one build, two rounds, the 35 shapes
    // of seeds 367-383 that take one-lane flat columns of at most half a lane's rows),
    // against the general kernel: float32 4 x 5891548 strided last dim over dim 0 63.7 ->
    // 56.6 us (0.81 -> 0.91x torch.sum), float64 235 x 4 x 2 x 7527 offset (2 elements a
    // lane) 58.8 -> 49.0, 2531921 x 3 permuted 27.4 -> 23.6, float32 3 x 134 x 21 x 46 x
    // 3 x 17 over dim 0 33.5 -> 28.9, 7 x 2 x 1984207 sliced 74.0 -> 70.0, int32 4 x 4 x 2
    // x 21641 x 5 x 8 offset 60.8 -> 56.6; 4-element lanes of elements one by one lost
    // (float32 4 x 8694423 x 1 permuted 49.3 -> 52.1, bfloat16 1798 x 6718 x 4 permuted
    // 30.0 -> 31.0, int32 5 x 209 x 3 x 2 x 2 x 825 permuted 43.0 -> 45.4: 24 bytes of
    // spills, or int64 sums), so elements lean at 2 a lane at most. Under ~15 MiB the
    // calls are bound by the host. As built, on shapes not tuned on (21:34-21:38, against
    // WARPREDUCE_NO_LEAN_COLUMNS=1, two rounds): fresh seed 401's five, float32 2 x
    // 22518062 strided last dim over dim 0 198.5 -> 144.1 us (0.74 -> 1.02x torch.sum),
    // one lost, float64 4 x 4 x 1856258 permuted, outer-first, 314.7 -> 325.2, three
    // tied; the small-extent set's 42 that take it (float32, 2-4 rows) 1.07-1.29x,
    // geomean 1.18, the 2-row ones at the bound that writing their outputs sets.
    // WARPREDUCE_NO_LEAN_COLUMNS=1 leaves them out: a knob for measuring. (Lanes of an
    // element, or of 4-byte pairs and words, whose rows in flight are 32, were not
    // measured: they keep the general kernel.)
    static const bool no_lean = knob_is_set("WARPREDUCE_NO_LEAN_COLUMNS");
    launch.lean = !no_lean && launch.ty == 1 && launch.tiles_at_once == 1 && !launch.store_across &&
                  !sliced &&
                  lean_column_lanes(launch.vector, bytes, element.acc_bytes, launch.load) &&
                  pass.length <= lean_column_rows(launch.vector, bytes, launch.load);
  }
  return launch;
}

}  // namespace

bool knob_is_set(const char* name) {
  const char* v = std::getenv(name);
  return v != nullptr && std::string(v) == "1";
}

const char* launch_kind_name(LaunchKind kind) {
  // In LaunchKind's order.
  static constexpr const char* kNames[] = {"rows_vectors", "rows_short", "slabs",  "column_tiles",
                                           "rows_grouped", "rows_split", "columns"};
  return kNames[static_cast<int>(kind)];
}

std::string Launch::describe() const {
  std::ostringstream s;
  s << launch_kind_name(kind);
  switch (kind) {
    case LaunchKind::kRowsVectors:
      s << " group=" << group << " vectors=" << vectors_per_row << (covering ? " covering" : "");
      break;
    case LaunchKind::kRowsShort:
      s << " slots=" << row_slots;
      break;
    case LaunchKind::kSlabs:
      s << " segments=" << segments << " per_segment=" << per_segment << " group=" << group
        << (rotate_rows ? " rotated" : "");
      break;
    case LaunchKind::kColumnTiles:
      s << " rows=" << segments << " width=" << width;
      break;
    case LaunchKind::kRowsGrouped:
      s << " group=" << group;
      break;
    case LaunchKind::kRowsSplit:
      break;
    case LaunchKind::kColumns:
      s << " vector=" << vector
        << (load == ColumnLoad::kShifted    ? " shifted"
            : load == ColumnLoad::kElements ? " elements"
            : load == ColumnLoad::kPhased   ? " phased"
            : load == ColumnLoad::kCached   ? " cached"
                                            : "")
        << " tx=" << tx << " ty=" << ty << (flat ? " flat" : "")
        << (outer_first ? " outer_first" : "");
      if (outer_first && outer_span < 32) s << " span=" << outer_span;
      if (fold > 1) s << " fold=" << fold;
      if (fold_vectors > 1) s << " fold_vectors=" << fold_vectors;
      if (tiles_at_once > 1) s << " tiles_at_once=" << tiles_at_once;
      if (lean) s << " lean";
      if (store_across) s << " store_across";
      break;
  }
  return s.str();
}

std::string TailLaunch::describe() const {
  if (!fused) return "";
  std::ostringstream s;
  s << "tail group=";
  for (int k = 0; k < steps; ++k) {
    s << (k > 0 ? "," : "") << (groups[k] == 0 ? std::string("block") : std::to_string(groups[k]));
  }
  s << " rounds=" << rounds;
  if (blocks > 1) s << " blocks=" << blocks;
  return s.str();
}

TailLaunch choose_tail(const ReductionPass& first, const Launch& first_launch,
                       int64_t element_bytes, c10::ArrayRef<ReductionPass> rest,
                       const DeviceShape& device) {
  using Tuning = LaunchTuning;
  // WARPREDUCE_NO_TAIL=1: every pass its own launch; WARPREDUCE_TAIL_MAX_ROUNDS=n: tails
  // of up to n rounds on one block; WARPREDUCE_TAIL_MAX_BLOCKS=n: on up to n blocks,
  // WARPREDUCE_TAIL_BLOCK_ROUNDS=n: of up to n rounds there (knobs for measuring, read
  // once).
  static const bool no_tail = knob_is_set("WARPREDUCE_NO_TAIL");
  auto knob = [](const char* name, int64_t otherwise) {
    const char* v = std::getenv(name);
    return v != nullptr ? std::max<int64_t>(0, std::atoll(v)) : otherwise;
  };
  static const int64_t max_rounds = knob("WARPREDUCE_TAIL_MAX_ROUNDS", Tuning::kTailMaxRounds);
  static const int64_t knob_blocks = knob("WARPREDUCE_TAIL_MAX_BLOCKS", TailLaunch::kMaxBlocks);
  static const int64_t max_block_rounds =
      knob("WARPREDUCE_TAIL_BLOCK_ROUNDS", Tuning::kTailMaxBlockRounds);
  TailLaunch tail;
  // Tiles at once, stores across and phased columns have no kernels with a tail (build
  // time; a first pass never stores across); the tail reads its carries without gaps or
  // slices.
  const bool plain = std::all_of(rest.begin(), rest.end(), [](const ReductionPass& pass) {
    return !pass.gapped() && pass.slices == 1;
  });
  if (no_tail || rest.empty() || static_cast<int>(rest.size()) > TailLaunch::kMaxSteps || !plain ||
      first_launch.tiles_at_once > 1 || first_launch.store_across ||
      first_launch.load == ColumnLoad::kPhased ||
      first.outputs() * first.rows() * element_bytes > Tuning::kTailMaxInputBytes) {
    return tail;
  }
  const int64_t threads = Tuning::kTailThreads, in_flight = Tuning::kTailLoadsInFlight;
  // The fewest rounds of a pass on `blocks` blocks, and the group that takes them.
  auto best_group = [&](const ReductionPass& pass, int64_t blocks) {
    const int64_t outputs = pass.outputs(), length = pass.length;
    auto rounds_of = [&](int64_t group) {
      return ceil_div(outputs, blocks * (threads / group)) *
             ceil_div(ceil_div(length, group), in_flight);
    };
    std::pair<unsigned, int64_t> best{1, rounds_of(1)};
    for (unsigned group = 2; group <= 32; group *= 2) {
      if (rounds_of(group) < best.second) best = {group, rounds_of(group)};
    }
    // The whole block an output: its rounds, and its tree's (a round each).
    const int64_t block_rounds =
        ceil_div(outputs, blocks) * (ceil_div(length, threads * in_flight) + 1);
    if (block_rounds < best.second) best = {0, block_rounds};
    return best;
  };
  // Several passes run one after another on one block, within max_rounds; one on one
  // block within max_rounds, else on the fewest blocks that keep it within
  // max_block_rounds.
  const int64_t most_blocks =
      rest.size() > 1
          ? 1
          : std::clamp<int64_t>(std::min(knob_blocks, device.sms / 2), 1, TailLaunch::kMaxBlocks);
  for (int64_t blocks = 1; blocks <= most_blocks; ++blocks) {
    tail.steps = static_cast<int>(rest.size());
    tail.blocks = blocks;
    tail.rounds = 0;
    for (int k = 0; k < tail.steps; ++k) {
      const auto [group, rounds] = best_group(rest[k], blocks);
      tail.groups[k] = group;
      tail.rounds += rounds;
    }
    tail.fused = tail.rounds <= (blocks == 1 ? max_rounds : max_block_rounds);
    if (tail.fused) break;
  }
  return tail;
}

FoldBlock fold_block(const ReductionPass& pass) {
  if (pass.is_rows() || pass.inner_stride != 1 || pass.gapped() || pass.outer.ndim > 1) return {};
  FoldBlock block;
  block.count = pass.outer_size;
  block.width = pass.inner;
  block.stride = pass.outer.ndim == 1 ? pass.outer.strides[0] : pass.inner;
  if (block.count > 1 && block.stride < block.width) return {};
  block.span = (block.count - 1) * block.stride + block.width;
  return block;
}

int64_t block_read_bytes(const FoldBlock& block, int64_t period, int64_t bytes) {
  auto gap = [&](int64_t elements) { return std::min<int64_t>(elements * bytes, 32); };
  return block.count * block.width * bytes + (block.count - 1) * gap(block.stride - block.width) +
         gap(period - block.span);
}

int64_t slab_span(const ReductionPass& pass) {
  return (pass.length - 1) * pass.reduced_stride + (pass.inner - 1) * pass.inner_stride + 1;
}

int64_t max_tile_segments(int64_t bytes) { return 256 / (16 / std::min<int64_t>(bytes, 16)); }

int64_t slab_stride(const ReductionPass& pass) {
  return pass.outer.ndim == 0 ? 0 : pass.outer.strides[pass.outer.ndim - 1];
}

int64_t slabs_per_run(const ReductionPass& pass) {
  return pass.outer.ndim == 0 ? 1 : pass.outer.sizes[pass.outer.ndim - 1];
}

Launch choose_launch(const ReductionPass& pass, const ElementShape& element,
                     const DeviceShape& device) {
  return pass.is_rows() ? rows_launch(pass, element, device)
                        : columns_launch(pass, element, device);
}

}  // namespace warpreduce
