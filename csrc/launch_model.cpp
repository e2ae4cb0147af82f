#include "launch_model.h"

#include <algorithm>
#include <array>
#include <cstdlib>
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

// Whether tiles of whole slabs can be copied: slabs short enough, and the memory between
// consecutive slabs (copied with them) a small share of a tile.
bool slabs_fit(const ReductionPass& pass, int64_t bytes) {
  const int64_t span = slab_span(pass), stride = slab_stride(pass);
  const int64_t most = pass.is_rows() ? Tuning::kRowSlabMaxBytes : Tuning::kSlabMaxBytes;
  if (span * bytes > most) return false;
  if (slabs_per_run(pass) == 1 || stride <= span) return true;  // adjacent or overlapping
  const int64_t gap = stride - span;
  return gap * bytes <= 32 ||
         gap * Tuning::kSlabGapDenominator <= stride * Tuning::kSlabGapNumerator;
}

// How many lanes share one output of a tile of slabs: the cost of reading the tile from
// shared memory, modelled for each power of two. A warp's first load (lane l reads row
// l % g of output l / g) is laid on the 32 banks: the most distinct 4-byte words one bank
// must serve is how many times the load is replayed. Per pass of the block over the
// tile's outputs, a lane makes ceil(length / g) such loads and log2(g) shuffles.
unsigned slab_group(const ReductionPass& pass, int64_t bytes, int64_t outputs_per_tile,
                    unsigned threads) {
  const int64_t stride = slab_stride(pass);
  unsigned best = 1;
  double best_cost = 0;
  for (unsigned g = 1; g <= 32; g *= 2) {
    std::array<std::array<int64_t, 32>, 32> words{};  // per bank, the words seen
    std::array<int, 32> distinct{};
    for (unsigned lane = 0; lane < 32; ++lane) {
      const int64_t u = lane / g, r = lane % g;
      if (r >= pass.length || u >= outputs_per_tile) continue;
      const int64_t q = u / pass.inner, i = u % pass.inner;
      const int64_t element = q * stride + i * pass.inner_stride + r * pass.reduced_stride;
      const int64_t word = element * bytes / 4;
      const int64_t bank = word % 32;
      auto& seen = words[bank];
      if (std::find(seen.begin(), seen.begin() + distinct[bank], word) ==
          seen.begin() + distinct[bank]) {
        seen[distinct[bank]++] = word;
      }
    }
    const int replays = *std::max_element(distinct.begin(), distinct.end());
    const int64_t passes = ceil_div(outputs_per_tile * g, threads);
    int shuffles = 0;
    for (unsigned s = g; s > 1; s /= 2) ++shuffles;
    const double cost =
        static_cast<double>(passes) * (replays * ceil_div(pass.length, g) + 2 * shuffles);
    if (g == 1 || cost < best_cost) {
      best = g;
      best_cost = cost;
    }
  }
  return best;
}

Launch slabs_launch(const ReductionPass& pass, int64_t bytes) {
  Launch launch;
  launch.kind = LaunchKind::kSlabs;
  const int64_t span = slab_span(pass), stride = slab_stride(pass);
  const int64_t capacity = Tuning::kTileBytes / bytes - 16 / std::min<int64_t>(bytes, 16);
  int64_t k = stride == 0 ? 64 : (capacity - span) / stride + 1;
  k = std::clamp<int64_t>(k, 1, slabs_per_run(pass));
  launch.slabs_per_tile = k;
  launch.tile_span = (k - 1) * stride + span;
  launch.group = slab_group(pass, bytes, k * pass.inner, /*threads=*/256);
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
  // Short rows: tiled.
  if (slabs_fit(pass, bytes)) return slabs_launch(pass, bytes);
  // A group of lanes per row (a warp for rows of 512 bytes or more) while the rows keep a
  // quarter of the GPU's threads busy and a lane's share is at most 64 loads; else
  // whole blocks, several per row when the rows are few.
  const int64_t loads = pass.reduced_stride == 1 ? ceil_div(pass.length, element.lanes())
                                                 : pass.length;
  const int64_t group = std::min<int64_t>(32, pow2_ceil(loads));
  const int64_t capacity = device.sms * device.threads_per_sm;
  if (pass.outer_size * group >= capacity / 4 &&
      loads <= 32 * Tuning::kGroupedMaxVectorsPerLane) {
    launch.kind = LaunchKind::kRowsGrouped;
    launch.group = static_cast<unsigned>(group);
  }
  return launch;
}

Launch columns_launch(const ReductionPass& pass, const ElementShape& element) {
  const int64_t bytes = element.bytes, lanes = element.lanes();
  bool vectors = element.vectors() && lanes > 1 && pass.inner_stride == 1 &&
                 pass.inner % lanes == 0 && pass.reduced_stride % lanes == 0 &&
                 element.data_address % 16 == 0 && element.output_address % 16 == 0;
  for (int d = 0; d < pass.outer.ndim; ++d) vectors = vectors && pass.outer.strides[d] % lanes == 0;
  // Short slabs: through shared memory, unless the loads are whole vectors already (a
  // lane then owns a vector of adjacent outputs, and its loads down a short reduced dim
  // are in flight together). WARPREDUCE_PREFER_SLABS=1 tiles every slab that fits: a
  // knob for measuring the two side by side (benchmarks), read once.
  static const bool prefer_slabs = [] {
    const char* v = std::getenv("WARPREDUCE_PREFER_SLABS");
    return v != nullptr && std::string(v) == "1";
  }();
  if (slabs_fit(pass, bytes) && (!vectors || prefer_slabs)) return slabs_launch(pass, bytes);

  Launch launch;
  launch.kind = LaunchKind::kColumns;
  launch.vector = vectors ? lanes : 1;
  const int64_t columns = ceil_div(pass.inner, launch.vector);  // of vectors, an outer slice
  const int64_t rows_per_lane =
      vectors ? Tuning::kColumnRowsPerLane : Tuning::kColumnRowsPerLaneScalar;
  const int64_t threads = Tuning::kColumnThreads;
  // Lanes down the reduced dim while each keeps rows_per_lane rows.
  const int64_t ty_by_rows = std::min(pow2_floor(std::max<int64_t>(1, pass.length / rows_per_lane)),
                                      threads);
  // A warp across a slab's columns when they are at least 32 (512 contiguous bytes with
  // vectors), or, when fewer, across one slab's columns and several of its rows, if the
  // rows keep that many lanes busy; otherwise the lanes run across outer slices (flat),
  // each with its outputs' whole column of a short reduced dim.
  if (columns < 32 && ty_by_rows >= threads / pow2_ceil(columns)) {
    launch.tx = static_cast<unsigned>(pow2_ceil(columns));
    launch.ty = static_cast<unsigned>(threads / launch.tx);
    launch.flat = false;
  } else {
    launch.ty = static_cast<unsigned>(std::min<int64_t>(ty_by_rows, threads / 32));
    launch.tx = static_cast<unsigned>(threads / launch.ty);
    launch.flat = true;
  }
  return launch;
}

}  // namespace

const char* launch_kind_name(LaunchKind kind) {
  switch (kind) {
    case LaunchKind::kRowsVectors:
      return "rows_vectors";
    case LaunchKind::kSlabs:
      return "slabs";
    case LaunchKind::kRowsGrouped:
      return "rows_grouped";
    case LaunchKind::kRowsSplit:
      return "rows_split";
    case LaunchKind::kColumns:
      return "columns";
  }
  return "";
}

std::string Launch::describe() const {
  std::ostringstream s;
  s << launch_kind_name(kind);
  switch (kind) {
    case LaunchKind::kRowsVectors:
      s << " group=" << group << " vectors=" << vectors_per_row;
      break;
    case LaunchKind::kSlabs:
      s << " slabs_per_tile=" << slabs_per_tile << " group=" << group;
      break;
    case LaunchKind::kRowsGrouped:
      s << " group=" << group;
      break;
    case LaunchKind::kRowsSplit:
      break;
    case LaunchKind::kColumns:
      s << " vector=" << vector << " tx=" << tx << " ty=" << ty << (flat ? " flat" : "");
      break;
  }
  return s.str();
}

int64_t slab_span(const ReductionPass& pass) {
  return (pass.length - 1) * pass.reduced_stride + (pass.inner - 1) * pass.inner_stride + 1;
}

int64_t slab_stride(const ReductionPass& pass) {
  return pass.outer.ndim == 0 ? 0 : pass.outer.strides[pass.outer.ndim - 1];
}

int64_t slabs_per_run(const ReductionPass& pass) {
  return pass.outer.ndim == 0 ? 1 : pass.outer.sizes[pass.outer.ndim - 1];
}

Launch choose_launch(const ReductionPass& pass, const ElementShape& element,
                     const DeviceShape& device) {
  return pass.is_rows() ? rows_launch(pass, element, device) : columns_launch(pass, element);
}

}  // namespace warpreduce
