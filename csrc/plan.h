// The device-independent half of warpreduce::sum: argument checks, torch.sum's shape and
// dtype rules, the reduction geometry of the call (geometry.h), and the kernel registry.
#pragma once

#include <ATen/Dispatch.h>
#include <ATen/WrapDimUtilsMulti.h>
#include <ATen/core/DimVector.h>
#include <ATen/core/Tensor.h>
#include <c10/core/DeviceType.h>
#include <c10/util/ArrayRef.h>

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "geometry.h"
#include "sum_traits.h"

namespace warpreduce {

struct SumPlan;

// A kernel family as kernel= names it. Each device's file defines its table of kernels
// with their launchers (cpu/sum_cpu.cpp, cuda/sum_cuda.cu): the checks, the op
// warpreduce::kernels and through it the tests and benchmarks all read those tables.
enum class KernelRole {
  kStage,     // one of the staged kernels, in stage order
  kFast,      // the default path
  kExact,     // the correctly rounded sum (exact.h): the same bits on every device
  kBaseline,  // another library's reduction, for comparison
};
constexpr KernelRole kKernelRoles[] = {KernelRole::kStage, KernelRole::kFast, KernelRole::kExact,
                                       KernelRole::kBaseline};
// Sums plan.input into `out`: plan.outputs elements of the natural dtype, in the kept
// dims' memory order (SumPlan::finish puts them in place). Current device and stream.
using Launcher = void (*)(const SumPlan& plan, at::Tensor& out);
struct Kernel {
  std::string_view name;
  KernelRole role;
  Launcher launch;
};
c10::ArrayRef<Kernel> cpu_kernels();
c10::ArrayRef<Kernel> cuda_kernels();  // empty in a build without CUDA

std::string_view role_name(KernelRole role);
std::vector<std::string> kernel_names(c10::DeviceType device, std::optional<KernelRole> role);

// The C++ signature of warpreduce::sum and warpreduce::_sum (ops.cpp).
using SumSignature = at::Tensor(const at::Tensor&, at::OptionalIntArrayRef, bool,
                                std::optional<at::ScalarType>, c10::string_view);

// Raises torch's error types for input torch.sum would accept but this op does not:
// NotImplementedError for a dtype outside the supported list, ValueError for an unknown
// kernel name. Returns the kernel (nullptr for meta and fake tensors, which run none).
// The fake kernel calls this too, through the op warpreduce::_check_args.
const Kernel* check_args(at::ScalarType self_dtype, std::optional<at::ScalarType> dtype,
                         c10::DeviceType device, std::string_view kernel);

// The dtypes the kernels sum, with torch's names: the only list of them. X(type, name, ...)
// for each; check_args, the dispatch below and supported_dtypes() expand it.
// clang-format off: a family a line
#define WARPREDUCE_KERNEL_DTYPES(X, ...)                                                    \
  X(at::kBool, "bool", __VA_ARGS__)                                                         \
  X(at::kByte, "uint8", __VA_ARGS__) X(at::kChar, "int8", __VA_ARGS__)                      \
  X(at::kShort, "int16", __VA_ARGS__) X(at::kInt, "int32", __VA_ARGS__)                     \
  X(at::kLong, "int64", __VA_ARGS__)                                                        \
  X(at::kUInt16, "uint16", __VA_ARGS__) X(at::kUInt32, "uint32", __VA_ARGS__)               \
  X(at::kUInt64, "uint64", __VA_ARGS__)                                                     \
  X(at::kHalf, "float16", __VA_ARGS__) X(at::kBFloat16, "bfloat16", __VA_ARGS__)            \
  X(at::kFloat, "float32", __VA_ARGS__) X(at::kDouble, "float64", __VA_ARGS__)
// clang-format on

// Complex dtypes: a sum of complex numbers is two real sums, which the same kernels run
// over the tensor's real view (run_sum).
#define WARPREDUCE_COMPLEX_DTYPES(X, ...)        \
  X(at::kComplexHalf, "complex32", __VA_ARGS__)  \
  X(at::kComplexFloat, "complex64", __VA_ARGS__) \
  X(at::kComplexDouble, "complex128", __VA_ARGS__)

// Every dtype warpreduce.sum takes.
#define WARPREDUCE_DTYPES(X, ...) \
  WARPREDUCE_KERNEL_DTYPES(X, __VA_ARGS__) WARPREDUCE_COMPLEX_DTYPES(X, __VA_ARGS__)

// The one dtype dispatch of the project: scalar_t is the kernels' element type for each
// dtype of the kernel list (kernel_t: BoolByte for bool, sum_traits.h says why). Read a
// tensor's elements as scalar_t with kernel_data.
#define WARPREDUCE_DISPATCH_CASE(type, name, ...)                      \
  case type: {                                                         \
    using scalar_t [[maybe_unused]] =                                  \
        ::warpreduce::kernel_t<c10::impl::ScalarTypeToCPPTypeT<type>>; \
    return __VA_ARGS__();                                              \
  }
#define WARPREDUCE_DISPATCH(TYPE, NAME, ...) \
  AT_DISPATCH_SWITCH(TYPE, NAME, WARPREDUCE_KERNEL_DTYPES(WARPREDUCE_DISPATCH_CASE, __VA_ARGS__))

template <typename T>
const T* kernel_data(const at::Tensor& t) {
  return static_cast<const T*>(t.const_data_ptr());
}

// The float dtypes of the list, for kernel="exact" (which hands integer sums to "auto"),
// and _exact_digits.
#define WARPREDUCE_DISPATCH_FLOATS(TYPE, NAME, ...) \
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, TYPE, NAME, __VA_ARGS__)

// The names of the dtypes of WARPREDUCE_DTYPES, in its order.
std::vector<std::string> supported_dtypes();

// The bytes of what pass k of a sum of `t` reads: the elements, then (auto) the partial
// sums the pass before wrote: double for float32, float for 16-bit floats, int64 for
// integers (run_pass.cuh, carry_t).
int64_t pass_element_bytes(at::ScalarType t, size_t k);

struct SumPlan {
  const Kernel* kernel = nullptr;
  // What the kernels read: the input after dtype= (a copy only when the layout does not
  // fit the geometry, see below).
  at::Tensor input;
  // The passes that sum it (geometry.h): pass k + 1 reads pass k's outputs, a contiguous
  // scratch tensor of passes[k].outputs() elements. Empty when no kernel is needed.
  c10::SmallVector<ReductionPass, 2> passes;
  // The input's dims that matter (size > 1) in memory order, merged where they are one
  // dim in memory, each kept or reduced (geometry.h); empty where the plan has one pass
  // by construction (a full sum of a dense tensor, a copy).
  Layout layout;
  // Set instead of passes when the sum needs no kernel: nothing to write (an empty
  // result), nothing to add (a size-0 reduced dim: zeros), or one element to add (every
  // reduced dim of size 1: a copy).
  std::optional<at::Tensor> result;

  at::DimVector out_shape;   // torch.sum's result shape (of the narrowed sum, see broadcast)
  at::ScalarType out_dtype;  // torch.sum's result dtype
  // Where each output lands: the kept dims of size > 1, as dims of the caller's tensor,
  // in the order the kernels write them (memory order). The same whether or not the
  // input was copied, since a copy is made in this order.
  at::DimVector kept_dims;
  at::DimVector kept_sizes;  // their sizes
  int64_t outputs = 1;  // elements the kernels write: the product of the kept dims
  int64_t length = 1;   // elements each output sums (auto may read fewer: ReductionPass::repeat)
  // The input was copied into kept-dims-first order: its layout needs more dims than the
  // geometry indexes (kMaxOuterDims).
  bool copied = false;
  // Kept dims of stride 0 (an expanded view; auto and exact, where each output adds more
  // than one element): the outputs along such a dim are all equal, so the plan sums the
  // caller's tensor narrowed to size 1 along them, and broadcast() copies that result out
  // along them. The dims, of the caller's tensor, and torch.sum's shape; empty otherwise.
  at::DimVector broadcast_dims;
  at::DimVector broadcast_shape;

  // Where the last pass writes output q when the kernels can write torch.sum's result at
  // once (CUDA, auto, the natural dtype, fewer than 2^31 outputs): at
  // output_order.offset(q) (geometry.h's OuterDims: q's digits over kept_sizes, times
  // the result's strides of kept_dims, at most kMaxOuterDims digits once merged) and,
  // along one broadcast dim, output_copies times output_copy_stride further. Set where
  // the kept dims are out of the tensor's order or one kept dim is broadcast; ndim 0:
  // output q at q, put in place by finish() and broadcast(). (Written in order and then
  // copied, the result cost a launch, an allocation and a read and write of the output:
  // float32 11423 x 4 x 2 x 4 x 67 x 1 over dim 1, its kept dims permuted, spent 21.6 of
  // 77.3 us copying, 0.72x torch.sum; broadcast results were 3 of the 10 slowest random
  // shapes on the H100, 4 on the H200, each a few microseconds of host time more.) exact
  // keeps its stores and the copy: in the one run with the order in its policies too,
  // exact / auto on the named dims fell from 0.64 to 0.56 (H100), not yet explained.
  OuterDims output_order;
  int64_t output_copies = 1;
  int64_t output_copy_stride = 0;
  bool writes_in_place() const { return output_order.ndim > 0; }

  // The kernels write torch.sum's layout directly: kept_dims is in the tensor's order.
  bool kept_in_order() const;
  // kept_dims as dims of `input`: the same, or after a copy (which puts them first, in
  // write order) 0, 1, ...
  at::DimVector input_kept_dims() const;
  // The elements as contiguous rows, [outputs, length], row i for output i: what the
  // staged kernels and CUB read. A view when the geometry is one pass of packed rows
  // (x.sum(-1), a full sum of a dense tensor) or the input is a copy, else a copy in
  // that order.
  at::Tensor rows() const;
  // What the kernels write into: `outputs` elements of the natural dtype of the input
  // (int64 for integers and bool, else the dtype itself); torch.sum's shape already when
  // kept_in_order(), and its result's shape and dtype when writes_in_place().
  at::Tensor empty_output() const;
  // The kernels' output as torch.sum's result: a new contiguous tensor of out_shape and
  // out_dtype, the outputs moved from write order into place where the orders differ
  // (the output itself where writes_in_place()).
  at::Tensor finish(const at::Tensor& output) const;
  // The planned sum's result (finish's, or `result`) as torch.sum's: itself, or where
  // there are broadcast_dims, copied out along them into a new contiguous tensor.
  at::Tensor broadcast(const at::Tensor& sum) const;
};

// Which dims torch.sum(self, dim, keepdim) reduces, a flag per dim: dim=None and dim=[]
// mean all of them. Raises what torch.sum raises: IndexError for a dim out of range
// (checked for every dim before repeats), RuntimeError for a repeated dim, RuntimeError
// for a dim list or dim=None with keepdim on a tensor of more than 64 dims.
using ReducedDims = c10::SmallVector<bool, 8>;
ReducedDims reduced_dims(int64_t ndim, at::OptionalIntArrayRef dim, bool keepdim);

// torch.sum(self, dim, keepdim, dtype=dtype) as a plan. as_cuda: the passes and output
// order of CUDA's kernels whatever the tensor's device (describe_plan, on machines
// without a GPU).
SumPlan make_plan(const at::Tensor& self, at::OptionalIntArrayRef dim, bool keepdim,
                  std::optional<at::ScalarType> dtype, std::string_view kernel,
                  bool as_cuda = false);

// check_args, then the plan, then the kernel: the whole op for one device.
at::Tensor run_sum(const at::Tensor& self, at::OptionalIntArrayRef dim, bool keepdim,
                   std::optional<at::ScalarType> dtype, std::string_view kernel);

// int64 for integers and bool, else the dtype itself: what a kernel writes.
at::ScalarType natural_dtype(at::ScalarType t);

// kernel="exact" across devices and ranks (exact.h): an exact sum to the float dtype
// `dtype` exported as int64 digits, the last dim of warpreduce::_exact_digits's result.
// How many (a superaccumulator's digits, then its NaN, +inf and -inf counts); raises a
// ValueError for other dtypes, whose sums are exact already.
int64_t exact_digits_width(at::ScalarType dtype);
// _exact_from_digits's checks of its arguments (every device's): returns the width.
int64_t check_exact_digits(const at::Tensor& digits, at::ScalarType dtype);

}  // namespace warpreduce
