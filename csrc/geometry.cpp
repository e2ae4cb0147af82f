#include "geometry.h"

#include <algorithm>

namespace warpreduce {

std::vector<int> memory_order(const std::vector<int64_t>& sizes,
                              const std::vector<int64_t>& strides) {
  std::vector<int> order;
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

std::vector<LayoutDim> memory_layout(const std::vector<int64_t>& sizes,
                                     const std::vector<int64_t>& strides,
                                     const std::vector<bool>& reduced) {
  std::vector<LayoutDim> merged;
  for (int d : memory_order(sizes, strides)) {
    const LayoutDim dim{sizes[d], strides[d], reduced[d]};
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

bool plan_pass(const std::vector<LayoutDim>& layout, PassPlan* plan) {
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
  std::vector<LayoutDim> rest;
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
  std::vector<int64_t> sizes, strides;
  std::vector<bool> flags;
  for (const LayoutDim& dim : rest) {
    sizes.push_back(dim.size);
    strides.push_back(dim.stride);
    flags.push_back(dim.reduced);
  }
  plan->pass = pass;
  plan->rest = memory_layout(sizes, strides, flags);
  return true;
}

bool PassPlan::last() const {
  return std::none_of(rest.begin(), rest.end(), [](const LayoutDim& d) { return d.reduced; });
}

}  // namespace warpreduce
