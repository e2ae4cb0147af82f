// kernel="exact" on the CPU around its fast path (exact_kernels.h): the exact fallback
// for the outputs the fast path could not certify, and the digits ops that DTensor
// exchanges between ranks (_exact_digits, _exact_from_digits). Both read the input's
// own elements, in place, with a superaccumulator each output (exact.h).
#include <ATen/Parallel.h>
#include <ATen/ops/empty.h>
#include <torch/library.h>

#include <algorithm>

#include "../exact.h"
#include "../geometry.h"
#include "exact_cpu.h"

#if defined(__x86_64__) || defined(_M_X64)
#include <xmmintrin.h>
#endif

namespace warpreduce::cpu {
namespace {

// Elements one superaccumulator task adds: long outputs are cut into chunks of this
// many, merged exactly.
constexpr int64_t kFallbackChunk = int64_t{1} << 16;

// The elements each output of a sum adds, read from the tensor x itself: the outputs are
// numbered over `kept` dims (the last fastest), and each adds every element of the other
// dims, visited in memory order.
class OutputElements {
 public:
  OutputElements(const at::Tensor& x, c10::ArrayRef<int64_t> kept) {
    std::vector<bool> is_kept(x.dim(), false);
    for (int64_t d : kept) {
      is_kept[d] = true;
      kept_sizes_.push_back(x.size(d));
      kept_strides_.push_back(x.stride(d));
    }
    for (int d : memory_order(x.sizes(), x.strides())) {  // dims of size > 1, outermost first
      if (is_kept[d]) continue;
      reduced_sizes_.push_back(x.size(d));
      reduced_strides_.push_back(x.stride(d));
      length_ *= x.size(d);
    }
  }

  int64_t length() const { return length_; }

  // The offset of output o's elements.
  int64_t offset(int64_t o) const {
    int64_t off = 0;
    for (size_t i = kept_sizes_.size(); i-- > 0;) {
      off += (o % kept_sizes_[i]) * kept_strides_[i];
      o /= kept_sizes_[i];
    }
    return off;
  }

  // f(offset) for elements [begin, end) of the output whose offset is `base`.
  template <typename F>
  void visit(int64_t base, int64_t begin, int64_t end, const F& f) const {
    const size_t n = reduced_sizes_.size();
    if (begin >= end) return;  // (also every output of a sum over an empty dim)
    if (n == 0) return f(base);
    c10::SmallVector<int64_t, 8> index(n);
    int64_t rest = begin, off = base;
    for (size_t i = n; i-- > 0;) {
      index[i] = rest % reduced_sizes_[i];
      rest /= reduced_sizes_[i];
      off += index[i] * reduced_strides_[i];
    }
    const int64_t inner_size = reduced_sizes_[n - 1], inner_stride = reduced_strides_[n - 1];
    for (int64_t done = begin; done < end;) {
      const int64_t run = std::min(inner_size - index[n - 1], end - done);
      for (int64_t k = 0; k < run; ++k) f(off + k * inner_stride);
      done += run;
      off += run * inner_stride;
      index[n - 1] += run;
      for (size_t i = n - 1; i > 0 && index[i] == reduced_sizes_[i]; --i) {  // carry
        off -= index[i] * reduced_strides_[i];
        index[i] = 0;
        ++index[i - 1];
        off += reduced_strides_[i - 1];
      }
    }
  }

 private:
  c10::SmallVector<int64_t, 8> kept_sizes_, kept_strides_, reduced_sizes_, reduced_strides_;
  int64_t length_ = 1;
};

// fn(k, accumulator) for each of `count` outputs, the accumulator holding the exact sum
// of the elements of output `output_of(k)`. In parallel over outputs, and over chunks of
// the long ones (merged exactly, in any order).
template <typename T, typename OutputOf, typename Fn>
void for_each_exact_sum(const OutputElements& elements, const T* x, int64_t count,
                        const OutputOf& output_of, const Fn& fn) {
  using Accumulator = exact::Superaccumulator<T>;
  const int64_t length = elements.length();
  const int64_t chunks = std::max<int64_t>(1, (length + kFallbackChunk - 1) / kFallbackChunk);
  auto add_chunk = [&](int64_t k, int64_t chunk, Accumulator& acc) {
    const int64_t begin = chunk * kFallbackChunk;
    elements.visit(elements.offset(output_of(k)), begin, std::min(length, begin + kFallbackChunk),
                   [&](int64_t off) { acc.add(x[off]); });
  };
  if (chunks == 1) {
    const int64_t grain = std::max<int64_t>(1, kFallbackChunk / std::max<int64_t>(length, 1));
    at::parallel_for(0, count, grain, [&](int64_t begin, int64_t end) {
      Accumulator acc;
      for (int64_t k = begin; k < end; ++k) {
        acc.clear();
        add_chunk(k, 0, acc);
        fn(k, acc);
      }
    });
    return;
  }
  std::vector<Accumulator> partial(count * chunks);
  at::parallel_for(0, count * chunks, 1, [&](int64_t begin, int64_t end) {
    for (int64_t task = begin; task < end; ++task) {
      partial[task].clear();
      add_chunk(task / chunks, task % chunks, partial[task]);
    }
  });
  at::parallel_for(0, count, 1, [&](int64_t begin, int64_t end) {
    for (int64_t k = begin; k < end; ++k) {
      Accumulator& acc = partial[k * chunks];
      for (int64_t c = 1; c < chunks; ++c) acc.merge(partial[k * chunks + c]);
      fn(k, acc);
    }
  });
}

// Whether the fast path's arithmetic holds: it assumes round to nearest with subnormals
// kept. Under flush-to-zero or denormals-are-zero (torch.set_flush_denormal(True)) the
// vector unit reads and writes subnormals as zeros, and under a directed rounding mode
// the bounds would be twice too small; the superaccumulator uses integers only.
bool default_float_environment() {
#if defined(__x86_64__) || defined(_M_X64)
  // MXCSR: FTZ (bit 15), DAZ (bit 6), the rounding control (bits 13-14, 0: nearest).
  return (_mm_getcsr() & 0xe040) == 0;
#else
  return true;
#endif
}

// The kept dims of a sum over `dim` of an n-dim tensor, in the tensor's order (the
// outputs in torch.sum's order), and its result shape.
void sum_layout(const at::Tensor& x, at::OptionalIntArrayRef dim, bool keepdim, at::DimVector* kept,
                at::DimVector* shape) {
  const auto reduced = reduced_dims(x.dim(), dim, keepdim);
  for (int64_t d = 0; d < x.dim(); ++d) {
    if (!reduced[d]) {
      kept->push_back(d);
      shape->push_back(x.size(d));
    } else if (keepdim) {
      shape->push_back(1);
    }
  }
}

// _exact_digits: each output's superaccumulator, exported (exact.h), [outputs..., width].
at::Tensor exact_digits_cpu(const at::Tensor& self, at::OptionalIntArrayRef dim, bool keepdim,
                            std::optional<at::ScalarType> dtype) {
  check_args(self.scalar_type(), dtype, c10::DeviceType::CPU, "exact");
  const at::ScalarType out_dtype = dtype.value_or(self.scalar_type());
  const int64_t width = exact_digits_width(out_dtype);  // raises for integers
  const at::Tensor x = out_dtype == self.scalar_type() ? self : self.to(out_dtype);
  at::DimVector kept, shape;
  sum_layout(x, dim, keepdim, &kept, &shape);
  shape.push_back(width);
  at::Tensor digits = at::empty(shape, x.options().dtype(at::kLong));
  const int64_t outputs = digits.numel() / width;
  if (outputs == 0) return digits;
  int64_t* out = digits.mutable_data_ptr<int64_t>();
  WARPREDUCE_DISPATCH_FLOATS(out_dtype, "warpreduce_exact_digits", [&] {
    const OutputElements elements(x, kept);
    for_each_exact_sum(
        elements, x.const_data_ptr<scalar_t>(), outputs, [](int64_t k) { return k; },
        [&](int64_t k, exact::Superaccumulator<scalar_t>& acc) { acc.to_digits(out + k * width); });
  });
  return digits;
}

// _exact_from_digits: the rounded sums of (all-reduced) digits.
at::Tensor exact_from_digits_cpu(const at::Tensor& digits, at::ScalarType dtype) {
  const int64_t width = check_exact_digits(digits, dtype);
  at::DimVector shape(digits.sizes().begin(), digits.sizes().end() - 1);
  at::Tensor result = at::empty(shape, digits.options().dtype(dtype));
  const at::Tensor in = digits.contiguous();
  const int64_t* d = in.const_data_ptr<int64_t>();
  WARPREDUCE_DISPATCH_FLOATS(dtype, "warpreduce_exact_from_digits", [&] {
    scalar_t* y = result.mutable_data_ptr<scalar_t>();
    at::parallel_for(0, result.numel(), 1024, [&](int64_t begin, int64_t end) {
      exact::Superaccumulator<scalar_t> acc;
      for (int64_t k = begin; k < end; ++k) {
        acc.from_digits(d + k * width);
        y[k] = acc.finalize();
      }
    });
  });
  return result;
}

}  // namespace

void UncertifiedOutputs::add(int64_t output) {
  const std::lock_guard<std::mutex> lock(mutex_);
  outputs_.push_back(output);
}

std::vector<int64_t> UncertifiedOutputs::take() {
  const std::lock_guard<std::mutex> lock(mutex_);
  return std::move(outputs_);
}

void sum_exactly(const SumPlan& plan, at::Tensor& out, ExactLauncher fast) {
  std::vector<int64_t> outputs;
  if (!default_float_environment()) {
    outputs.resize(plan.outputs);
    for (int64_t o = 0; o < plan.outputs; ++o) outputs[o] = o;
  } else {
    UncertifiedOutputs uncertified;
    fast(plan, out, uncertified);
    outputs = uncertified.take();
    if (outputs.empty()) return;
  }
  std::sort(outputs.begin(), outputs.end());  // in memory order, whichever thread found them
  const OutputElements elements(plan.input, plan.input_kept_dims());
  WARPREDUCE_DISPATCH_FLOATS(plan.input.scalar_type(), "warpreduce_exact_fallback", [&] {
    scalar_t* y = out.mutable_data_ptr<scalar_t>();
    for_each_exact_sum(
        elements, plan.input.const_data_ptr<scalar_t>(), static_cast<int64_t>(outputs.size()),
        [&](int64_t k) { return outputs[k]; },
        [&](int64_t k, exact::Superaccumulator<scalar_t>& acc) { y[outputs[k]] = acc.finalize(); });
  });
}

TORCH_LIBRARY_IMPL(warpreduce, CPU, m) {
  m.impl("_exact_digits", &exact_digits_cpu);
  m.impl("_exact_from_digits", &exact_from_digits_cpu);
}

}  // namespace warpreduce::cpu
