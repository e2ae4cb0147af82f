#include "geometry.h"

#include <algorithm>
#include <numeric>
#include <vector>

namespace warpreduce {

DimOrder memory_order(c10::ArrayRef<int64_t> sizes, c10::ArrayRef<int64_t> strides) {
  DimOrder order;
  for (size_t d = 0; d < sizes.size(); ++d) {
    if (sizes[d] != 1) order.push_back(static_cast<int>(d));
  }
  // stable_sort keeps the tensor's own order between equal strides.
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
    if ((strides[a] == 0) != (strides[b] == 0)) return strides[a] == 0;
    return strides[a] > strides[b];
  });
  return order;
}

Layout memory_layout(c10::ArrayRef<int64_t> sizes, c10::ArrayRef<int64_t> strides,
                     const DimOrder& order, uint64_t reduced, int unmerged_above) {
  Layout merged;
  int innermost = -1;  // the last dim merged into merged.back()
  for (int d : order) {
    const LayoutDim dim{sizes[d], strides[d], ((reduced >> d) & 1) != 0};
    if (!merged.empty() && innermost != unmerged_above) {
      LayoutDim& above = merged.back();
      if (above.reduced == dim.reduced && above.stride == dim.size * dim.stride) {
        above.size *= dim.size;
        above.stride = dim.stride;
        innermost = d;
        continue;
      }
    }
    merged.push_back(dim);
    innermost = d;
  }
  return merged;
}

namespace {

// Short reduced dims second: the first pass of a layout sums its innermost reduced dim,
// but not where that dim and any other reduced dims below R_big, a longer reduced dim
// above them, are short (their product at most kShortReduced) and lie in one block of
// memory with kept dims, [..., R_big, (K | R_short)...] (the block one dim in memory).
// There R_big goes first, as columns whose inner dim is the whole block (within a pass,
// kept dims and dims left for later are alike), and writes 1/R_big.size of the input for
// the short dims' passes that follow. Innermost first, a short dim's pass read the input
// and wrote 1/R_short.size of it: bfloat16 [2, 2248, 227, 6] summed over 2248 and 6 ran
// at 0.46x torch.sum so on an H100 (short rows), float32 [313, 3, 4, 3, 827, 5] over
// (0, 1, 3) at 0.44x (a short reduced dim between kept ones: 62 MB written for 178 MB
// read).
constexpr int64_t kShortReduced = 16;

// A block of dims layout[first..last] read as one gapped span (Gaps): its innermost dim
// strided (period: its stride, width 1), or contiguous under a dim a short gap above it
// (period: that dim's stride, width: the innermost dim's size); every dim above one dim in
// memory with the dims below it. span 0: not such a block, or not as Gaps allows.
struct BlockGaps {
  int64_t span = 0, period = 1, width = 1;
};

// Whether the dim above a contiguous innermost dim `bottom` leaves a gap of at most
// max_gap elements after each of its rows.
bool short_gap_above(const LayoutDim& above, const LayoutDim& bottom, int64_t max_gap) {
  return bottom.stride == 1 && above.stride > bottom.size && above.stride - bottom.size <= max_gap;
}

// Whether the rows of every dim but layout[first..last] start alike on a 16-byte vector
// (Gaps::lanes elements), the data too.
bool rows_aligned_but(const Layout& layout, int first, int last, const Gaps& gaps) {
  if (!gaps.data_aligned || gaps.lanes <= 0) return false;
  for (int e = 0; e < static_cast<int>(layout.size()); ++e) {
    if ((e < first || e > last) && layout[e].stride % gaps.lanes != 0) return false;
  }
  return true;
}

// For slab tiles (`tiles`, Gaps::tiled_gaps): short rows a gap apart only (a strided
// innermost dim is one inner dim of the tiles already), any span.
BlockGaps gapped_block(const Layout& layout, int first, int last, const Gaps& gaps,
                       bool tiles = false) {
  const int64_t max_gap = gaps.max_column_gap;
  if (max_gap <= 0 || first > last) return {};
  const LayoutDim& bottom = layout[last];
  BlockGaps g;
  int64_t count = 0;
  int d = 0;  // the dims from d up merge with the block below them
  // The rows of a strided innermost dim alone, aligned alike (Gaps::lanes): where they are
  // not, vectors would be shifted, which lost to the column tiles of a strided dim
  // (bfloat16 8 x 1782929, x[..., ::2] over dim 0: 0.92x torch.sum tiled, 0.71x by
  // shifted vectors, H200; aligned, 7 x 106 x 6 x 13 x 1 x 320 over dim 3 went from 0.53x
  // to 0.76x by vectors).
  if (!tiles && bottom.stride > 1 && bottom.stride - 1 <= max_gap &&
      rows_aligned_but(layout, first, last, gaps)) {
    g.period = bottom.stride;
    count = bottom.size;
    d = last - 1;
  } else if (first < last && short_gap_above(layout[last - 1], bottom, max_gap)) {
    g.period = layout[last - 1].stride;
    g.width = bottom.size;
    count = layout[last - 1].size;
    d = last - 2;
  } else {
    return {};
  }
  for (; d >= first; --d) {
    if (layout[d].stride != count * g.period) return {};
    count *= layout[d].size;
  }
  // (The kernels index a span with 32-bit arithmetic.)
  const int64_t span = (count - 1) * g.period + g.width;
  if (span >= (int64_t{1} << 31) || (span < gaps.min_column_span && !tiles)) return {};
  g.span = span;
  return g;
}

// The padded inner dim under reduced dim `reduced` (Gaps): the span, whole vectors; 0
// where there is none.
BlockGaps padded_block(const Layout& layout, int reduced, const Gaps& gaps) {
  const int last = static_cast<int>(layout.size()) - 1;
  const LayoutDim& bottom = layout[last];
  const int64_t lanes = gaps.lanes;
  if (bottom.size > gaps.max_padded_width || lanes <= 1 || reduced != last - 1 ||
      bottom.stride != 1 || bottom.size % lanes == 0 ||
      !rows_aligned_but(layout, last, last, gaps)) {
    return {};
  }
  const int64_t span = (bottom.size + lanes - 1) / lanes * lanes;
  if (span > layout[reduced].stride || span - bottom.size > gaps.slack) return {};
  return {span, span, bottom.size};
}

// Whether layout[first..last] is one dim in memory.
bool one_dim(const Layout& layout, int first, int last) {
  for (int d = first; d < last; ++d) {
    if (layout[d].stride != layout[d + 1].size * layout[d + 1].stride) return false;
  }
  return true;
}

// The reduced dim to sum first instead of the innermost one, or -1. With gaps, the block
// under it may be gapped at its bottom (gapped_block), then read as a gapped inner dim.
int short_reduced_second(const Layout& layout, int64_t max_gap) {
  const int last = static_cast<int>(layout.size()) - 1;
  int64_t short_product = 1;  // of the reduced dims below b
  bool kept_below = false;
  for (int b = last; b >= 0; --b) {
    const LayoutDim& dim = layout[b];
    if (dim.reduced && short_product > 1 && kept_below && dim.size > short_product) return b;
    const bool gap_below = b == last - 1 && short_gap_above(layout[b], layout[last], max_gap);
    if (b < last && layout[b].stride != layout[b + 1].size * layout[b + 1].stride && !gap_below) {
      return -1;
    }
    if (dim.reduced) {
      short_product *= dim.size;
      if (short_product > kShortReduced) return -1;
    } else {
      kept_below = true;
    }
  }
  return -1;
}

// The per cent of a gapped row's 32-byte sectors that hold elements: `width` elements of
// `bytes` every `period`, the least over the data's alignments (a multiple of `bytes`).
// Starts a period or a sector apart hold the same share of the cycle, so the alignments
// mod gcd(period bytes, 32) are all there is to try: the same share for every period of
// up to 1 KiB, width and element size (each compared, 2026-12-02), where trying all 32
// took 173 us for int8 rows 1023 bytes apart (2.9 us so; timed alone, the dev machine).
int64_t row_sector_percent(int64_t period, int64_t width, int64_t bytes) {
  constexpr int64_t kSector = 32;
  const int64_t period_bytes = period * bytes;
  const int64_t cycle = std::lcm(period_bytes, kSector);  // bytes after which it repeats
  const int64_t sectors = cycle / kSector;
  const int64_t alignments = std::gcd(period_bytes, kSector);
  int64_t least = 100;
  std::vector<bool> held(sectors);  // a sector past the cycle is its first again
  for (int64_t start = 0; start < alignments; start += bytes) {
    std::fill(held.begin(), held.end(), false);
    for (int64_t row = start; row < start + cycle; row += period_bytes) {
      const int64_t first = row / kSector, last = (row + width * bytes - 1) / kSector;
      for (int64_t s = first; s <= last; ++s) held[s % sectors] = true;
    }
    const int64_t count = std::count(held.begin(), held.end(), true);
    least = std::min(least, 100 * count / sectors);
  }
  return least;
}

// How the innermost reduced dim `reduced` (the last dim: rows) reads as a gapped row:
// alone (a stride of 2 or more) or with the reduced dim above it (its rows a gap apart),
// per `gaps`. Returns the dims the row takes (0: not gapped, 1 or 2) and sets the pass's
// span and gaps.
int gapped_row(const Layout& layout, int reduced, const Gaps& gaps, ReductionPass* pass) {
  const LayoutDim& row = layout[reduced];
  if (gaps.max_row_gap <= 0 || row.stride < 1) return 0;
  int64_t span = 0, period = 0, width = 0;
  int dims = 0;
  if (row.stride > 1) {
    period = row.stride;
    width = 1;
    span = (row.size - 1) * row.stride + 1;
    dims = 1;
  } else if (reduced > 0 && layout[reduced - 1].reduced) {
    const LayoutDim& above = layout[reduced - 1];
    period = above.stride;
    width = row.size;
    span = (above.size - 1) * above.stride + row.size;
    dims = 2;
  }
  // (The kernels index a span with 32-bit arithmetic.)
  const bool short_rows = dims == 2 && width * gaps.element_bytes <= gaps.max_short_row_bytes;
  if (dims == 0 || period <= width || (span < gaps.min_row_span && !short_rows) ||
      span >= (int64_t{1} << 31)) {
    return 0;
  }
  // (Wider gaps for rows a gap apart only: a strided dim alone read as a row costs
  // instructions for its gaps, where its other plan, rows_split or rows_grouped by
  // elements, is one pass too: Gaps says more.)
  const bool narrow_gaps = period - width <= gaps.max_row_gap;
  const bool few_empty_sectors =
      !narrow_gaps && dims == 2 && gaps.min_row_sector_percent > 0 &&
      period * gaps.element_bytes <= gaps.max_wide_row_period &&
      row_sector_percent(period, width, gaps.element_bytes) >= gaps.min_row_sector_percent;
  if (!narrow_gaps && !few_empty_sectors) return 0;
  pass->length = span;
  pass->reduced_stride = 1;
  pass->period = period;
  pass->width = width;
  return dims;
}

}  // namespace

bool plan_pass(const Layout& layout, PassPlan* plan, const Gaps& gaps, bool slices) {
  const int last = static_cast<int>(layout.size()) - 1;
  int reduced = -1;  // the innermost reduced dim
  for (int d = last; d >= 0 && reduced < 0; --d) {
    if (layout[d].reduced) reduced = d;
  }
  if (reduced < 0) return false;
  // The dims from `inner` on are the pass's inner dim, one dim in memory: the innermost
  // dim where that is kept, or none (a row reduction); or, short reduced dims second, the
  // block of kept and short reduced dims under R_big.
  int inner = reduced == last ? last + 1 : last;
  BlockGaps block;
  bool slab_tiles = false;  // a gapped inner dim for the tiles of whole slabs
  const int big = short_reduced_second(layout, gaps.max_column_gap);
  if (big >= 0) block = gapped_block(layout, big + 1, last, gaps);
  if (big >= 0 && (block.span > 0 || one_dim(layout, big + 1, last))) {
    reduced = big;
    inner = big + 1;
  } else if (inner == last) {
    block = {};
    // A gapped inner dim: the most kept dims above the innermost that one span holds,
    // where one output's elements span more memory than the slab tiles take; with
    // Gaps::tiled_gaps also where they span less, if the gapped slab still does.
    const LayoutDim& bottom = layout[last];
    const int64_t rows_span = (layout[reduced].size - 1) * layout[reduced].stride;
    const int64_t slab = rows_span + (bottom.size - 1) * bottom.stride + 1;
    const bool tiles = slab <= gaps.min_column_slab;
    for (int first = reduced + 1; (!tiles || gaps.tiled_gaps) && first <= last; ++first) {
      block = gapped_block(layout, first, last, gaps, tiles);
      if (tiles && rows_span + block.span > gaps.min_column_slab) block = {};
      if (block.span > 0) {
        inner = first;
        slab_tiles = tiles;
        break;
      }
    }
    if (block.span == 0 && slab > gaps.min_column_slab) block = padded_block(layout, reduced, gaps);
  }
  const bool columns = inner <= last;

  ReductionPass pass;
  pass.length = layout[reduced].size;
  pass.reduced_stride = layout[reduced].stride;
  // A gapped row of two dims takes the reduced dim above `reduced` too.
  const int gapped_above =
      !columns && gapped_row(layout, reduced, gaps, &pass) == 2 ? reduced - 1 : -1;
  if (columns && block.span > 0) {
    pass.inner = block.span;
    pass.period = block.period;
    pass.width = block.width;
    pass.tiled_gaps = slab_tiles;
  } else if (columns) {
    pass.inner = 1;
    for (int d = inner; d <= last; ++d) pass.inner *= layout[d].size;
    pass.inner_stride = layout[last].stride;
  }
  // Slices: the innermost reduced outer dim, its rows within one step of it (the rows a
  // lane adds then run up in memory: columns.cuh checks their ends), fewer than 2^31 rows
  // in all (columns.cuh indexes them with 32-bit divisions), where the columns are whole
  // aligned 16-byte vectors (which the launch model neither tiles nor folds: row r's
  // place, a division, then costs little a byte). On an H200 (2026-11-29, against a pass
  // each; WARPREDUCE_NO_COLUMN_SLICES=1): float32 38 x 2 x 54191 x 2 x 4 over dims (1,
  // 3) 142.9 -> 50.5 us, 1417 x 81 x 4 x 13 sliced 20.1 -> 16.7; columns of an element
  // or a pair a lane lost 1.3-1.6x (float32 2 x 4561 x 1784 sliced 26.6 -> 36.0 us, 8 x
  // 31 x 5 x 183 x 233 transposed 69.0 -> 97.6, bfloat16 7 x 2 x 233754 x 5 33.8 -> 48.2).
  const bool whole_vectors = gaps.lanes > 1 && block.span == 0 && columns &&
                             layout[last].stride == 1 && pass.inner % gaps.lanes == 0 &&
                             rows_aligned_but(layout, inner, last, gaps);
  int sliced = -1;
  if (slices && whole_vectors && pass.reduced_stride > 0) {
    for (int d = inner - 1; d >= 0 && sliced < 0; --d) {
      if (d != reduced && layout[d].reduced) sliced = d;
    }
    if (sliced >= 0 && (layout[sliced].stride < pass.length * pass.reduced_stride ||
                        pass.length * layout[sliced].size >= (int64_t{1} << 31))) {
      sliced = -1;
    }
    if (sliced >= 0) {
      pass.slices = layout[sliced].size;
      pass.slice_stride = layout[sliced].stride;
    }
  }
  // The pass's outputs, contiguous in memory order: the outer dims, then inner.
  Layout rest;
  for (int d = 0; d <= last; ++d) {
    if (d == reduced || d == gapped_above || d == sliced) continue;
    rest.push_back(layout[d]);
    if (d >= inner) continue;
    // Within the pass, kept dims and reduced dims left for later are alike: outer dims
    // merge whenever they are one dim in memory (x.sum((0, 2)): rows one after the other).
    if (!pass.outer.append(layout[d].size, layout[d].stride)) return false;
    pass.outer_size *= layout[d].size;
  }
  int64_t stride = 1;
  for (auto it = rest.rbegin(); it != rest.rend(); ++it) {
    it->stride = stride;
    stride *= it->size;
  }
  // Written contiguously, the dims left may now merge.
  Layout merged;
  for (const LayoutDim& dim : rest) {
    if (!merged.empty() && merged.back().reduced == dim.reduced) {
      merged.back().size *= dim.size;
      merged.back().stride = dim.stride;
    } else {
      merged.push_back(dim);
    }
  }
  plan->pass = pass;
  plan->rest = merged;
  return true;
}

bool PassPlan::last() const {
  return std::none_of(rest.begin(), rest.end(), [](const LayoutDim& d) { return d.reduced; });
}

}  // namespace warpreduce
