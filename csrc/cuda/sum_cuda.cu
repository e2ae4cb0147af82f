// CUDA body of warpreduce::sum: the table of CUDA kernels, the staged kernels' launches
// (stages.cuh), and the entry of the fast paths, whose passes run_pass.cuh carries out as
// the launch model (launch_model.h) decides. Checks, shapes and the reduction geometry
// come from plan.h; here are the device guard and the dtype dispatch. Scratch memory all
// comes from PyTorch's caching allocator, launches go to the current stream.
#include <ATen/ops/empty.h>
#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <torch/library.h>

#include <algorithm>
#include <limits>

#include "launch.h"
#include "runtime.h"
#include "stages.cuh"

namespace warpreduce {
namespace {

// ---------------------------------------------------------------------------------------
// The staged kernels: rows, one launch per level of partial sums.

// Partial sums of type A live in tensors of the same width (unsigned sums in int64).
template <typename A>
constexpr at::ScalarType storage_dtype() {
  if constexpr (std::is_same_v<A, float>) {
    return at::kFloat;
  } else if constexpr (std::is_same_v<A, double>) {
    return at::kDouble;
  } else {
    static_assert(std::is_same_v<A, unsigned long long> || std::is_same_v<A, int64_t>);
    return at::kLong;
  }
}

// Blocks per row for one launch of a stage: as many as cover the row at items_per_thread
// elements a thread; for the grid-stride stages, as many as fill the GPU, but not so
// many that a thread gets fewer than 16 elements.
template <typename Stage>
int64_t parts_for(int64_t n, int64_t segments) {
  constexpr int64_t kGridStrideMinItems = 16;
  constexpr int64_t per_thread =
      Stage::items_per_thread ? Stage::items_per_thread : kGridStrideMinItems;
  int64_t parts = std::max<int64_t>(1, ceil_div(n, kStageThreads * per_thread));
  if constexpr (Stage::items_per_thread == 0) {
    const DeviceLimits limits = device_limits();
    const int64_t resident = limits.sms * limits.threads_per_sm / kStageThreads;
    parts = std::min(parts, std::max<int64_t>(1, resident / segments));
  }
  return parts;
}

// Kernel decomposition (Harris): a launch leaves [segments, parts] partial sums (in
// acc_t<T>) that the next launch reduces, until one block covers a row. No atomics, so
// every run gives the same bits.
template <typename Stage, typename T, typename Out>
void run_stage(const T* x, Out* y, int64_t segments, int64_t n, const at::TensorOptions& options) {
  using A = acc_t<T>;
  const int64_t parts = parts_for<Stage>(n, segments);
  const int64_t blocks = segments * parts;
  TORCH_CHECK(blocks <= std::numeric_limits<int>::max(), "warpreduce.sum: ", blocks,
              " blocks do not fit one launch");
  const cudaStream_t stream = c10::cuda::getCurrentCUDAStream();
  if (parts == 1) {
    stage_kernel<Stage, T, Out><<<blocks, kStageThreads, 0, stream>>>(x, y, n, 1);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return;
  }
  at::Tensor partial = at::empty({blocks}, options.dtype(storage_dtype<A>()));
  A* p = reinterpret_cast<A*>(partial.data_ptr());
  stage_kernel<Stage, T, A><<<blocks, kStageThreads, 0, stream>>>(x, p, n, parts);
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  run_stage<Stage, A, Out>(p, y, segments, parts, options);
}

// The staged kernels read the plan's rows (SumPlan::rows: in place for x.sum(-1) and
// full sums of dense tensors, else a copy into that order).
template <typename Stage>
void launch_stage(const SumPlan& plan, at::Tensor& out) {
  const at::Tensor rows = plan.rows();
  WARPREDUCE_DISPATCH(rows.scalar_type(), "warpreduce_sum_stage", [&] {
    run_stage<Stage>(kernel_data<scalar_t>(rows), out.mutable_data_ptr<out_t<scalar_t>>(),
                     rows.size(0), rows.size(1), out.options());
  });
}

// ---------------------------------------------------------------------------------------
// The fast paths: auto for every dtype; exact for the float dtypes (integer sums are
// exact already: auto's).

void launch_auto(const SumPlan& plan, at::Tensor& out) {
  WARPREDUCE_DISPATCH(plan.input.scalar_type(), "warpreduce_sum_auto",
                      [&] { auto_passes<scalar_t>(plan, out); });
}

void launch_exact(const SumPlan& plan, at::Tensor& out) {
  WARPREDUCE_DISPATCH(plan.input.scalar_type(), "warpreduce_sum_exact", [&] {
    if constexpr (is_integer_v<scalar_t>) {
      auto_passes<scalar_t>(plan, out);
    } else {
      exact_passes<scalar_t>(plan, out);
    }
  });
}

// The CUDA kernels kernel= names, in stage order: the only list of them.
constexpr Kernel kCudaKernels[] = {
    {"interleaved_divergent", KernelRole::kStage, launch_stage<interleaved_divergent_stage>},
    {"interleaved_bank_conflicts", KernelRole::kStage,
     launch_stage<interleaved_bank_conflicts_stage>},
    {"sequential_addressing", KernelRole::kStage, launch_stage<sequential_addressing_stage>},
    {"first_add_during_load", KernelRole::kStage, launch_stage<first_add_during_load_stage>},
    {"unroll_last_warp", KernelRole::kStage, launch_stage<unroll_last_warp_stage>},
    {"complete_unroll", KernelRole::kStage, launch_stage<complete_unroll_stage>},
    {"multiple_elements", KernelRole::kStage, launch_stage<multiple_elements_stage>},
    {"warp_shuffle", KernelRole::kStage, launch_stage<warp_shuffle_stage>},
    {"auto", KernelRole::kFast, launch_auto},
    {"exact", KernelRole::kExact, launch_exact},
    {"cub", KernelRole::kBaseline, launch_cub},
};

at::Tensor sum_cuda(const at::Tensor& self, at::OptionalIntArrayRef dim, bool keepdim,
                    std::optional<at::ScalarType> dtype, c10::string_view kernel) {
  const c10::cuda::CUDAGuard guard(self.device());
  device_limits();  // the first call on a device checks that this build runs on it
  return run_sum(self, dim, keepdim, dtype, kernel);
}

}  // namespace

c10::ArrayRef<Kernel> cuda_kernels() { return kCudaKernels; }

TORCH_LIBRARY_IMPL(warpreduce, CUDA, m) { m.impl("_sum", &sum_cuda); }

}  // namespace warpreduce
