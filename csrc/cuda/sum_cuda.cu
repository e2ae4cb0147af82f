// CUDA body of warpreduce::sum: the ATen glue around the kernels of stages.cuh, rows.cuh
// and columns.cuh, and the table of CUDA kernels. Checks, shapes and the reduction
// geometry come from plan.h; here are the device guard, the current stream, the dtype
// dispatch, the launch shapes and the scratch memory, which all comes from PyTorch's
// caching allocator.
#include <ATen/ops/empty.h>
#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <torch/library.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <limits>
#include <list>
#include <mutex>

#include "columns.cuh"
#include "launch.h"
#include "rows.cuh"
#include "stages.cuh"

namespace warpreduce {
namespace {

// What a device can run at once, read once per device (lock-free after that: this is on
// every call's path).
struct DeviceLimits {
  int64_t sms;
  int64_t threads_per_sm;
  int64_t blocks_per_sm;  // the most resident blocks an SM holds, of any kernel
};

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
    threads[device].store(read(cudaDevAttrMaxThreadsPerMultiProcessor), std::memory_order_relaxed);
    blocks[device].store(read(cudaDevAttrMaxBlocksPerMultiprocessor), std::memory_order_relaxed);
    sms[device].store(read(cudaDevAttrMultiProcessorCount), std::memory_order_release);
  }
  return {sms[device].load(std::memory_order_acquire),
          threads[device].load(std::memory_order_relaxed),
          blocks[device].load(std::memory_order_relaxed)};
}

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

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }
int64_t pow2_ceil(int64_t v) {
  int64_t p = 1;
  while (p < v) p *= 2;
  return p;
}

// ---------------------------------------------------------------------------------------
// Scratch for the split kernels' finish (rows_split, columns): a ticket per row or tile
// that the blocks of a split count on, then rows_split's partial sums. Launches on one
// stream run in order and each leaves its tickets at 0, so a stream keeps its scratch and
// no call pays for a memset (one more launch). The most recently used streams keep theirs
// (kKeptStreams): memory stays bounded however many streams come and go, and a stream
// that comes back gets a zeroed one. A stream being captured into a CUDA graph gets a
// fresh scratch zeroed inside the graph instead, since the graph may be replayed on
// another stream.
struct SplitScratch {
  at::Tensor memory;  // keeps it alive until the launch is queued
  unsigned* tickets;
  void* partials;
};

constexpr size_t kKeptStreams = 64;

// At most this many tickets and 8-byte row partials a launch uses: as many blocks as the
// GPU holds at once (the split launches keep to that).
int64_t max_split_blocks() {
  const DeviceLimits limits = device_limits();
  return limits.sms * limits.blocks_per_sm;
}

SplitScratch split_scratch(const at::Tensor& like) {
  const int64_t tickets = max_split_blocks();
  const int64_t bytes = tickets * 4 + 2 * tickets * 8;  // tickets, then 8-byte partials
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
  return {memory, reinterpret_cast<unsigned*>(base), base + tickets * 4};
}

// ---------------------------------------------------------------------------------------
// The staged kernels: rows, one launch per level of partial sums.

// Partial sums of type A live in tensors of the same width (unsigned sums in int64).
template <typename A>
constexpr at::ScalarType storage_dtype() {
  if constexpr (std::is_same_v<A, float>) {
    return at::kFloat;
  } else if constexpr (std::is_same_v<A, double>) {
    return at::kDouble;
  } else {
    static_assert(std::is_same_v<A, unsigned long long> || std::is_same_v<A, int64_t>);
    return at::kLong;
  }
}

// Blocks per row for one launch of a stage: as many as cover the row at items_per_thread
// elements a thread; for the grid-stride stages, as many as fill the GPU, but not so
// many that a thread gets fewer than 16 elements.
template <typename Stage>
int64_t parts_for(int64_t n, int64_t segments) {
  constexpr int64_t kGridStrideMinItems = 16;
  constexpr int64_t per_thread =
      Stage::items_per_thread ? Stage::items_per_thread : kGridStrideMinItems;
  int64_t parts = std::max<int64_t>(1, ceil_div(n, kStageThreads * per_thread));
  if constexpr (Stage::items_per_thread == 0) {
    const DeviceLimits limits = device_limits();
    const int64_t resident = limits.sms * limits.threads_per_sm / kStageThreads;
    parts = std::min(parts, std::max<int64_t>(1, resident / segments));
  }
  return parts;
}

// Kernel decomposition (Harris): a launch leaves [segments, parts] partial sums (in
// acc_t<T>) that the next launch reduces, until one block covers a row. No atomics, so
// every run gives the same bits.
template <typename Stage, typename T, typename Out>
void run_stage(const T* x, Out* y, int64_t segments, int64_t n, const at::TensorOptions& options) {
  using A = acc_t<T>;
  const int64_t parts = parts_for<Stage>(n, segments);
  const int64_t blocks = segments * parts;
  TORCH_CHECK(blocks <= std::numeric_limits<int>::max(), "warpreduce.sum: ", blocks,
              " blocks do not fit one launch");
  const cudaStream_t stream = c10::cuda::getCurrentCUDAStream();
  if (parts == 1) {
    Stage::template kernel<T, Out><<<blocks, kStageThreads, 0, stream>>>(x, y, n, 1);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return;
  }
  at::Tensor partial = at::empty({blocks}, options.dtype(storage_dtype<A>()));
  A* p = reinterpret_cast<A*>(partial.data_ptr());
  Stage::template kernel<T, A><<<blocks, kStageThreads, 0, stream>>>(x, p, n, parts);
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  run_stage<Stage, A, Out>(p, y, segments, parts, options);
}

// The staged kernels read the plan's rows (SumPlan::rows: in place for x.sum(-1) and
// full sums of dense tensors, else a copy into that order).
template <typename Stage>
void launch_stage(const SumPlan& plan, at::Tensor& out) {
  const at::Tensor rows = plan.rows();
  WARPREDUCE_DISPATCH(rows.scalar_type(), "warpreduce_sum_stage", [&] {
    run_stage<Stage>(kernel_data<scalar_t>(rows), out.mutable_data_ptr<out_t<scalar_t>>(),
                     rows.size(0), rows.size(1), out.options());
  });
}

// ---------------------------------------------------------------------------------------
// The fast path: each pass of the plan's geometry by the kernel its shape calls for.

// Rows are tiled through shared memory up to this length.
constexpr int64_t kTiledMaxRowBytes = 1024;
// A thread of a split should read at least this many 16-byte vectors.
constexpr int64_t kSplitMinVectorsPerThread = SplitPolicy::kUnroll;
// A column thread sums at least this many rows (4 rounds of 8 loads) before a tile's
// rows are shared by more threads.
constexpr int64_t kColumnRowsPerThread = 32;
// The last block of a column split reads at most this many partials a thread.
constexpr int64_t kColumnMaxFinishLoads = 32;

// Several blocks a row, as many as fill the GPU (one row: the full reduction), or a
// block a row when the rows are many.
template <typename T, typename Out, typename Rows, bool kFull>
void split_rows(const Rows& rows, Out* y, const at::Tensor& like) {
  using P = SplitPolicy;
  constexpr int64_t kLanes = 16 / sizeof(T);
  const cudaStream_t stream = c10::cuda::getCurrentCUDAStream();
  const int64_t capacity = resident_blocks<rows_split<T, Out, Rows, kFull>>(P::kThreads);
  const int64_t per_block = int64_t{P::kThreads} * kSplitMinVectorsPerThread * kLanes;
  int64_t parts = std::clamp<int64_t>(ceil_div(rows.length, per_block), 1,
                                      std::max<int64_t>(1, capacity / rows.count));
  parts = std::min(parts, max_split_blocks() * 2 / rows.count);  // what the scratch holds
  TORCH_CHECK(rows.count * parts <= std::numeric_limits<int>::max(), "warpreduce.sum: ", rows.count,
              " rows do not fit one launch");
  if (parts <= 1) {
    rows_split<T, Out, Rows, kFull>
        <<<rows.count, P::kThreads, 0, stream>>>(rows, 1u, y, nullptr, nullptr);
  } else {
    const SplitScratch scratch = split_scratch(like);
    rows_split<T, Out, Rows, kFull><<<rows.count * parts, P::kThreads, 0, stream>>>(
        rows, static_cast<unsigned>(parts), y, static_cast<combine_t<T>*>(scratch.partials),
        scratch.tickets);
  }
  C10_CUDA_KERNEL_LAUNCH_CHECK();
}

template <typename T, typename Out>
void rows_pass(const T* x, const ReductionPass& pass, Out* y, const at::Tensor& like) {
  constexpr int64_t kLanes = 16 / sizeof(T);
  const cudaStream_t stream = c10::cuda::getCurrentCUDAStream();
  const StridedRows<T> rows{x, pass.outer, pass.outer_size, pass.length, pass.reduced_stride};
  const int64_t row_bytes = pass.length * int64_t{sizeof(T)};

  const bool aligned = reinterpret_cast<uintptr_t>(x) % 16 == 0;
  // Rows of up to 32 whole vectors: a vector a lane, pow2_ceil(vectors) lanes a row, as
  // long as at least 3 in 4 lanes have a vector. On 2^19 rows of 100 floats (25 vectors,
  // 32 lanes) this ran at 86% of a full sum's speed, the tiled kernel at 71%.
  const int64_t row_vectors = row_bytes / 16;
  if (pass.packed_rows() && rows.count > 1 && aligned && row_bytes % 16 == 0 && row_vectors <= 32 &&
      4 * row_vectors >= 3 * pow2_ceil(row_vectors)) {
    const unsigned vectors = static_cast<unsigned>(row_vectors);
    const unsigned group = static_cast<unsigned>(pow2_ceil(row_vectors));
    const int64_t blocks = std::min(ceil_div(rows.count * group, kVectorRowsThreads),
                                    resident_blocks<rows_vectors<T, Out>>(kVectorRowsThreads));
    rows_vectors<T, Out>
        <<<blocks, kVectorRowsThreads, 0, stream>>>(x, rows.count, vectors, group, y);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return;
  }
  if (pass.packed_rows() && rows.count > 1 && row_bytes <= kTiledMaxRowBytes) {
    const int64_t rows_per_tile = kTileBytes / row_bytes;
    // A thread a row, unless rows a multiple of 4 words apart put a warp's threads on a
    // quarter of the banks or fewer (then 8 lanes a row); more lanes a row while a tile
    // holds too few rows to give every thread one in two passes (81 rows of 100
    // bfloat16s kept 81 of 256 threads busy).
    unsigned group = row_bytes % 16 == 0 ? 8 : 1;
    while (group < 32 && rows_per_tile * group < 2 * int64_t{kTiledThreads}) group *= 2;
    const size_t shared = 2 * kTileStage * 16;
    const int64_t blocks = std::min(ceil_div(rows.count, rows_per_tile),
                                    resident_blocks<rows_tiled<T, Out>>(kTiledThreads, shared));
    rows_tiled<T, Out><<<blocks, kTiledThreads, shared, stream>>>(x, rows.count, rows.length,
                                                                  rows_per_tile, group, y);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return;
  }

  // A group of lanes per row (a warp for rows of 512 bytes or more) while the rows keep a
  // quarter of the GPU's threads busy and a warp's share is at most 64 vectors a lane;
  // else whole blocks, several per row when the rows are few.
  const int64_t vectors = ceil_div(pass.length, pass.reduced_stride == 1 ? kLanes : 1);
  const int64_t group = std::min<int64_t>(32, pow2_ceil(vectors));
  const int64_t grouped_capacity =
      resident_blocks<rows_grouped<T, Out>>(kGroupedThreads) * kGroupedThreads;
  if (rows.count > 1 && rows.count * group >= grouped_capacity / 4 && vectors <= 32 * 64) {
    const int64_t blocks =
        std::min(ceil_div(rows.count * group, kGroupedThreads), grouped_capacity / kGroupedThreads);
    rows_grouped<T, Out><<<blocks, kGroupedThreads, 0, stream>>>(rows, group, y);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return;
  }

  const EvenRows<T> even{x, pass.outer.ndim == 0 ? 0 : pass.outer.strides[0], pass.outer_size,
                         pass.length};
  if (pass.even_rows() && rows.count == 1) {
    split_rows<T, Out, EvenRows<T>, true>(even, y, like);
  } else if (pass.even_rows()) {
    split_rows<T, Out, EvenRows<T>, false>(even, y, like);
  } else if (rows.count == 1) {
    split_rows<T, Out, StridedRows<T>, true>(rows, y, like);
  } else {
    split_rows<T, Out, StridedRows<T>, false>(rows, y, like);
  }
}

template <typename T, typename Out, int kVec>
void launch_columns(const Columns<T>& c, Out* y, const at::Tensor& like) {
  using C = combine_t<T>;
  const cudaStream_t stream = c10::cuda::getCurrentCUDAStream();
  const int64_t vec_cols = ceil_div(c.inner, kVec);
  // A warp across the tile (512 contiguous bytes a row with vectors), the rest of the
  // block down the rows; wider tiles when the rows are too few to share.
  ColumnTiling t;
  t.tx = static_cast<unsigned>(std::min<int64_t>(32, pow2_ceil(vec_cols)));
  t.ty = kColumnThreads / t.tx;
  while (t.ty > 1 && c.length < int64_t{t.ty} * kColumnRowsPerThread) {
    t.ty /= 2;
    t.tx *= 2;
  }
  t.tiles_per_outer = ceil_div(vec_cols, t.tx);
  t.tiles = c.outer_size * t.tiles_per_outer;
  // When the tiles fill less than half the GPU, a tile's rows split over blocks, while every
  // thread keeps kColumnRowsPerThread rows and the finish stays cheap. Only then: a split
  // writes and reads splits x outputs partial sums, and splitting for more rounds of
  // blocks (to shorten the last one) cost 32 x 2^20 dim 0 a third of its speed.
  const int64_t capacity = resident_blocks<columns<T, Out, kVec>>(kColumnThreads);
  t.splits = 1;
  if (2 * t.tiles <= capacity) {
    const int64_t fill = ceil_div(capacity, t.tiles);
    const int64_t enough_rows = c.length / (int64_t{t.ty} * kColumnRowsPerThread);
    const int64_t cheap_finish = kColumnMaxFinishLoads * t.ty / kVec;
    t.splits = std::clamp<int64_t>(std::min({fill, enough_rows, cheap_finish}), 1,
                                   max_split_blocks() / t.tiles);
  }
  t.rows_per_split = ceil_div(c.length, t.splits);
  t.splits = ceil_div(c.length, t.rows_per_split);
  if (t.splits == 1) {
    const int64_t blocks = std::min(t.tiles, capacity * 8);
    columns<T, Out, kVec><<<blocks, kColumnThreads, 0, stream>>>(c, t, y, nullptr, nullptr);
  } else {
    at::Tensor partials =
        at::empty({t.tiles * t.splits * t.tx * kVec}, like.options().dtype(storage_dtype<C>()));
    const SplitScratch scratch = split_scratch(like);
    const dim3 grid(static_cast<unsigned>(t.tiles), static_cast<unsigned>(t.splits));
    columns<T, Out, kVec><<<grid, kColumnThreads, 0, stream>>>(
        c, t, y, reinterpret_cast<C*>(partials.data_ptr()), scratch.tickets);
  }
  C10_CUDA_KERNEL_LAUNCH_CHECK();
}

template <typename T, typename Out>
void columns_pass(const T* x, const ReductionPass& pass, Out* y, const at::Tensor& like) {
  constexpr int64_t kLanes = 16 / sizeof(T);
  const Columns<T> c{
      x,          pass.outer,       pass.outer_size, pass.length, pass.reduced_stride,
      pass.inner, pass.inner_stride};
  // One 16-byte vector a row per thread when every row of every tile starts on a 16-byte
  // boundary and the tile's outputs are adjacent.
  bool vectors = reinterpret_cast<uintptr_t>(x) % 16 == 0 &&
                 reinterpret_cast<uintptr_t>(y) % 16 == 0 && pass.inner_stride == 1 &&
                 pass.inner % kLanes == 0 && pass.reduced_stride % kLanes == 0;
  for (int d = 0; d < pass.outer.ndim; ++d)
    vectors = vectors && pass.outer.strides[d] % kLanes == 0;
  if (vectors) {
    launch_columns<T, Out, kLanes>(c, y, like);
  } else {
    launch_columns<T, Out, 1>(c, y, like);
  }
}

template <typename T, typename Out>
void run_pass(const T* x, const ReductionPass& pass, Out* y, const at::Tensor& like) {
  if (pass.is_rows()) {
    rows_pass(x, pass, y, like);
  } else {
    columns_pass(x, pass, y, like);
  }
}

// What a pass that is not the last writes for the next: combine_t as a tensor dtype
// (double for float32, float for 16-bit floats, int64 for integers).
template <typename T>
using carry_t = std::conditional_t<std::is_integral_v<combine_t<T>>, int64_t, combine_t<T>>;

void launch_auto(const SumPlan& plan, at::Tensor& out) {
  WARPREDUCE_DISPATCH(plan.input.scalar_type(), "warpreduce_sum_auto", [&] {
    using T = scalar_t;
    using Carry = carry_t<T>;
    const T* x = kernel_data<T>(plan.input);
    out_t<T>* y = out.mutable_data_ptr<out_t<T>>();
    const auto& passes = plan.passes;
    if (passes.size() == 1) return run_pass(x, passes[0], y, out);
    at::Tensor carried = at::empty({passes[0].outputs()},
                                   out.options().dtype(c10::CppTypeToScalarType<Carry>::value));
    run_pass(x, passes[0], carried.mutable_data_ptr<Carry>(), out);
    for (size_t k = 1; k + 1 < passes.size(); ++k) {
      at::Tensor next = at::empty({passes[k].outputs()}, carried.options());
      run_pass(carried.const_data_ptr<Carry>(), passes[k], next.mutable_data_ptr<Carry>(), out);
      carried = next;
    }
    run_pass(carried.const_data_ptr<Carry>(), passes.back(), y, out);
  });
}

// The CUDA kernels kernel= names, in stage order: the only list of them.
constexpr Kernel kCudaKernels[] = {
    {"interleaved_divergent", KernelRole::kStage, launch_stage<interleaved_divergent_stage>},
    {"interleaved_bank_conflicts", KernelRole::kStage,
     launch_stage<interleaved_bank_conflicts_stage>},
    {"sequential_addressing", KernelRole::kStage, launch_stage<sequential_addressing_stage>},
    {"first_add_during_load", KernelRole::kStage, launch_stage<first_add_during_load_stage>},
    {"unroll_last_warp", KernelRole::kStage, launch_stage<unroll_last_warp_stage>},
    {"complete_unroll", KernelRole::kStage, launch_stage<complete_unroll_stage>},
    {"multiple_elements", KernelRole::kStage, launch_stage<multiple_elements_stage>},
    {"warp_shuffle", KernelRole::kStage, launch_stage<warp_shuffle_stage>},
    {"auto", KernelRole::kFast, launch_auto},
    {"cub", KernelRole::kBaseline, launch_cub},
};

at::Tensor sum_cuda(const at::Tensor& self, at::OptionalIntArrayRef dim, bool keepdim,
                    std::optional<at::ScalarType> dtype, c10::string_view kernel) {
  const c10::cuda::CUDAGuard guard(self.device());
  return run_sum(self, dim, keepdim, dtype, kernel);
}

}  // namespace

c10::ArrayRef<Kernel> cuda_kernels() { return kCudaKernels; }

TORCH_LIBRARY_IMPL(warpreduce, CUDA, m) { m.impl("_sum", &sum_cuda); }

}  // namespace warpreduce
