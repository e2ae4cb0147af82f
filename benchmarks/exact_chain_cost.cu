// What each part of exact's per-element arithmetic (csrc/cuda/accumulate.cuh,
// RoundedChain: a conversion to double, a double addition, a magnitude added rounded up,
// the lsb key's minimum) costs a streaming kernel, apart from everything else a kernel
// does: 16-byte loads, 4 in flight a thread, each element added into one of two chains
// by variant V, 1 GiB of float32 or bfloat16; GB/s of input. A standalone program:
//
//     nvcc -O3 -arch=sm_90 -std=c++17 benchmarks/exact_chain_cost.cu -o /tmp/chain && /tmp/chain
//
// (benchmarks/RESULTS.md, Exact sums: on an H200 today's chain ran at 4395-4451 GB/s and
// a float sum at 4309-4463: the arithmetic is not what holds exact's dim sums back.)
#include <cuda_bf16.h>
#include <cstdint>
#include <cstdio>

#define CHECK(x)                                     \
  do {                                               \
    cudaError_t e = (x);                             \
    if (e != cudaSuccess) {                          \
      printf("%s: %s\n", #x, cudaGetErrorString(e)); \
      return 1;                                      \
    }                                                \
  } while (0)

__device__ __forceinline__ uint4 ld(const uint4* p) {
  uint4 v;
  asm volatile("ld.global.nc.L1::no_allocate.v4.u32 {%0,%1,%2,%3}, [%4];"
               : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
               : "l"(p));
  return v;
}

// x as a double scaled by 2^-896, from its bits (finite floats; specials map to finite).
__device__ __forceinline__ double scaled(uint32_t f) {
  const uint32_t hi = (f & 0x80000000u) | ((f & 0x7fffffffu) >> 3);
  return __hiloint2double(static_cast<int>(hi), static_cast<int>(f << 29));
}
__device__ __forceinline__ double scaled16(uint32_t f) {  // low 16 bits of f zero
  const uint32_t hi = (f & 0x80000000u) | ((f & 0x7fffffffu) >> 3);
  return __hiloint2double(static_cast<int>(hi), 0);
}

struct Chain {
  float fsum = 0;
  double sum = 0;
  float mag = 0;
  uint32_t key = 0xffffffffu, maxbits = 0;
  int count = 0;
};

template <int V, bool kBf16>
__device__ __forceinline__ void add(Chain& c, uint32_t bits) {
  const float f = __uint_as_float(bits);
  const uint32_t a = bits & 0x7fffffffu;
  if constexpr (V == 0) c.fsum += f;  // auto
  if constexpr (V == 1) c.sum += static_cast<double>(f);  // F2F + DADD
  if constexpr (V == 2) {
    c.sum += static_cast<double>(f);
    c.mag = __fadd_ru(c.mag, fabsf(f));
  }
  if constexpr (V == 3) {  // RoundedChain today
    c.sum += static_cast<double>(f);
    c.mag = __fadd_ru(c.mag, fabsf(f));
    c.key = min(c.key, a - 1);
  }
  if constexpr (V == 4) {  // scaled bits, no F2F; max bits for the specials
    c.sum += kBf16 ? scaled16(bits) : scaled(bits);
    c.mag = __fadd_ru(c.mag, fabsf(f));
    c.key = min(c.key, a - 1);
    c.maxbits = max(c.maxbits, a);
  }
  if constexpr (V == 5) c.sum += kBf16 ? scaled16(bits) : scaled(bits);
  if constexpr (V == 6) {  // scaled, key and max bits (bound n * max), no magnitude
    c.sum += kBf16 ? scaled16(bits) : scaled(bits);
    c.key = min(c.key, a - 1);
    c.maxbits = max(c.maxbits, a);
  }
  if constexpr (V == 7) {  // F2F, key and max (no FADD.RU)
    c.sum += static_cast<double>(f);
    c.key = min(c.key, a - 1);
    c.maxbits = max(c.maxbits, a);
  }
  ++c.count;
}

template <int V, bool kBf16>
__global__ void __launch_bounds__(512, 2) stream(const uint4* x, size_t nvec, double* out) {
  Chain c[2];
  constexpr int kUnroll = 4;
  const size_t stride = size_t{gridDim.x} * blockDim.x;
  for (size_t i = blockIdx.x * size_t{blockDim.x} + threadIdx.x; i < nvec; i += kUnroll * stride) {
    uint4 v[kUnroll];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u)
      v[u] = i + u * stride < nvec ? ld(x + i + u * stride) : uint4{0, 0, 0, 0};
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      const uint32_t w[4] = {v[u].x, v[u].y, v[u].z, v[u].w};
#pragma unroll
      for (int j = 0; j < 4; ++j) {
        if constexpr (kBf16) {
          add<V, true>(c[0], w[j] << 16);
          add<V, true>(c[1], w[j] & 0xffff0000u);
        } else {
          add<V, false>(c[j / 2], w[j]);
        }
      }
    }
  }
  double r = 0;
  for (int k = 0; k < 2; ++k)
    r += c[k].fsum + c[k].sum + c[k].mag + c[k].key + c[k].maxbits + c[k].count;
  out[blockIdx.x * size_t{blockDim.x} + threadIdx.x] = r;
}

__global__ void fill(uint32_t* p, size_t n) {
  for (size_t i = blockIdx.x * size_t{blockDim.x} + threadIdx.x; i < n;
       i += size_t{gridDim.x} * blockDim.x) {
    uint32_t h = static_cast<uint32_t>(i) * 2654435761u;
    h ^= h >> 15;
    h *= 2246822519u;
    h ^= h >> 13;
    // floats of exponents 2^-8..2^8, either sign
    const uint32_t e = 119 + (h >> 24) % 17;
    p[i] = (h & 0x80000000u) | (e << 23) | (h & 0x7fffffu);
  }
}

template <int V, bool kBf16>
float run(const uint4* x, size_t nvec, double* out, int blocks) {
  cudaEvent_t a, b;
  cudaEventCreate(&a);
  cudaEventCreate(&b);
  stream<V, kBf16><<<blocks, 512>>>(x, nvec, out);
  cudaEventRecord(a);
  const int reps = 20;
  for (int r = 0; r < reps; ++r) stream<V, kBf16><<<blocks, 512>>>(x, nvec, out);
  cudaEventRecord(b);
  cudaEventSynchronize(b);
  float ms;
  cudaEventElapsedTime(&ms, a, b);
  if (cudaGetLastError() != cudaSuccess) return -1;
  return nvec * 16.0 * reps / (ms * 1e-3) / 1e9;
}

template <bool kBf16>
void all(const uint4* x, size_t nvec, double* out, int blocks) {
  const char* names[] = {
      "float (auto)",       "F2F+DADD",    "F2F+DADD+mag",   "F2F+DADD+mag+key (today)",
      "scaled+mag+key+max", "scaled only", "scaled+key+max", "F2F+key+max"};
  float g[8];
  g[0] = run<0, kBf16>(x, nvec, out, blocks);
  g[1] = run<1, kBf16>(x, nvec, out, blocks);
  g[2] = run<2, kBf16>(x, nvec, out, blocks);
  g[3] = run<3, kBf16>(x, nvec, out, blocks);
  g[4] = run<4, kBf16>(x, nvec, out, blocks);
  g[5] = run<5, kBf16>(x, nvec, out, blocks);
  g[6] = run<6, kBf16>(x, nvec, out, blocks);
  g[7] = run<7, kBf16>(x, nvec, out, blocks);
  for (int v = 0; v < 8; ++v)
    printf("%s blocks %d  %-28s %7.0f GB/s\n", kBf16 ? "bf16" : "f32 ", blocks, names[v], g[v]);
}

int main() {
  const size_t n = size_t{1} << 28;  // 32-bit words: 1 GiB
  uint32_t* x;
  double* out;
  CHECK(cudaMalloc(&x, n * 4));
  CHECK(cudaMalloc(&out, size_t{132} * 8 * 512 * 8));
  fill<<<1024, 256>>>(x, n);
  CHECK(cudaDeviceSynchronize());
  int sms;
  cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0);
  for (int per_sm : {2, 4}) {
    all<false>(reinterpret_cast<const uint4*>(x), n / 4, out, sms * per_sm);
    all<true>(reinterpret_cast<const uint4*>(x), n / 4, out, sms * per_sm);
  }
  CHECK(cudaDeviceSynchronize());
  return 0;
}
