// The chain of passes of a plan (geometry.h), written once for every device and kernel:
// pass 0 reads the input, each later pass the partial sums the one before left in a
// scratch tensor (of Carry: a wider sum, or exact's certified sums), and the last pass
// writes the output. run(x, pass, y) runs one pass, from elements of any type to any.
#pragma once

#include <ATen/core/Tensor.h>
#include <ATen/ops/empty.h>

#include "plan.h"

namespace warpreduce {

template <typename Carry, typename T, typename Out, typename Run>
void run_pass_chain(const SumPlan& plan, const T* x, Out* y, const at::Tensor& like, Run&& run) {
  const auto& passes = plan.passes;
  if (passes.size() == 1) return run(x, passes[0], y);
  auto scratch = [&](const ReductionPass& pass) {
    return at::empty({pass.outputs() * static_cast<int64_t>(sizeof(Carry))},
                     like.options().dtype(at::kByte));
  };
  auto carries = [](const at::Tensor& t) { return reinterpret_cast<Carry*>(t.data_ptr()); };
  at::Tensor carried = scratch(passes[0]);
  run(x, passes[0], carries(carried));
  for (size_t k = 1; k + 1 < passes.size(); ++k) {
    at::Tensor next = scratch(passes[k]);
    run(static_cast<const Carry*>(carries(carried)), passes[k], carries(next));
    carried = next;
  }
  run(static_cast<const Carry*>(carries(carried)), passes.back(), y);
}

}  // namespace warpreduce
