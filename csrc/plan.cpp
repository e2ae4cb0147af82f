#include "plan.h"

#include <ATen/ops/add.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/zeros.h>
#include <c10/util/Exception.h>

#include <algorithm>
#include <sstream>

#include "exact.h"

namespace warpreduce {
namespace {

struct NamedDtype {
  at::ScalarType type;
  const char* name;  // as torch names it
};
#define WARPREDUCE_NAMED_DTYPE(type, name, ...) NamedDtype{type, name},
constexpr NamedDtype kSupportedDtypes[] = {WARPREDUCE_DTYPES(WARPREDUCE_NAMED_DTYPE, )};
#undef WARPREDUCE_NAMED_DTYPE

void check_dtype(at::ScalarType t) {
  for (const auto& supported : kSupportedDtypes) {
    if (supported.type == t) return;
  }
  std::ostringstream names;
  for (const auto& supported : kSupportedDtypes) {
    names << (&supported == kSupportedDtypes ? "" : ", ") << supported.name;
  }
  TORCH_CHECK_NOT_IMPLEMENTED(false, "warpreduce.sum does not support dtype ", t,
                              "; supported: ", names.str());
}

const Kernel* find_kernel(c10::ArrayRef<Kernel> kernels, std::string_view name) {
  for (const Kernel& k : kernels) {
    if (k.name == name) return &k;
  }
  return nullptr;
}

c10::ArrayRef<Kernel> kernels_of(c10::DeviceType device) {
  switch (device) {
    case c10::DeviceType::CPU:
      return cpu_kernels();
    case c10::DeviceType::CUDA:
      return cuda_kernels();
    default:
      TORCH_CHECK_VALUE(false, "warpreduce.sum runs on cpu and cuda tensors, not ",
                        c10::DeviceTypeName(device, /*lower_case=*/true));
  }
}

// The passes that sum x (its dims in memory order: `order`) over `reduced` (a bit per
// dim), or false if one does not fit the geometry.
bool plan_passes(const at::Tensor& x, const DimOrder& order, uint64_t reduced,
                 c10::SmallVector<ReductionPass, 2>* passes) {
  Layout layout = memory_layout(x.sizes(), x.strides(), order, reduced);
  passes->clear();
  for (;;) {
    PassPlan plan;
    if (!plan_pass(layout, &plan)) return false;
    passes->push_back(plan.pass);
    if (plan.last()) return true;
    layout = std::move(plan.rest);
  }
}

}  // namespace

#ifndef WARPREDUCE_WITH_CUDA
c10::ArrayRef<Kernel> cuda_kernels() { return {}; }
#endif

std::vector<std::string> supported_dtypes() {
  std::vector<std::string> names;
  for (const auto& supported : kSupportedDtypes) names.emplace_back(supported.name);
  return names;
}

std::string_view role_name(KernelRole role) {
  switch (role) {
    case KernelRole::kStage:
      return "stage";
    case KernelRole::kFast:
      return "fast";
    case KernelRole::kExact:
      return "exact";
    case KernelRole::kBaseline:
      return "baseline";
  }
  return "";
}

std::vector<std::string> kernel_names(c10::DeviceType device, std::optional<KernelRole> role) {
  std::vector<std::string> names;
  for (const Kernel& k : kernels_of(device)) {
    if (!role || k.role == *role) names.emplace_back(k.name);
  }
  return names;
}

at::ScalarType natural_dtype(at::ScalarType t) {
  return at::isIntegralType(t, /*includeBool=*/true) ? at::kLong : t;
}

int64_t exact_digits_width(at::ScalarType dtype) {
  switch (dtype) {
    case at::kHalf:
      return exact::Superaccumulator<c10::Half>::kExported;
    case at::kBFloat16:
      return exact::Superaccumulator<c10::BFloat16>::kExported;
    case at::kFloat:
      return exact::Superaccumulator<float>::kExported;
    case at::kDouble:
      return exact::Superaccumulator<double>::kExported;
    default:
      TORCH_CHECK_VALUE(false, "warpreduce: exact digits are for sums to float16, bfloat16, ",
                        "float32 and float64 (other sums are exact already), not ", dtype);
  }
}

int64_t check_exact_digits(const at::Tensor& digits, at::ScalarType dtype) {
  const int64_t width = exact_digits_width(dtype);
  TORCH_CHECK_VALUE(
      digits.scalar_type() == at::kLong && digits.dim() >= 1 && digits.size(-1) == width,
      "warpreduce._exact_from_digits: expected int64 digits of last dim ", width, " for ", dtype,
      ", got ", digits.scalar_type(), " of shape ", digits.sizes());
  return width;
}

const Kernel* check_args(at::ScalarType self_dtype, std::optional<at::ScalarType> dtype,
                         c10::DeviceType device, std::string_view kernel) {
  check_dtype(self_dtype);
  if (dtype) check_dtype(*dtype);
  if (device != c10::DeviceType::CPU && device != c10::DeviceType::CUDA) {
    // Fake and meta tensors run no kernel; any name valid on some device passes.
    if (find_kernel(cuda_kernels(), kernel)) return nullptr;
    device = c10::DeviceType::CPU;  // for the error message below
  }
  const c10::ArrayRef<Kernel> kernels = kernels_of(device);
  const Kernel* found = find_kernel(kernels, kernel);
  if (!found) {
    std::ostringstream valid;
    for (size_t i = 0; i < kernels.size(); ++i) valid << (i ? ", " : "") << kernels[i].name;
    TORCH_CHECK_VALUE(false, "warpreduce.sum: unknown kernel '", kernel, "' for ",
                      c10::DeviceTypeName(device, /*lower_case=*/true),
                      " tensors; valid names: ", valid.str());
  }
  return found;
}

std::bitset<at::dim_bitset_size> reduced_dims(int64_t ndim, at::OptionalIntArrayRef dim) {
  if (dim.has_value() && !dim->empty()) return at::dim_list_to_bitset(dim, ndim);
  return std::bitset<at::dim_bitset_size>().set();
}

SumPlan make_plan(const at::Tensor& self, at::OptionalIntArrayRef dim, bool keepdim,
                  std::optional<at::ScalarType> dtype, std::string_view kernel) {
  SumPlan plan;
  plan.kernel = check_args(self.scalar_type(), dtype, self.device().type(), kernel);

  const int64_t ndim = self.dim();
  const auto reduced_set = reduced_dims(ndim, dim);

  // dtype= casts first, as torch.sum does; integers and bool read at their own width
  // already sum in int64, so asking for int64 needs no copy.
  at::Tensor x = self;
  const bool widening_int =
      at::isIntegralType(self.scalar_type(), /*includeBool=*/true) && dtype == at::kLong;
  if (dtype && *dtype != self.scalar_type() && !widening_int) x = self.to(*dtype);
  plan.out_dtype = dtype.value_or(natural_dtype(self.scalar_type()));

  uint64_t reduced = 0;  // a bit per dim
  int64_t outputs = 1;
  for (int64_t d = 0; d < ndim; ++d) {
    if (reduced_set[d]) {
      reduced |= uint64_t{1} << d;
      plan.length *= x.size(d);
      if (keepdim) plan.out_shape.push_back(1);
    } else {
      outputs *= x.size(d);
      plan.out_shape.push_back(x.size(d));
    }
  }
  plan.input = x;

  // Sums that need no kernel.
  const at::TensorOptions out_options = x.options().dtype(plan.out_dtype);
  if (outputs == 0) {
    plan.result = at::empty(plan.out_shape, out_options);
  } else if (plan.length == 0) {
    plan.result = at::zeros(plan.out_shape, out_options);
  } else if (plan.length == 1) {
    // One element each: the element added to 0, as torch.sum adds it (-0.0 sums to +0.0),
    // into a new tensor.
    at::Tensor result = at::empty(plan.out_shape, out_options);
    const at::Tensor elements = x.reshape(plan.out_shape).to(plan.out_dtype);
    if (at::isFloatingType(plan.out_dtype)) {
      at::add_out(result, elements, 0);
    } else {
      result.copy_(elements);
    }
    plan.result = result;
  }
  if (plan.result) return plan;

  if (outputs == 1 && x.is_non_overlapping_and_dense()) {
    // A full sum of a dense tensor (contiguous, transposed, permuted): its elements fill
    // one block of memory from the data pointer, in some order, which a sum ignores.
    ReductionPass row;
    row.length = plan.length;
    plan.passes.push_back(row);
    return plan;
  }
  const DimOrder order = memory_order(x.sizes(), x.strides());
  for (int d : order) {
    if (!((reduced >> d) & 1)) plan.kept_dims.push_back(d);
  }
  plan.kept_in_order = std::is_sorted(plan.kept_dims.begin(), plan.kept_dims.end());
  if (!plan_passes(x, order, reduced, &plan.passes)) {
    // More dims than the geometry indexes (geometry.h): copy into kept-dims-first order,
    // which is one kept and one reduced dim.
    std::vector<int64_t> copy_order(plan.kept_dims.begin(), plan.kept_dims.end());
    for (int64_t d = 0; d < ndim; ++d) {
      if (((reduced >> d) & 1) || x.size(d) == 1) copy_order.push_back(d);
    }
    plan.input = x.permute(copy_order).contiguous();
    plan.copied = true;
    uint64_t permuted_reduced = 0;
    for (size_t i = 0; i < copy_order.size(); ++i) {
      if ((reduced >> copy_order[i]) & 1) permuted_reduced |= uint64_t{1} << i;
    }
    const DimOrder copied_order = memory_order(plan.input.sizes(), plan.input.strides());
    TORCH_INTERNAL_ASSERT(plan_passes(plan.input, copied_order, permuted_reduced, &plan.passes));
    for (int64_t& d : plan.kept_dims) {
      d = std::find(copy_order.begin(), copy_order.end(), d) - copy_order.begin();
    }
  }
  return plan;
}

int64_t SumPlan::outputs() const {
  int64_t n = 1;
  for (int64_t d : kept_dims) n *= input.size(d);
  return n;
}

at::Tensor SumPlan::rows() const {
  if (passes.size() == 1 && passes[0].packed_rows()) {
    return input.as_strided({outputs(), length}, {length, 1});
  }
  std::vector<int64_t> order(kept_dims.begin(), kept_dims.end());
  for (int d : memory_order(input.sizes(), input.strides())) {
    if (std::find(order.begin(), order.end(), d) == order.end()) order.push_back(d);
  }
  for (int64_t d = 0; d < input.dim(); ++d) {
    if (input.size(d) == 1) order.push_back(d);
  }
  return input.permute(order).contiguous().view({outputs(), length});
}

at::Tensor SumPlan::empty_output() const {
  const at::TensorOptions options = input.options().dtype(natural_dtype(input.scalar_type()));
  // In the tensor's own order the kernels write torch.sum's result itself.
  return kept_in_order ? at::empty(out_shape, options) : at::empty({outputs()}, options);
}

at::Tensor SumPlan::finish(const at::Tensor& output) const {
  at::Tensor result = output;
  if (!kept_in_order) {
    // The output holds the kept dims in memory order; permute them into the tensor's.
    at::DimVector sizes, memory_position(kept_dims.size());
    for (int64_t d : kept_dims) sizes.push_back(input.size(d));
    for (size_t i = 0; i < kept_dims.size(); ++i) {
      const int64_t rank = std::count_if(kept_dims.begin(), kept_dims.end(),
                                         [&](int64_t d) { return d < kept_dims[i]; });
      memory_position[rank] = static_cast<int64_t>(i);
    }
    result = output.view(sizes).permute(memory_position).reshape(out_shape);
  }
  if (result.is_contiguous() && result.scalar_type() == out_dtype) return result;
  return result.to(result.options().dtype(out_dtype), /*non_blocking=*/false, /*copy=*/false,
                   at::MemoryFormat::Contiguous);
}

at::Tensor run_sum(const at::Tensor& self, at::OptionalIntArrayRef dim, bool keepdim,
                   std::optional<at::ScalarType> dtype, std::string_view kernel) {
  const SumPlan plan = make_plan(self, dim, keepdim, dtype, kernel);
  if (plan.result) return *plan.result;
  at::Tensor out = plan.empty_output();
  plan.kernel->launch(plan, out);
  return plan.finish(out);
}

}  // namespace warpreduce
