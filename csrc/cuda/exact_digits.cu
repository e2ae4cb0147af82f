// The CUDA bodies of warpreduce::_exact_digits and _exact_from_digits (ops.cpp): an exact
// sum exported as int64 digits, which an all-reduce adds without rounding (DTensor,
// warpreduce_torch/distributed.py), and the rounded sums of such digits. The same
// superaccumulator as the exact kernels' fallback (exact.h, accumulate.cuh), so that
// digits from CPU and CUDA ranks add up alike. Correctness first: the input is copied
// kept-dims-first, then a block sums each output.
#include <ATen/ops/empty.h>
#include <ATen/ops/zeros.h>
#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <torch/library.h>

#include "../plan.h"
#include "accumulate.cuh"
#include "runtime.h"

namespace warpreduce {
namespace {

constexpr unsigned kDigitThreads = 256;

// Block o: the digits of the sum of row o of x ([outputs, length], contiguous).
template <typename T>
__global__ void __launch_bounds__(kDigitThreads)
    digits_of_rows(const T* __restrict__ x, int64_t length, int64_t* __restrict__ digits) {
  using Acc = exact::Superaccumulator<T>;
  Acc acc;
  acc.clear();
  const T* row = x + int64_t{blockIdx.x} * length;
  for (int64_t k = threadIdx.x; k < length; k += kDigitThreads) acc.add(row[k]);
  int64_t d[Acc::kExported];
  acc.to_digits(d);
  for (int i = 0; i < Acc::kExported; ++i) {
    const auto total = block_sum<kDigitThreads>(static_cast<unsigned long long>(d[i]));
    if (threadIdx.x == 0)
      digits[int64_t{blockIdx.x} * Acc::kExported + i] = static_cast<int64_t>(total);
    __syncthreads();  // block_sum's shared slots are reused by the next digit
  }
}

template <typename T>
__global__ void from_digits(const int64_t* __restrict__ digits, int64_t outputs,
                            T* __restrict__ y) {
  using Acc = exact::Superaccumulator<T>;
  for (int64_t o = int64_t{blockIdx.x} * blockDim.x + threadIdx.x; o < outputs;
       o += int64_t{gridDim.x} * blockDim.x) {
    Acc acc;
    acc.from_digits(digits + o * Acc::kExported);
    y[o] = acc.finalize();
  }
}

at::Tensor exact_digits_cuda(const at::Tensor& self, at::OptionalIntArrayRef dim, bool keepdim,
                             std::optional<at::ScalarType> dtype) {
  const c10::cuda::CUDAGuard guard(self.device());
  check_args(self.scalar_type(), dtype, c10::DeviceType::CUDA, "exact");
  const at::ScalarType out_dtype = dtype.value_or(self.scalar_type());
  const int64_t width = exact_digits_width(out_dtype);  // raises for integers
  const at::Tensor x = out_dtype == self.scalar_type() ? self : self.to(out_dtype);
  const ReducedDims reduced = reduced_dims(x.dim(), dim, keepdim);
  at::DimVector shape;
  std::vector<int64_t> order;  // kept dims (the tensor's order), then reduced ones
  int64_t outputs = 1;
  for (int64_t d = 0; d < x.dim(); ++d) {
    if (!reduced[d]) {
      order.push_back(d);
      shape.push_back(x.size(d));
      outputs *= x.size(d);
    } else if (keepdim) {
      shape.push_back(1);
    }
  }
  for (int64_t d = 0; d < x.dim(); ++d) {
    if (reduced[d]) order.push_back(d);
  }
  shape.push_back(width);
  at::Tensor digits = at::zeros(shape, x.options().dtype(at::kLong));
  if (outputs == 0 || x.numel() == 0) return digits;
  const at::Tensor rows = x.permute(order).contiguous();
  const int64_t length = x.numel() / outputs;
  TORCH_CHECK(outputs <= std::numeric_limits<int>::max(), "warpreduce._exact_digits: ", outputs,
              " outputs do not fit one launch");
  const cudaStream_t stream = c10::cuda::getCurrentCUDAStream();
  WARPREDUCE_DISPATCH_FLOATS(out_dtype, "warpreduce_exact_digits_cuda", [&] {
    digits_of_rows<scalar_t><<<static_cast<unsigned>(outputs), kDigitThreads, 0, stream>>>(
        rows.const_data_ptr<scalar_t>(), length, digits.mutable_data_ptr<int64_t>());
    C10_CUDA_KERNEL_LAUNCH_CHECK();
  });
  return digits;
}

at::Tensor exact_from_digits_cuda(const at::Tensor& digits, at::ScalarType dtype) {
  const c10::cuda::CUDAGuard guard(digits.device());
  check_exact_digits(digits, dtype);
  at::DimVector shape(digits.sizes().begin(), digits.sizes().end() - 1);
  at::Tensor result = at::empty(shape, digits.options().dtype(dtype));
  if (result.numel() == 0) return result;
  const at::Tensor in = digits.contiguous();
  const cudaStream_t stream = c10::cuda::getCurrentCUDAStream();
  WARPREDUCE_DISPATCH_FLOATS(dtype, "warpreduce_exact_from_digits_cuda", [&] {
    const int64_t blocks = std::min<int64_t>(ceil_div(result.numel(), 256), 4096);
    from_digits<scalar_t><<<static_cast<unsigned>(blocks), 256, 0, stream>>>(
        in.const_data_ptr<int64_t>(), result.numel(), result.mutable_data_ptr<scalar_t>());
    C10_CUDA_KERNEL_LAUNCH_CHECK();
  });
  return result;
}

}  // namespace

TORCH_LIBRARY_IMPL(warpreduce, CUDA, m) {
  m.impl("_exact_digits", &exact_digits_cuda);
  m.impl("_exact_from_digits", &exact_from_digits_cuda);
}

}  // namespace warpreduce
