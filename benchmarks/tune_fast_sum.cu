// Tuning experiment for the fast path's policy (csrc/cuda/fast_sum.cuh): the same kernel
// under several launch shapes and load instructions, timed side by side. Not part of
// the library; benchmarks/gpu_check.sh builds and runs it, RESULTS.md keeps the output.
//
//   nvcc -O3 -std=c++17 -arch=sm_90 -I$(python3 -c 'import torch.utils.cpp_extension as c;
//        print(c.include_paths()[0])') benchmarks/tune_fast_sum.cu -o tune && ./tune [filter]
//
// With a filter, only the policies whose name contains it run.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "../csrc/cuda/fast_sum.cuh"

using namespace warpreduce;

// The loads the library's LoadNoL1 was chosen over.
struct LoadPlain {
  __device__ __forceinline__ static uint4 load(const uint4* p) { return *p; }
};
struct LoadEvictFirst {
  __device__ __forceinline__ static uint4 load(const uint4* p) { return __ldcs(p); }
};
struct LoadNoL1Prefetch256 {
  __device__ __forceinline__ static uint4 load(const uint4* p) {
    uint4 v;
    asm volatile("ld.global.nc.L1::no_allocate.L2::256B.v4.u32 {%0, %1, %2, %3}, [%4];"
                 : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
                 : "l"(p));
    return v;
  }
};

#define CHECK(call)                                                                   \
  do {                                                                                \
    cudaError_t err_ = (call);                                                        \
    if (err_ != cudaSuccess) {                                                        \
      std::fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #call,               \
                   cudaGetErrorString(err_));                                         \
      std::exit(1);                                                                   \
    }                                                                                 \
  } while (0)

constexpr size_t kRotateBytes = size_t{1} << 30;  // inputs spread over 1 GiB: not in L2
constexpr int64_t kMaxBlocks = 1 << 20;  // partials the scratch holds
const char* g_filter = nullptr;  // argv[1]: run only the policies whose name contains it

struct Scratch {
  void* partials;
  unsigned* ticket;
};

// Median GPU time per call, CUDA events around a loop over rotated inputs.
// persistent: at most as many blocks as fit the GPU at once (the library's rule); else
// one block per round of kThreads x kUnroll vectors, as many blocks as that takes.
template <typename T, typename P>
double time_per_call(const T* buffer, int64_t count, int64_t step, int64_t n, Scratch s,
                     out_t<T>* y, int sms, bool persistent) {
  int per_sm = 0;
  CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, fast_sum<T, out_t<T>, P>,
                                                      P::kThreads, 0));
  const int64_t per_block = int64_t{P::kThreads} * P::kUnroll * (16 / sizeof(T));
  const int64_t blocks = std::clamp<int64_t>((n + per_block - 1) / per_block, 1,
                                             persistent ? int64_t{sms} * per_sm : kMaxBlocks);
  auto launch = [&](int64_t k) {
    fast_sum<T, out_t<T>, P><<<blocks, P::kThreads>>>(
        buffer + (k % count) * step, n, y, static_cast<combine_t<T>*>(s.partials), s.ticket);
  };
  for (int k = 0; k < 3; ++k) launch(k);
  CHECK(cudaGetLastError());
  cudaEvent_t start, end;
  CHECK(cudaEventCreate(&start));
  CHECK(cudaEventCreate(&end));
  const int calls = std::max<int64_t>(count, std::min<int64_t>(2000, (int64_t{20} << 28) / (n * sizeof(T) + 1) + 1));
  std::vector<double> samples;
  for (int r = 0; r < 7; ++r) {
    CHECK(cudaEventRecord(start));
    for (int k = 0; k < calls; ++k) launch(k);
    CHECK(cudaEventRecord(end));
    CHECK(cudaEventSynchronize(end));
    float ms = 0;
    CHECK(cudaEventElapsedTime(&ms, start, end));
    samples.push_back(ms * 1e3 / calls);
  }
  CHECK(cudaGetLastError());
  std::sort(samples.begin(), samples.end());
  return samples[samples.size() / 2];
}

template <typename T>
__global__ void fill(T* x, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n; i += int64_t{gridDim.x} * blockDim.x) {
    x[i] = static_cast<T>(static_cast<float>((i * 2654435761u) % 1000) / 500.0f);  // not zeros
  }
}

template <typename T>
void sweep(const char* dtype, int sms, double peak) {
  const std::vector<int> log2s = {16, 20, 22, 23, 24, 26, 28};
  const int64_t total = kRotateBytes / sizeof(T) * 2;  // room for two 2^28 inputs of 4 bytes
  T* buffer;
  CHECK(cudaMalloc(&buffer, total * sizeof(T)));
  fill<<<1024, 256>>>(buffer, total);
  Scratch s;
  CHECK(cudaMalloc(&s.partials, kMaxBlocks * 8 + 16));
  CHECK(cudaMemset(s.partials, 0, kMaxBlocks * 8 + 16));
  s.ticket = reinterpret_cast<unsigned*>(static_cast<char*>(s.partials) + kMaxBlocks * 8);
  out_t<T>* y;
  CHECK(cudaMalloc(&y, sizeof(out_t<T>)));

  std::printf("\n%s: GPU time per call in us (GB/s), peak %.0f GB/s\n%-32s", dtype, peak, "policy");
  for (int l : log2s) std::printf("%18s", ("2^" + std::to_string(l)).c_str());
  std::printf("\n");
  auto row = [&](const char* name, auto policy, bool persistent = true) {
    using P = decltype(policy);
    if (g_filter && !std::strstr(name, g_filter)) return;
    std::printf("%-32s", name);
    for (int l : log2s) {
      const int64_t n = int64_t{1} << l;
      const int64_t step = (n + 255) / 256 * 256;
      const int64_t count = std::max<int64_t>(2, std::min<int64_t>(total / step, kRotateBytes / (step * sizeof(T))));
      const double us = time_per_call<T, P>(buffer, count, step, n, s, y, sms, persistent);
      std::printf("%9.1f (%5.0f)", us, n * sizeof(T) / us / 1e3);
    }
    std::printf("\n");
    std::fflush(stdout);
  };
  // threads x loads in flight a thread, load
  row("512x4 noL1 (the library's)", FastPolicy{});
  row("512x4 noL1, threadfence ticket", FastPolicyT<512, 4, LoadNoL1, TicketThreadfence>{});
  row("512x4 plain", FastPolicyT<512, 4, LoadPlain, TicketAcqRel>{});
  row("512x4 evict-first", FastPolicyT<512, 4, LoadEvictFirst, TicketAcqRel>{});
  row("512x4 noL1 L2::256B", FastPolicyT<512, 4, LoadNoL1Prefetch256, TicketAcqRel>{});
  row("256x4 noL1", FastPolicyT<256, 4, LoadNoL1, TicketAcqRel>{});
  row("256x8 noL1", FastPolicyT<256, 8, LoadNoL1, TicketAcqRel>{});
  row("512x8 noL1", FastPolicyT<512, 8, LoadNoL1, TicketAcqRel>{});
  row("1024x4 noL1", FastPolicyT<1024, 4, LoadNoL1, TicketAcqRel>{});
  row("512x4 noL1, not persistent", FastPolicy{}, false);
  CHECK(cudaFree(buffer));
  CHECK(cudaFree(s.partials));
  CHECK(cudaFree(y));
}

int main(int argc, char** argv) {
  if (argc > 1) g_filter = argv[1];
  cudaDeviceProp p;
  CHECK(cudaGetDeviceProperties(&p, 0));
  int clock_khz = 0, bus_bits = 0;
  CHECK(cudaDeviceGetAttribute(&clock_khz, cudaDevAttrMemoryClockRate, 0));
  CHECK(cudaDeviceGetAttribute(&bus_bits, cudaDevAttrGlobalMemoryBusWidth, 0));
  const double peak = clock_khz * 1e3 * (bus_bits / 8.0) * 2 / 1e9;
  std::printf("%s, %d SMs, fast_sum policies (threads x loads in flight a thread, load)\n",
              p.name, p.multiProcessorCount);
  sweep<float>("float32", p.multiProcessorCount, peak);
  sweep<c10::BFloat16>("bfloat16", p.multiProcessorCount, peak);
  sweep<int32_t>("int32", p.multiProcessorCount, peak);
  return 0;
}
