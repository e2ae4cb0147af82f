// warpreduce_torch._C: importing it loads this library, which runs the TORCH_LIBRARY
// registrations of the other files. It also binds the common call, sum(x, dim, keepdim,
// kernel=...) with the default dtype, so that warpreduce_torch.sum reaches the op without
// torch.ops' boxed path.
//
// Why: torch.ops.warpreduce.sum turns each Python argument into an IValue against the
// schema, then unboxes them again (~8.2 us a small call on the GPU machine, against
// torch.sum's ~7.8 us, whose binding is generated code). This binding makes the same
// typed dispatcher call that a C++ caller would, so autograd, dispatch modes, fake
// tensors and functionalization all still apply; warpreduce_torch.sum takes torch.ops
// whenever Python must see the call (torch.compile, __torch_function__ overrides).
#include <ATen/core/dispatch/Dispatcher.h>
#include <torch/csrc/Exceptions.h>
#include <torch/csrc/utils/pybind.h>

#include "plan.h"

namespace warpreduce {
namespace {

at::Tensor sum_binding(const at::Tensor& self, std::optional<std::vector<int64_t>> dim,
                       bool keepdim, const std::string& kernel) {
  HANDLE_TH_ERRORS
  static const auto op = c10::Dispatcher::singleton()
                             .findSchemaOrThrow("warpreduce::sum", "")
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
