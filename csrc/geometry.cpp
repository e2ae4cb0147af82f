#include "geometry.h"

#include <algorithm>

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
                     const DimOrder& order, uint64_t reduced) {
  Layout merged;
  for (int d : order) {
    const LayoutDim dim{sizes[d], strides[d], ((reduced >> d) & 1) != 0};
    if (!merged.empty()) {
      LayoutDim& above = merged.back();
      if (above.reduced == dim.reduced && above.stride == dim.size * dim.stride) {
        above.size *= dim.size;
        above.stride = dim.stride;
        continue;
      }
    }
    merged.push_back(dim);
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

// The reduced dim to sum first instead of the innermost one, or -1.
int short_reduced_second(const Layout& layout) {
  const int last = static_cast<int>(layout.size()) - 1;
  int64_t short_product = 1;  // of the reduced dims below b
  bool kept_below = false;
  for (int b = last; b >= 0; --b) {
    const LayoutDim& dim = layout[b];
    if (dim.reduced && short_product > 1 && kept_below && dim.size > short_product) return b;
    if (b < last && layout[b].stride != layout[b + 1].size * layout[b + 1].stride) return -1;
    if (dim.reduced) {
      short_product *= dim.size;
      if (short_product > kShortReduced) return -1;
    } else {
      kept_below = true;
    }
  }
  return -1;
}

// How the innermost reduced dim `reduced` (the last dim: rows) reads as a gapped row:
// alone (a stride of 2 or more) or with the reduced dim above it (its rows a gap apart),
// per `gaps`. Returns the dims the row takes (0: not gapped, 1 or 2) and sets the pass's
// span and gaps.
int gapped_row(const Layout& layout, int reduced, const RowGaps& gaps, ReductionPass* pass) {
  const LayoutDim& row = layout[reduced];
  if (gaps.max_gap <= 0 || row.stride < 1) return 0;
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
  if (dims == 0 || period <= width || period - width > gaps.max_gap || span < gaps.min_span ||
      span >= (int64_t{1} << 31)) {
    return 0;
  }
  pass->length = span;
  pass->reduced_stride = 1;
  pass->period = period;
  pass->width = width;
  return dims;
}

}  // namespace

bool plan_pass(const Layout& layout, PassPlan* plan, const RowGaps& gaps) {
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
  if (const int big = short_reduced_second(layout); big >= 0) {
    reduced = big;
    inner = big + 1;
  }
  const bool columns = inner <= last;

  ReductionPass pass;
  pass.length = layout[reduced].size;
  pass.reduced_stride = layout[reduced].stride;
  // A gapped row of two dims takes the reduced dim above `reduced` too.
  const int gapped_above =
      !columns && gapped_row(layout, reduced, gaps, &pass) == 2 ? reduced - 1 : -1;
  if (columns) {
    pass.inner = 1;
    for (int d = inner; d <= last; ++d) pass.inner *= layout[d].size;
    pass.inner_stride = layout[last].stride;
  }
  // The pass's outputs, contiguous in memory order: the outer dims, then inner.
  Layout rest;
  for (int d = 0; d <= last; ++d) {
    if (d == reduced || d == gapped_above) continue;
    rest.push_back(layout[d]);
    if (d >= inner) continue;
    // Within the pass, kept dims and reduced dims left for later are alike: outer dims
    // merge whenever they are one dim in memory (x.sum((0, 2)): rows one after the other).
    OuterDims& outer = pass.outer;
    const int n = outer.ndim;
    if (n > 0 && outer.strides[n - 1] == layout[d].size * layout[d].stride) {
      outer.sizes[n - 1] *= layout[d].size;
      outer.strides[n - 1] = layout[d].stride;
    } else {
      if (n == kMaxOuterDims) return false;
      outer.sizes[n] = layout[d].size;
      outer.strides[n] = layout[d].stride;
      outer.ndim++;
    }
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
