// Types of a sum, shared by the CPU and CUDA kernels (host and device code, no ATen).
#pragma once

#include <c10/util/BFloat16.h>
#include <c10/util/Half.h>

#include <cstdint>
#include <type_traits>

namespace warpreduce {

#if defined(__CUDACC__)
#define WARPREDUCE_TRAITS_HOST_DEVICE __host__ __device__
#else
#define WARPREDUCE_TRAITS_HOST_DEVICE
#endif

// A bool element as every kernel reads it: its byte, true when nonzero. torch.sum counts
// the true values of a bool tensor whatever its bytes hold (a uint8 tensor viewed as bool
// can hold 2 or 255: torch.sum gives 4 for the bytes 2, 1, 255, 1), and a C++ bool
// holding such a byte is undefined behaviour (the sums added the bytes: 259). The
// dispatch (plan.h) hands the kernels this type for bool, so none ever reads a bool.
struct BoolByte {
  uint8_t raw;
  BoolByte() = default;
  WARPREDUCE_TRAITS_HOST_DEVICE constexpr BoolByte(uint8_t byte) : raw(byte) {}
  WARPREDUCE_TRAITS_HOST_DEVICE constexpr operator int() const { return raw != 0; }
};
static_assert(sizeof(BoolByte) == 1 && std::is_trivially_copyable_v<BoolByte>);

// The element type the kernels take for a tensor of C++ type T.
template <typename T>
using kernel_t = std::conditional_t<std::is_same_v<T, bool>, BoolByte, T>;

// Integers and bool: summed exactly in 64 bits.
template <typename T>
constexpr bool is_integer_v = std::is_integral_v<T> || std::is_same_v<T, BoolByte>;

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
struct SumTraits<T, std::enable_if_t<is_integer_v<T>>> {
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
