// kernel="cub": CUB's DeviceReduce (full reductions) and DeviceSegmentedReduce (dim
// reductions), a baseline measured inside the same process as everything else.
#include <ATen/ops/empty.h>
#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAStream.h>

#include <thrust/iterator/counting_iterator.h>
#include <thrust/iterator/transform_iterator.h>
#include <cub/device/device_reduce.cuh>
#include <cub/device/device_segmented_reduce.cuh>
#include <cuda/std/functional>

#include <limits>

#include "../sum_traits.h"
#include "launch.h"

namespace warpreduce {
namespace {

template <typename A>
struct CastTo {
  template <typename T>
  __host__ __device__ A operator()(const T& v) const {
    return static_cast<A>(v);
  }
};

struct RowStart {
  int64_t length;
  __host__ __device__ int64_t operator()(int64_t row) const { return row * length; }
};

template <typename T>
void cub_sum(const at::Tensor& rows, at::Tensor& out) {
  using A = acc_t<T>;
  const int64_t segments = rows.size(0), length = rows.size(1);
  // CUB reads T and adds in A (float for half, 64-bit for integers), like the other kernels.
  auto in = thrust::make_transform_iterator(kernel_data<T>(rows), CastTo<A>{});
  out_t<T>* y = out.mutable_data_ptr<out_t<T>>();
  const auto starts =
      thrust::make_transform_iterator(thrust::counting_iterator<int64_t>(0), RowStart{length});
  TORCH_CHECK(segments <= std::numeric_limits<int>::max(),
              "warpreduce.sum: kernel='cub' takes at most 2^31-1 rows");
  const cudaStream_t stream = c10::cuda::getCurrentCUDAStream();
  auto reduce = [&](void* temp, size_t& bytes) {
    if (segments == 1) {
      return cub::DeviceReduce::Reduce(temp, bytes, in, y, length, ::cuda::std::plus<A>{}, A(0),
                                       stream);
    }
    return cub::DeviceSegmentedReduce::Reduce(temp, bytes, in, y, static_cast<int>(segments),
                                              starts, starts + 1, ::cuda::std::plus<A>{}, A(0),
                                              stream);
  };
  size_t bytes = 0;
  C10_CUDA_CHECK(reduce(nullptr, bytes));
  at::Tensor temp = at::empty({static_cast<int64_t>(bytes)}, out.options().dtype(at::kByte));
  C10_CUDA_CHECK(reduce(temp.data_ptr(), bytes));
}

}  // namespace

// CUB reads rows (SumPlan::rows): DeviceReduce for one, DeviceSegmentedReduce for more.
void launch_cub(const SumPlan& plan, at::Tensor& out) {
  const at::Tensor rows = plan.rows();
  WARPREDUCE_DISPATCH(rows.scalar_type(), "warpreduce_sum_cub",
                      [&] { cub_sum<scalar_t>(rows, out); });
}

}  // namespace warpreduce
