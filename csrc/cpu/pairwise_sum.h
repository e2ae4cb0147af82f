// Pairwise summation for the CPU: the float error grows with log2(n), not n, like the
// cascade sum of torch.sum on the CPU. No ATen here.
#pragma once

#include <cstdint>

#include "../sum_traits.h"

namespace warpreduce {

// Leaves of 64 elements summed in 8 independent lanes (the compiler vectorises the lane
// loop without reassociating anything); above that, halves summed recursively. Leaves
// of 256 (32 serial adds a lane) erred up to 2x torch.sum's on a constant input (2^20
// times 0.1f: 4 ulp against 2); with 64, ours was 1 ulp and torch.sum's 2.
template <typename T>
acc_t<T> pairwise_sum(const T* x, int64_t n) {
  using A = acc_t<T>;
  constexpr int64_t kLanes = 8;
  constexpr int64_t kLeaf = 64;
  if (n > kLeaf) {
    const int64_t half = n / 2 / kLanes * kLanes;
    return pairwise_sum(x, half) + pairwise_sum(x + half, n - half);
  }
  A lane[kLanes] = {};
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    for (int64_t j = 0; j < kLanes; ++j) lane[j] += static_cast<A>(x[i + j]);
  }
  A tail = 0;
  for (; i < n; ++i) tail += static_cast<A>(x[i]);
  return ((lane[0] + lane[1]) + (lane[2] + lane[3])) +
         ((lane[4] + lane[5]) + (lane[6] + lane[7])) + tail;
}

}  // namespace warpreduce
