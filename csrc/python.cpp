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

}  // namespace
}  // namespace warpreduce

PYBIND11_MODULE(_C, m) {
  m.def("sum", &warpreduce::sum_binding, pybind11::arg("input"), pybind11::arg("dim"),
        pybind11::arg("keepdim"), pybind11::arg("kernel"),
        "warpreduce::sum(input, dim, keepdim, kernel=kernel) with the default dtype; "
        "dim is None or a sequence of ints.");
}
