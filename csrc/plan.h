// The device-independent half of warpreduce::sum: argument checks, torch.sum's shape and
// dtype rules, and the [segments, length] view that every kernel reduces row by row.
#pragma once

#include <ATen/Dispatch.h>
#include <ATen/core/DimVector.h>
#include <ATen/core/Tensor.h>
#include <c10/core/DeviceType.h>

#include <ATen/WrapDimUtilsMulti.h>

#include <array>
#include <bitset>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace warpreduce {

// The names kernel= accepts, per device type, in stage order. This is the only list:
// the checks, the op warpreduce::kernels and the CUDA launch table all follow it.
inline constexpr std::array<std::string_view, 1> kCpuKernels = {"auto"};
inline constexpr std::array<std::string_view, 10> kCudaKernels = {
    "interleaved_divergent", "interleaved_bank_conflicts", "sequential_addressing",
    "first_add_during_load", "unroll_last_warp",           "complete_unroll",
    "multiple_elements",     "warp_shuffle",               "auto",
    "cub"};

std::vector<std::string> kernel_names(c10::DeviceType device);

// The C++ signature of warpreduce::sum and warpreduce::_sum (ops.cpp).
using SumSignature = at::Tensor(const at::Tensor&, at::OptionalIntArrayRef, bool,
                                std::optional<at::ScalarType>, c10::string_view);

// Raises torch's error types for input torch.sum would accept but this op does not:
// NotImplementedError for a dtype outside the supported list, ValueError for an unknown
// kernel name. Returns the kernel's index in the device's list. The fake (meta) kernel
// calls this too, through the op warpreduce::_check_args.
size_t check_args(
    at::ScalarType self_dtype,
    std::optional<at::ScalarType> dtype,
    c10::DeviceType device,
    std::string_view kernel);

// The one dtype dispatch of the project, over the same ten dtypes check_args accepts.
#define WARPREDUCE_DISPATCH(TYPE, NAME, ...) \
  AT_DISPATCH_ALL_TYPES_AND3(at::kHalf, at::kBFloat16, at::kBool, TYPE, NAME, __VA_ARGS__)

struct SumPlan {
  // The elements to reduce: `segments` rows of `length` elements, one row after the
  // other from input's data pointer, in the dtype the kernels read. Row i is output
  // element i (row-major).
  at::Tensor input;
  int64_t segments = 1;
  int64_t length = 0;
  at::DimVector out_shape;  // torch.sum's result shape
  at::ScalarType out_dtype;  // torch.sum's result dtype
  size_t kernel;  // index into the device's kernel list

  // What the kernels write into: out_shape, in the natural dtype of the input (int64
  // for integers and bool, else the dtype itself). finish() casts it to out_dtype.
  at::Tensor empty_output() const;
  at::Tensor finish(const at::Tensor& output) const;
};

// Which dims torch.sum(self, dim) reduces: dim=None and dim=[] mean all of them. Raises
// what torch.sum raises for a bad dim (IndexError out of range, RuntimeError repeated).
std::bitset<at::dim_bitset_size> reduced_dims(int64_t ndim, at::OptionalIntArrayRef dim);

// torch.sum(self, dim, keepdim, dtype=dtype) as a plan; raises what torch.sum raises for
// a bad dim (IndexError out of range, RuntimeError when repeated).
SumPlan make_plan(
    const at::Tensor& self,
    at::OptionalIntArrayRef dim,
    bool keepdim,
    std::optional<at::ScalarType> dtype,
    std::string_view kernel);

// int64 for integers and bool, else the dtype itself: what a kernel writes.
at::ScalarType natural_dtype(at::ScalarType t);

}  // namespace warpreduce
