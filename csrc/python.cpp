// warpreduce_torch._C: importing it loads this library, which runs the TORCH_LIBRARY
// registrations of the other files. It also binds the common call, sum(x, dim, keepdim,
// kernel=...) with the default dtype, so that warpreduce_torch.sum reaches the op without
// torch.ops' boxed path.
//
// Why: torch.ops.warpreduce.sum turns each Python argument into an IValue against the
// schema, then unboxes them again: on the GPU machine's host a small call through it
// cost about as much as a whole torch.sum, and 1-2 us more than through this binding
// (benchmarks/host_overhead.py, RESULTS.md). This binding makes the same typed
// dispatcher call that a C++ caller would, so autograd, dispatch modes, fake tensors and
// functionalization all still apply; warpreduce_torch.sum takes torch.ops whenever
// Python must see the call (torch.compile, __torch_function__ overrides).
#include <ATen/core/dispatch/Dispatcher.h>
#include <torch/csrc/Exceptions.h>
#include <torch/csrc/utils/pybind.h>

#include "plan.h"

namespace warpreduce {
namespace {

at::Tensor sum_binding(const at::Tensor& self, std::optional<std::vector<int64_t>> dim,
                       bool keepdim, const std::string& kernel) {
  HANDLE_TH_ERRORS
  // warpreduce::sum only forwards to _sum (ops.cpp): call _sum, one dispatch fewer.
  static const auto op = c10::Dispatcher::singleton()
                             .findSchemaOrThrow("warpreduce::_sum", "")
                             .typed<SumSignature>();
  const pybind11::gil_scoped_release no_gil;  // as torch's own bindings do
  return op.call(self, dim ? at::OptionalIntArrayRef(*dim) : std::nullopt, keepdim, std::nullopt,
                 kernel);
  END_HANDLE_TH_ERRORS_PYBIND
}

// How warpreduce.sum(x, dim) would run: the plan's passes (geometry.h) as dicts, for
// the tests and the benchmarks. Runs no kernel.
pybind11::dict describe_plan(const at::Tensor& x, std::optional<std::vector<int64_t>> dim) {
  const SumPlan plan = make_plan(x, dim ? at::OptionalIntArrayRef(*dim) : std::nullopt,
                                 /*keepdim=*/false, std::nullopt, "auto");
  pybind11::list passes;
  for (const ReductionPass& p : plan.passes) {
    pybind11::list outer;
    for (int d = 0; d < p.outer.ndim; ++d) outer.append(pybind11::make_tuple(p.outer.sizes[d], p.outer.strides[d]));
    pybind11::dict pass;
    pass["kind"] = p.is_rows() ? "rows" : "columns";
    pass["outer"] = outer;
    pass["length"] = p.length;
    pass["reduced_stride"] = p.reduced_stride;
    pass["inner"] = p.inner;
    pass["inner_stride"] = p.inner_stride;
    pass["packed_rows"] = p.packed_rows();
    pass["even_rows"] = p.even_rows();
    passes.append(pass);
  }
  pybind11::dict out;
  out["passes"] = passes;
  out["copied"] = plan.copied;
  out["needs_kernel"] = !plan.result.has_value();
  return out;
}

}  // namespace
}  // namespace warpreduce

PYBIND11_MODULE(_C, m) {
  m.def("sum", &warpreduce::sum_binding, pybind11::arg("input"), pybind11::arg("dim"),
        pybind11::arg("keepdim"), pybind11::arg("kernel"),
        "warpreduce::sum(input, dim, keepdim, kernel=kernel) with the default dtype; "
        "dim is None or a sequence of ints.");
  m.def("plan", &warpreduce::describe_plan, pybind11::arg("input"), pybind11::arg("dim") = pybind11::none(),
        "How warpreduce.sum(input, dim) runs: its passes over the reduction geometry.");
}
