// The CUDA runtime side every launcher shares: what a device holds, and the scratch of
// the split kernels (runtime.h).
#include "runtime.h"

#include <ATen/ops/empty.h>
#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAStream.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <list>
#include <mutex>

#include "accumulate.cuh"

namespace warpreduce {

namespace {

// A kernel that does nothing, to ask the driver whether this build has code for a device.
__global__ void probe() {}

// A clear error, once per device, where this build has no code for the GPU: rather than
// "no kernel image is available" from inside a launch.
void check_architecture(c10::DeviceIndex device) {
  cudaFuncAttributes attributes;
  const cudaError_t error = cudaFuncGetAttributes(&attributes, probe);
  if (error == cudaSuccess) return;
  (void)cudaGetLastError();  // clear it: the caller sees our error instead
  cudaDeviceProp p;
  C10_CUDA_CHECK(cudaGetDeviceProperties(&p, device));
  TORCH_CHECK(false, "warpreduce_torch's CUDA kernels were not compiled for cuda:",
              static_cast<int>(device), " (", p.name, ", compute capability ", p.major, ".",
              p.minor, "): ", cudaGetErrorString(error),
              ". warpreduce_torch.build_info() lists the architectures of this build; rebuild "
              "with TORCH_CUDA_ARCH_LIST=",
              p.major, ".", p.minor, " pip install --no-build-isolation -e . (README: Install).");
}

}  // namespace

DeviceLimits device_limits() {
  using Slots = std::array<std::atomic<int64_t>, C10_COMPILE_TIME_MAX_GPUS>;
  static Slots sms{}, threads{}, blocks{};  // sms 0: not read yet
  const c10::DeviceIndex device = c10::cuda::current_device();
  if (sms[device].load(std::memory_order_acquire) == 0) {
    auto read = [&](cudaDeviceAttr attribute) {
      int value = 0;
      C10_CUDA_CHECK(cudaDeviceGetAttribute(&value, attribute, device));
      return value;
    };
    check_architecture(device);
    threads[device].store(read(cudaDevAttrMaxThreadsPerMultiProcessor), std::memory_order_relaxed);
    blocks[device].store(read(cudaDevAttrMaxBlocksPerMultiprocessor), std::memory_order_relaxed);
    sms[device].store(read(cudaDevAttrMultiProcessorCount), std::memory_order_release);
  }
  return {sms[device].load(std::memory_order_acquire),
          threads[device].load(std::memory_order_relaxed),
          blocks[device].load(std::memory_order_relaxed)};
}

constexpr size_t kKeptStreams = 64;

int64_t max_split_blocks() {
  const DeviceLimits limits = device_limits();
  return limits.sms * limits.blocks_per_sm;
}

SplitScratch split_scratch(const at::Tensor& like) {
  const int64_t tickets = max_split_blocks();
  // tickets and the tail's two, then partials (up to a certified sum each)
  const int64_t ticket_bytes = ((tickets + 2) * 4 + 15) / 16 * 16;
  const int64_t bytes = ticket_bytes + 2 * tickets * int64_t{sizeof(CertifiedSum)};
  const c10::cuda::CUDAStream stream = c10::cuda::getCurrentCUDAStream();
  auto zeroed = [&] {
    at::Tensor t = at::empty({bytes}, like.options().dtype(at::kByte));
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
    using Key = std::pair<c10::DeviceIndex, cudaStream_t>;
    static std::mutex mutex;
    // Most recently used first. Never destroyed, on purpose: freeing CUDA memory from a
    // static destructor at exit can outlive the allocator.
    static auto* kept = new std::list<std::pair<Key, at::Tensor>>;
    const Key key{stream.device_index(), stream.stream()};
    const std::lock_guard<std::mutex> lock(mutex);
    auto it =
        std::find_if(kept->begin(), kept->end(), [&](const auto& e) { return e.first == key; });
    if (it != kept->end()) {
      kept->splice(kept->begin(), *kept, it);
    } else {
      // The memory of an evicted stream goes back to the caching allocator, which hands
      // it out again only in order on that same stream: safe with launches in flight.
      if (kept->size() >= kKeptStreams) kept->pop_back();
      kept->emplace_front(key, zeroed());
    }
    memory = kept->front().second;
  }
  char* base = static_cast<char*>(memory.data_ptr());
  unsigned* ticket_words = reinterpret_cast<unsigned*>(base);
  return {memory, ticket_words, ticket_words + tickets, base + ticket_bytes, bytes - ticket_bytes};
}

DeviceShape device_shape() {
  const DeviceLimits limits = device_limits();
  return {limits.sms, limits.threads_per_sm};
}

}  // namespace warpreduce
