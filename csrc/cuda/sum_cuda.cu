// CUDA body of warpreduce::sum: the ATen glue around the kernels of stages.cuh and
// fast_sum.cuh. Checks and shapes come from plan.h; here are the device guard, the
// current stream, the dtype dispatch, the grid sizes and the scratch memory, which all
// comes from PyTorch's caching allocator.
#include <ATen/ops/empty.h>
#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <torch/library.h>

#include <algorithm>
#include <atomic>
#include <limits>
#include <map>
#include <mutex>

#include "fast_sum.cuh"
#include "launch.h"
#include "stages.cuh"

namespace warpreduce {
namespace {

// The current device's multiprocessor count, read once per device.
int64_t sm_count() {
  static std::array<std::atomic<int>, 256> counts{};  // 0: not read yet
  const c10::DeviceIndex device = c10::cuda::current_device();
  int count = counts[device].load(std::memory_order_relaxed);
  if (count == 0) {
    C10_CUDA_CHECK(cudaDeviceGetAttribute(&count, cudaDevAttrMultiProcessorCount, device));
    counts[device].store(count, std::memory_order_relaxed);
  }
  return count;
}

// Partial sums of type A live in tensors of the same width (unsigned sums in int64).
template <typename A>
constexpr at::ScalarType storage_dtype() {
  if constexpr (std::is_same_v<A, float>) {
    return at::kFloat;
  } else if constexpr (std::is_same_v<A, double>) {
    return at::kDouble;
  } else {
    static_assert(std::is_same_v<A, unsigned long long>);
    return at::kLong;
  }
}

// ---------------------------------------------------------------------------------------
// The staged kernels.

// Blocks per row for one launch of a stage: as many as cover the row at items_per_thread
// elements a thread; for the grid-stride stages, as many as fill the GPU (2048 threads an
// SM), but not so many that a thread gets fewer than 16 elements.
template <typename Stage>
int64_t parts_for(int64_t n, int64_t segments) {
  constexpr int64_t kGridStrideMinItems = 16;
  constexpr int64_t per_thread = Stage::items_per_thread ? Stage::items_per_thread : kGridStrideMinItems;
  int64_t parts = std::max<int64_t>(1, (n + kStageThreads * per_thread - 1) / (kStageThreads * per_thread));
  if constexpr (Stage::items_per_thread == 0) {
    const int64_t resident_blocks = sm_count() * 2048 / kStageThreads;
    parts = std::min(parts, std::max<int64_t>(1, resident_blocks / segments));
  }
  return parts;
}

// Kernel decomposition, as in the seeds: a launch leaves [segments, parts] partial sums
// (in acc_t<T>) that the next launch reduces, until one block covers a row. No atomics,
// so every run gives the same bits.
template <typename Stage, typename T, typename Out>
void run_stage(const T* x, Out* y, int64_t segments, int64_t n, const at::TensorOptions& options) {
  using A = acc_t<T>;
  const int64_t parts = parts_for<Stage>(n, segments);
  const int64_t blocks = segments * parts;
  TORCH_CHECK(blocks <= std::numeric_limits<int>::max(), "warpreduce.sum: ", blocks,
              " blocks do not fit one launch");
  const cudaStream_t stream = c10::cuda::getCurrentCUDAStream();
  if (parts == 1) {
    Stage::template kernel<T, Out><<<blocks, kStageThreads, 0, stream>>>(x, y, n, 1);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return;
  }
  at::Tensor partial = at::empty({blocks}, options.dtype(storage_dtype<A>()));
  A* p = reinterpret_cast<A*>(partial.data_ptr());
  Stage::template kernel<T, A><<<blocks, kStageThreads, 0, stream>>>(x, p, n, parts);
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  run_stage<Stage, A, Out>(p, y, segments, parts, options);
}

template <typename Stage>
void stage_rows(const SumPlan& plan, at::Tensor& out) {
  WARPREDUCE_DISPATCH(plan.input.scalar_type(), "warpreduce_sum_cuda", [&] {
    run_stage<Stage>(plan.input.const_data_ptr<scalar_t>(), out.mutable_data_ptr<out_t<scalar_t>>(),
                     plan.segments, plan.length, out.options());
  });
}

// ---------------------------------------------------------------------------------------
// The fast path.

// Scratch for fast_sum's last-block finish: block partials, then the ticket. Launches on
// one stream run in order and each leaves the ticket at 0, so a stream keeps one scratch
// for good and no call pays for a memset (one more launch per call). A stream being
// captured into a CUDA graph gets a fresh scratch zeroed inside the graph instead, since
// the graph may be replayed on another stream.
struct FinishScratch {
  at::Tensor memory;
  void* partials;
  unsigned* ticket;
};

FinishScratch finish_scratch(const at::Tensor& like, int64_t max_blocks) {
  const int64_t partial_bytes = max_blocks * 8;  // combine_t is at most 8 bytes
  const c10::cuda::CUDAStream stream = c10::cuda::getCurrentCUDAStream();
  auto zeroed = [&] {
    at::Tensor t = at::empty({partial_bytes + 16}, like.options().dtype(at::kByte));
    C10_CUDA_CHECK(cudaMemsetAsync(t.data_ptr(), 0, t.numel(), stream));
    return t;
  };
  // The legacy default stream (nullptr) can never be captured, so most eager calls skip
  // asking the driver.
  cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
  if (stream.stream() != nullptr) C10_CUDA_CHECK(cudaStreamIsCapturing(stream, &capture));
  at::Tensor memory;
  if (capture != cudaStreamCaptureStatusNone) {
    memory = zeroed();
  } else {
    static std::mutex mutex;
    // Never freed, on purpose: freeing CUDA memory from a static destructor at exit can
    // outlive the allocator.
    static auto* per_stream = new std::map<std::pair<c10::DeviceIndex, cudaStream_t>, at::Tensor>;
    const std::lock_guard<std::mutex> lock(mutex);
    at::Tensor& kept = (*per_stream)[{stream.device_index(), stream.stream()}];
    if (!kept.defined()) kept = zeroed();
    memory = kept;
  }
  char* base = static_cast<char*>(memory.data_ptr());
  return {memory, base, reinterpret_cast<unsigned*>(base + partial_bytes)};
}

template <typename T, typename Out>
void fast_row(const T* x, int64_t n, Out* y, const at::Tensor& like) {
  using C = combine_t<T>;
  using P = FastPolicy;
  // Resident blocks an SM, from the compiler's register count (the same on every device
  // of one architecture, which is all this caches per kernel).
  static const int64_t blocks_per_sm = [] {
    int blocks = 0;
    C10_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, fast_sum<T, Out>,
                                                                 P::kThreads, 0));
    return std::max(blocks, 1);
  }();
  const int64_t per_block = int64_t{P::kThreads} * P::kUnroll * (16 / sizeof(T));
  const int64_t sms = sm_count();
  const int64_t blocks = std::clamp<int64_t>((n + per_block - 1) / per_block, 1, sms * blocks_per_sm);
  const cudaStream_t stream = c10::cuda::getCurrentCUDAStream();
  if (blocks == 1) {  // small input: one block, no scratch
    fast_sum<T, Out><<<1, P::kThreads, 0, stream>>>(x, n, y, nullptr, nullptr);
  } else {
    const FinishScratch scratch = finish_scratch(like, sms * 32);  // an SM holds <= 32 blocks
    fast_sum<T, Out><<<blocks, P::kThreads, 0, stream>>>(x, n, y, static_cast<C*>(scratch.partials),
                                                         scratch.ticket);
  }
  C10_CUDA_KERNEL_LAUNCH_CHECK();
}

void auto_rows(const SumPlan& plan, at::Tensor& out) {
  if (plan.segments > 1) return stage_rows<warp_shuffle_stage>(plan, out);
  WARPREDUCE_DISPATCH(plan.input.scalar_type(), "warpreduce_sum_cuda", [&] {
    fast_row(plan.input.const_data_ptr<scalar_t>(), plan.length,
             out.mutable_data_ptr<out_t<scalar_t>>(), out);
  });
}

// In the order of kCudaKernels (plan.h).
constexpr std::array<LaunchRows, kCudaKernels.size()> kLaunch = {
    stage_rows<interleaved_divergent_stage>,
    stage_rows<interleaved_bank_conflicts_stage>,
    stage_rows<sequential_addressing_stage>,
    stage_rows<first_add_during_load_stage>,
    stage_rows<unroll_last_warp_stage>,
    stage_rows<complete_unroll_stage>,
    stage_rows<multiple_elements_stage>,
    stage_rows<warp_shuffle_stage>,
    auto_rows,
    cub_rows,
};

at::Tensor sum_cuda(const at::Tensor& self, at::OptionalIntArrayRef dim, bool keepdim,
                    std::optional<at::ScalarType> dtype, c10::string_view kernel) {
  const c10::cuda::CUDAGuard guard(self.device());
  const SumPlan plan = make_plan(self, dim, keepdim, dtype, kernel);
  at::Tensor out = plan.empty_output();
  if (out.numel() > 0) kLaunch[plan.kernel](plan, out);
  return plan.finish(out);
}

}  // namespace

TORCH_LIBRARY_IMPL(warpreduce, CUDA, m) { m.impl("_sum", &sum_cuda); }

}  // namespace warpreduce
