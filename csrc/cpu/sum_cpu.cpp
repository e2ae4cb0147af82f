// CPU body of warpreduce::sum: rows split into fixed chunks summed in parallel, then each
// row's chunk sums combined pairwise. The chunking does not depend on the thread count,
// so the result is the same from run to run and machine to machine.
#include <ATen/Parallel.h>
#include <torch/library.h>

#include <vector>

#include "../plan.h"
#include "pairwise_sum.h"

namespace warpreduce {
namespace {

constexpr int64_t kChunk = 1 << 15;  // elements a task sums (128 KiB of float32)

template <typename T>
void sum_rows(const at::Tensor& rows, at::Tensor& out) {
  using A = acc_t<T>;
  const int64_t segments = rows.size(0), length = rows.size(1);
  const int64_t chunks = std::max<int64_t>(1, (length + kChunk - 1) / kChunk);
  const T* x = rows.const_data_ptr<T>();
  out_t<T>* y = out.mutable_data_ptr<out_t<T>>();

  std::vector<A> partial(segments * chunks);
  const int64_t task_len = std::max<int64_t>(1, std::min(length, kChunk));
  at::parallel_for(0, segments * chunks, kChunk / task_len, [&](int64_t begin, int64_t end) {
    for (int64_t task = begin; task < end; ++task) {
      const int64_t seg = task / chunks, start = (task % chunks) * kChunk;
      const int64_t n = std::min(kChunk, length - start);
      partial[task] = pairwise_sum(x + seg * length + start, n);
    }
  });
  at::parallel_for(0, segments, std::max<int64_t>(1, kChunk / chunks), [&](int64_t begin, int64_t end) {
    for (int64_t seg = begin; seg < end; ++seg) {
      y[seg] = static_cast<out_t<T>>(pairwise_sum(partial.data() + seg * chunks, chunks));
    }
  });
}

void launch_pairwise(const SumPlan& plan, at::Tensor& out) {
  const at::Tensor rows = plan.rows();
  WARPREDUCE_DISPATCH(rows.scalar_type(), "warpreduce_sum_cpu", [&] { sum_rows<scalar_t>(rows, out); });
}

// The CPU kernels kernel= names: the only list of them.
constexpr Kernel kCpuKernels[] = {
    {"auto", KernelRole::kFast, launch_pairwise},
};

at::Tensor sum_cpu(const at::Tensor& self, at::OptionalIntArrayRef dim, bool keepdim,
                   std::optional<at::ScalarType> dtype, c10::string_view kernel) {
  return run_sum(self, dim, keepdim, dtype, kernel);
}

}  // namespace

c10::ArrayRef<Kernel> cpu_kernels() { return kCpuKernels; }

TORCH_LIBRARY_IMPL(warpreduce, CPU, m) { m.impl("_sum", &sum_cpu); }

}  // namespace warpreduce
