// The dispatcher's handle of warpreduce::_sum, the op that carries the kernels (defined in
// ops.cpp): warpreduce::sum forwards to it (or to _exact_sum), autograd calls it below
// itself, and the Python binding calls it directly (one dispatch fewer).
#pragma once

#include <ATen/core/dispatch/Dispatcher.h>

#include "plan.h"

namespace warpreduce {

const c10::TypedOperatorHandle<SumSignature>& sum_kernels_op();

// warpreduce::_exact_sum, _sum with kernel "exact" as an op of its own (ops.cpp says why).
using ExactSumSignature = at::Tensor(const at::Tensor&, at::OptionalIntArrayRef, bool,
                                     std::optional<at::ScalarType>);
const c10::TypedOperatorHandle<ExactSumSignature>& exact_sum_op();

// The op a call of warpreduce::sum goes to: _exact_sum for kernel "exact", else _sum.
at::Tensor call_sum_op(const at::Tensor& self, at::OptionalIntArrayRef dim, bool keepdim,
                       std::optional<at::ScalarType> dtype, c10::string_view kernel);

}  // namespace warpreduce
