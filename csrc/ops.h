// The dispatcher's handle of warpreduce::_sum, the op that carries the kernels (defined in
// ops.cpp): warpreduce::sum forwards to it, autograd calls it below itself, and the Python
// binding calls it directly (one dispatch fewer).
#pragma once

#include <ATen/core/dispatch/Dispatcher.h>

#include "plan.h"

namespace warpreduce {

const c10::TypedOperatorHandle<SumSignature>& sum_kernels_op();

}  // namespace warpreduce
