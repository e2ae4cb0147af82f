// What the CUDA files share besides the kernels: the launchers defined outside
// sum_cuda.cu, which holds the table of CUDA kernels.
#pragma once

#include <ATen/core/Tensor.h>

#include "../plan.h"

namespace warpreduce {

void launch_cub(const SumPlan& plan, at::Tensor& out);  // cub_sum.cu

}  // namespace warpreduce
