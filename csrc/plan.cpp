#include "plan.h"

#include <ATen/ops/empty.h>
#include <c10/util/Exception.h>

#include <sstream>

namespace warpreduce {
namespace {

struct NamedDtype {
  at::ScalarType type;
  const char* name;  // as torch names it
};
constexpr std::array<NamedDtype, 10> kSupportedDtypes = {{
    {at::kBool, "bool"},
    {at::kByte, "uint8"},
    {at::kChar, "int8"},
    {at::kShort, "int16"},
    {at::kInt, "int32"},
    {at::kLong, "int64"},
    {at::kHalf, "float16"},
    {at::kBFloat16, "bfloat16"},
    {at::kFloat, "float32"},
    {at::kDouble, "float64"},
}};

void check_dtype(at::ScalarType t) {
  for (const auto& supported : kSupportedDtypes) {
    if (supported.type == t) return;
  }
  std::ostringstream names;
  for (size_t i = 0; i < kSupportedDtypes.size(); ++i) {
    names << (i ? ", " : "") << kSupportedDtypes[i].name;
  }
  TORCH_CHECK_NOT_IMPLEMENTED(false, "warpreduce.sum does not support dtype ", t,
                              "; supported: ", names.str());
}

template <size_t N>
size_t find_kernel(const std::array<std::string_view, N>& names, std::string_view kernel,
                   c10::DeviceType device) {
  for (size_t i = 0; i < N; ++i) {
    if (names[i] == kernel) return i;
  }
  std::ostringstream valid;
  for (size_t i = 0; i < N; ++i) valid << (i ? ", " : "") << names[i];
  TORCH_CHECK_VALUE(false, "warpreduce.sum: unknown kernel '", kernel, "' for ",
                    c10::DeviceTypeName(device, /*lower_case=*/true),
                    " tensors; valid names: ", valid.str());
}

// The elements of a dense tensor (contiguous, transposed, permuted) fill one block of
// memory that starts at its data pointer; a full reduction does not care about their
// order, so it reads that block in place.
at::Tensor all_elements_in_one_row(const at::Tensor& x) {
  return x.is_non_overlapping_and_dense() ? x : x.contiguous();
}

}  // namespace

at::ScalarType natural_dtype(at::ScalarType t) {
  return at::isIntegralType(t, /*includeBool=*/true) ? at::kLong : t;
}

std::vector<std::string> kernel_names(c10::DeviceType device) {
  auto to_vector = [](const auto& names) {
    return std::vector<std::string>(names.begin(), names.end());
  };
  switch (device) {
    case c10::DeviceType::CPU:
      return to_vector(kCpuKernels);
    case c10::DeviceType::CUDA:
#ifdef WARPREDUCE_WITH_CUDA
      return to_vector(kCudaKernels);
#else
      return {};  // built without CUDA
#endif
    default:
      TORCH_CHECK_VALUE(false, "warpreduce.sum runs on cpu and cuda tensors, not ",
                        c10::DeviceTypeName(device, /*lower_case=*/true));
  }
}

size_t check_args(at::ScalarType self_dtype, std::optional<at::ScalarType> dtype,
                  c10::DeviceType device, std::string_view kernel) {
  check_dtype(self_dtype);
  if (dtype) check_dtype(*dtype);
  switch (device) {
    case c10::DeviceType::CPU:
      return find_kernel(kCpuKernels, kernel, device);
    case c10::DeviceType::CUDA:
      return find_kernel(kCudaKernels, kernel, device);
    default:
      // Fake and meta tensors carry no kernel; any name valid somewhere passes.
      for (std::string_view k : kCudaKernels) {
        if (k == kernel) return 0;
      }
      return find_kernel(kCpuKernels, kernel, device);
  }
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
  const auto reduced = reduced_dims(ndim, dim);

  // dtype= casts first, as torch.sum does; integers and bool read at their own width
  // already sum in int64, so asking for int64 needs no copy.
  at::Tensor x = self;
  const bool widening_int = at::isIntegralType(self.scalar_type(), /*includeBool=*/true) &&
                            dtype == at::kLong;
  if (dtype && *dtype != self.scalar_type() && !widening_int) x = self.to(*dtype);
  plan.out_dtype = dtype.value_or(natural_dtype(self.scalar_type()));

  std::vector<int64_t> perm;  // kept dims first, then reduced dims
  int64_t segments = 1, length = 1;
  for (int64_t d = 0; d < ndim; ++d) {
    if (reduced[d]) {
      length *= x.size(d);
      if (keepdim) plan.out_shape.push_back(1);
    } else {
      segments *= x.size(d);
      perm.push_back(d);
      plan.out_shape.push_back(x.size(d));
    }
  }
  plan.segments = segments;
  plan.length = length;
  if (perm.empty()) {
    plan.input = all_elements_in_one_row(x);
    return plan;
  }
  for (int64_t d = 0; d < ndim; ++d) {
    if (reduced[d]) perm.push_back(d);
  }
  plan.input = x.permute(perm).contiguous();
  return plan;
}

at::Tensor SumPlan::empty_output() const {
  return at::empty(out_shape, input.options().dtype(natural_dtype(input.scalar_type())));
}

at::Tensor SumPlan::finish(const at::Tensor& output) const {
  return output.scalar_type() == out_dtype ? output : output.to(out_dtype);
}

}  // namespace warpreduce
