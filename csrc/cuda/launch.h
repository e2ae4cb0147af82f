// What the CUDA files share besides the kernels: the launchers defined outside
// sum_cuda.cu, which holds the table of CUDA kernels.
#pragma once

#include <ATen/core/Tensor.h>

#include "../plan.h"

namespace warpreduce {

void launch_cub(const SumPlan& plan, at::Tensor& out);  // cub_sum.cu

// The passes of a plan by the launch model's kernels (run_pass.cuh), instantiated for
// each dtype in the passes_*.cu files: auto for every dtype, exact for the float ones.
template <typename T>
void auto_passes(const SumPlan& plan, at::Tensor& out);
template <typename T>
void exact_passes(const SumPlan& plan, at::Tensor& out);

}  // namespace warpreduce
