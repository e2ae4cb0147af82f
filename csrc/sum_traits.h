// Types of a sum, shared by the CPU and CUDA kernels (host and device code, no ATen).
#pragma once

#include <c10/util/BFloat16.h>
#include <c10/util/Half.h>

#include <cstdint>
#include <type_traits>

namespace warpreduce {

// acc: what a partial sum is kept in; out: what the op returns (torch.sum's result dtype).
// Integers and bool accumulate in unsigned 64-bit so that overflow wraps exactly like
// torch.sum's int64 result (two's complement), with no signed-overflow UB; the final
// cast to int64_t keeps the bits.
template <typename T, typename = void>
struct SumTraits {
  using acc = T;  // float and double accumulate in their own type
  using out = T;
};

template <typename T>
struct SumTraits<T, std::enable_if_t<std::is_integral_v<T>>> {
  using acc = unsigned long long;
  using out = int64_t;
};

template <>
struct SumTraits<c10::Half> {
  using acc = float;
  using out = c10::Half;
};

template <>
struct SumTraits<c10::BFloat16> {
  using acc = float;
  using out = c10::BFloat16;
};

template <typename T>
using acc_t = typename SumTraits<T>::acc;
template <typename T>
using out_t = typename SumTraits<T>::out;

}  // namespace warpreduce
