// What the CUDA launch files share: the signature of a kernel family's launcher.
#pragma once

#include <ATen/core/Tensor.h>

#include "../plan.h"

namespace warpreduce {

// Reduces plan's rows into out (empty_output()), on the current stream and device.
using LaunchRows = void (*)(const SumPlan& plan, at::Tensor& out);

void cub_rows(const SumPlan& plan, at::Tensor& out);  // cub_sum.cu

}  // namespace warpreduce
