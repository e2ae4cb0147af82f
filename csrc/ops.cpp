// The op's schema, defined once. The bodies register themselves in their own files:
// CPU (cpu/sum_cpu.cpp), CUDA (cuda/sum_cuda.cu), autograd (autograd.cpp); the fake
// kernel is in warpreduce_torch/ops.py, the Python module in python.cpp.
#include <torch/library.h>

#include "ops.h"

namespace warpreduce {
namespace {

// The kernel names for a device, all of them or those of one role ("stage", "fast",
// "exact", "baseline"), in the order of the device's table.
std::vector<std::string> kernels_op(c10::string_view device_type,
                                    std::optional<c10::string_view> role) {
  std::optional<KernelRole> wanted;
  if (role) {
    std::string roles;
    for (KernelRole r : kKernelRoles) {
      if (role_name(r) == *role) wanted = r;
      roles += (roles.empty() ? "" : ", ") + std::string(role_name(r));
    }
    TORCH_CHECK_VALUE(wanted, "warpreduce.kernels: unknown role '", *role, "'; roles: ", roles);
  }
  return kernel_names(c10::Device(std::string(device_type)).type(), wanted);
}

// warpreduce::sum forwards to warpreduce::_sum, which carries the kernels. _sum's last
// argument is a positional `kernel_name` rather than the keyword-only `kernel`, because
// Inductor's fallback path (FallbackKernel.create(cls, kernel, *args, **kwargs) in torch
// 2.14) takes an op argument named `kernel` as its own and fails; sum is
// CompositeImplicitAutograd, so a compiled graph records _sum instead.
at::Tensor sum(const at::Tensor& self, at::OptionalIntArrayRef dim, bool keepdim,
               std::optional<at::ScalarType> dtype, c10::string_view kernel) {
  return call_sum_op(self, dim, keepdim, dtype, kernel);
}

// kernel="exact" as an op of its own: warpreduce::sum calls _exact_sum for it, so that
// DTensor, which hands every call of an op with a handler of its own to that handler (in
// Python, about twice the cost of its fast path), can exchange exact partial sums for it
// alone (warpreduce_torch/distributed.py) while the other kernels keep the fast path.
// Below autograd it runs _sum's kernel "exact".
at::Tensor exact_sum(const at::Tensor& self, at::OptionalIntArrayRef dim, bool keepdim,
                     std::optional<at::ScalarType> dtype) {
  return sum_kernels_op().call(self, dim, keepdim, dtype, "exact");
}

int64_t exact_digits_width_op(at::ScalarType dtype) { return exact_digits_width(dtype); }

void check_args_op(at::ScalarType self_dtype, std::optional<at::ScalarType> dtype,
                   c10::string_view device_type, c10::string_view kernel) {
  check_args(self_dtype, dtype, c10::Device(std::string(device_type)).type(), kernel);
}

// Tensors of a layout the kernels do not read (sparse, nested) reach these instead of the
// dispatcher's page-long "could not run" message.
at::Tensor refuse_layout(const at::Tensor& self, at::OptionalIntArrayRef, bool,
                         std::optional<at::ScalarType>, c10::string_view) {
  const char* what = self.is_nested() ? "nested" : "sparse";
  const char* convert = self.is_nested() ? ".to_padded_tensor(0)" : ".to_dense()";
  TORCH_CHECK_NOT_IMPLEMENTED(false, "warpreduce.sum takes strided tensors, not ", what,
                              " ones: use torch.sum, or convert first (", convert, ")");
}

}  // namespace

const c10::TypedOperatorHandle<SumSignature>& sum_kernels_op() {
  static const auto op =
      c10::Dispatcher::singleton().findSchemaOrThrow("warpreduce::_sum", "").typed<SumSignature>();
  return op;
}

const c10::TypedOperatorHandle<ExactSumSignature>& exact_sum_op() {
  static const auto op = c10::Dispatcher::singleton()
                             .findSchemaOrThrow("warpreduce::_exact_sum", "")
                             .typed<ExactSumSignature>();
  return op;
}

at::Tensor call_sum_op(const at::Tensor& self, at::OptionalIntArrayRef dim, bool keepdim,
                       std::optional<at::ScalarType> dtype, c10::string_view kernel) {
  if (kernel == "exact") return exact_sum_op().call(self, dim, keepdim, dtype);
  return sum_kernels_op().call(self, dim, keepdim, dtype, kernel);
}

TORCH_LIBRARY(warpreduce, m) {
  m.def(
      "sum(Tensor self, int[1]? dim=None, bool keepdim=False, *, ScalarType? dtype=None, "
      "str kernel=\"auto\") -> Tensor");
  m.def(
      "_sum(Tensor self, int[1]? dim, bool keepdim, ScalarType? dtype, str kernel_name) -> "
      "Tensor");
  m.impl("sum", c10::DispatchKey::CompositeImplicitAutograd, TORCH_FN(sum));
  m.def("_exact_sum(Tensor self, int[1]? dim, bool keepdim, ScalarType? dtype) -> Tensor");
  m.impl("_exact_sum", c10::DispatchKey::CompositeExplicitAutograd, TORCH_FN(exact_sum));
  m.def("kernels(str device_type, str? role=None) -> str[]", &kernels_op);
  m.def("dtypes() -> str[]", &supported_dtypes);
  m.def("_check_args(ScalarType self_dtype, ScalarType? dtype, str device_type, str kernel) -> ()",
        &check_args_op);
  // kernel="exact" on DTensors (warpreduce_torch/distributed.py): exact partial sums as
  // int64 digits (exact.h's Superaccumulator, exported), which an all-reduce adds without
  // rounding, [result shape..., _exact_digits_width(dtype)]; and the rounded sums of such
  // digits. dtype: the result's, as torch.sum's dtype= (float types only).
  m.def("_exact_digits(Tensor self, int[1]? dim, bool keepdim, ScalarType? dtype) -> Tensor");
  m.def("_exact_from_digits(Tensor digits, ScalarType dtype) -> Tensor");
  m.def("_exact_digits_width(ScalarType dtype) -> int", &exact_digits_width_op);
}

TORCH_LIBRARY_IMPL(warpreduce, SparseCPU, m) { m.impl("_sum", &refuse_layout); }
TORCH_LIBRARY_IMPL(warpreduce, SparseCUDA, m) { m.impl("_sum", &refuse_layout); }
TORCH_LIBRARY_IMPL(warpreduce, SparseCsrCPU, m) { m.impl("_sum", &refuse_layout); }
TORCH_LIBRARY_IMPL(warpreduce, SparseCsrCUDA, m) { m.impl("_sum", &refuse_layout); }
TORCH_LIBRARY_IMPL(warpreduce, NestedTensorCPU, m) { m.impl("_sum", &refuse_layout); }
TORCH_LIBRARY_IMPL(warpreduce, NestedTensorCUDA, m) { m.impl("_sum", &refuse_layout); }

// torch.vmap uses CompositeImplicitAutograd kernels only where registered for it too:
// without this, vmap over sum takes its slow per-sample fallback instead of decomposing
// into _sum, whose batching rule is in warpreduce_torch/ops.py.
TORCH_LIBRARY_IMPL(warpreduce, FuncTorchBatchedDecomposition, m) { m.impl("sum", TORCH_FN(sum)); }

}  // namespace warpreduce
