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

bool plan_pass(const Layout& layout, PassPlan* plan) {
  int reduced = -1;  // the innermost reduced dim
  for (int d = static_cast<int>(layout.size()) - 1; d >= 0 && reduced < 0; --d) {
    if (layout[d].reduced) reduced = d;
  }
  if (reduced < 0) return false;
  const int last = static_cast<int>(layout.size()) - 1;
  const bool columns = reduced != last;  // the innermost dim is kept: inner

  ReductionPass pass;
  pass.length = layout[reduced].size;
  pass.reduced_stride = layout[reduced].stride;
  if (columns) {
    pass.inner = layout[last].size;
    pass.inner_stride = layout[last].stride;
  }
  // The pass's outputs, contiguous in memory order: the outer dims, then inner.
  Layout rest;
  for (int d = 0; d <= last; ++d) {
    if (d == reduced) continue;
    rest.push_back(layout[d]);
    if (d == last && columns) continue;
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
