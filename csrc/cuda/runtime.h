// What every CUDA launcher shares besides the kernels: the device's size, read once per
// device, blocks that fit at once, and the scratch of the split kernels (runtime.cu).
#pragma once

#include <ATen/core/Tensor.h>
#include <c10/cuda/CUDAException.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>

#include "../launch_model.h"

namespace warpreduce {

// What a device can run at once, read once per device (lock-free after that: this is on
// every call's path).
struct DeviceLimits {
  int64_t sms;
  int64_t threads_per_sm;
  int64_t blocks_per_sm;  // the most resident blocks an SM holds, of any kernel
};
DeviceLimits device_limits();
DeviceShape device_shape();  // the current device, as the launch model sees it

// Blocks of `kernel` (with `threads` threads and `shared` bytes of dynamic shared
// memory) that fit on the whole GPU at once. The per-SM count depends on the compiled
// kernel, the same on every device of one architecture, so it is read once per kernel.
template <auto kernel>
int64_t resident_blocks(unsigned threads, size_t shared = 0) {
  static const int64_t per_sm = [&] {
    int blocks = 0;
    C10_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, kernel, threads, shared));
    return std::max(blocks, 1);
  }();
  return per_sm * device_limits().sms;
}

// Scratch for the split kernels' finish (rows_split, columns): a ticket per row or tile
// that the blocks of a split count on, two more for a tail's grid (tail.cuh), then
// partial sums (up to 2 x max_split_blocks(), each up to a certified sum). Launches on
// one stream run in order and each leaves its tickets at 0, so a stream keeps its scratch
// and no call pays for a memset (one more launch). The most recently used streams keep
// theirs (64 of them): memory stays bounded however many streams come and go, and a
// stream that comes back gets a zeroed one. A stream being captured into a CUDA graph
// gets a fresh scratch zeroed inside the graph instead, since the graph may be replayed
// on another stream.
struct SplitScratch {
  at::Tensor memory;  // keeps it alive until the launch is queued
  unsigned* tickets;
  unsigned* tail_ticket;  // the grid's and the tail's blocks' (tail.cuh)
  void* partials;
  int64_t partial_bytes;
};
SplitScratch split_scratch(const at::Tensor& like);

// At most this many tickets a launch uses: as many blocks as the GPU holds at once (the
// split launches keep to that).
int64_t max_split_blocks();

inline int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

}  // namespace warpreduce
