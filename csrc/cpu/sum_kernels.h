// The CPU kernels of warpreduce::sum, written once with at::vec::Vectorized (ATen's
// vector type: AVX-512, AVX2 or plain C++ depending on how the file including this one is
// compiled) and compiled once per instruction set: sum_kernels_<isa>.cpp defines
// CPU_CAPABILITY (DEFAULT, AVX2, AVX512), turns that instruction set on and includes this
// header, which puts everything into warpreduce::cpu::CPU_CAPABILITY (sum_kernels_isa.h
// says how a TU must be laid out so that nothing it shares with others is compiled for
// the wider ISA). sum_cpu.cpp picks one at run time.
//
// Each pass of the reduction geometry (geometry.h) is read in place, never copied:
// - ROWS (inner == 1): each output sums `length` elements, vector loads along the row;
// - COLUMNS (inner > 1): the outputs are adjacent, vector loads across them, the reduced
//   dim walked in the outer loop, a tile of partial sums kept in L1.
// Work is cut into tasks of a size fixed by the shape alone (never by the thread count),
// each task writes its own partial sums, and partial sums are combined in a fixed
// pairwise order: the result is the same bits for any number of threads.
//
// Float error: every sum is a cascade (a few serial adds per lane at the bottom, pairwise
// above), like ATen's cascade sum, so the error grows with log(length), not length.
#pragma once

#if !defined(CPU_CAPABILITY) || !defined(WARPREDUCE_CPU_KERNELS_PRELUDE)
#error "include sum_kernels_prelude.h, then define CPU_CAPABILITY, before this header"
#endif

#include <ATen/cpu/vec/functional.h>
#include <ATen/cpu/vec/vec.h>

namespace warpreduce::cpu::CPU_CAPABILITY {

using at::vec::Vectorized;

// ---- Tuning, in one place ------------------------------------------------------------
// Each float cascade leaf is kAccumulators independent vector accumulators, each adding
// kLeafRounds vectors: enough independent adds in flight to cover the add latency (4
// cycles, 2 a cycle on AVX-512 and AVX2 cores: 8 chains), and 8 serial adds per lane keep
// the leaf error below ATen's cascade, whose serial runs are 16.
constexpr int kAccumulators = 8;
constexpr int kLeafRounds = 8;
// Elements of a row one task sums; longer rows are cut into chunks of this size, summed
// in parallel and combined pairwise. Fixed so that results do not depend on threads.
constexpr int64_t kRowChunk = int64_t{1} << 14;
// Column tiles: rows of a tile are summed kBlockRows at a time in registers (16 serial
// adds a lane, as ATen's cascade), block sums are added into an L1-resident tile of
// partial sums (16 at most: a chunk is kChunkRows rows), and chunks are combined pairwise.
constexpr int64_t kBlockRows = 16;
constexpr int64_t kChunkRows = 256;
constexpr int64_t kTileBytes = 8192;  // partial sums of one tile: 2048 floats, in L1
template <typename A>
constexpr int64_t kTileWidth = kTileBytes / sizeof(A);
template <typename A>
constexpr int64_t kTilePad = 64 / sizeof(A);  // room for a whole last vector
constexpr int kColumnVectors = 4;  // vectors of columns summed side by side in a block
// Tasks smaller than this many elements are grouped, and a pass of fewer elements runs on
// the calling thread: waking the pool costs more than it saves below it. (On the 2-core
// dev machine a second thread never paid, one core already reading memory at its limit;
// 2^16, twice ATen's grain, leaves a 2^20-element sum 16 pieces for a larger host.)
constexpr int64_t kMinParallelElements = int64_t{1} << 16;

// What partial sums are combined in once the elements are added up: double for float32
// (a chunk's lanes, chunks, passes: few values, so the wider adds cost nothing, and the
// combine adds no error of its own: float combining erred 1.36x torch.sum's mean at 2^24
// elements, over 18 inputs), else the accumulator type itself.
template <typename A>
using combine_t = std::conditional_t<std::is_same_v<A, float>, double, A>;

inline int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// Runs fn(task) for task in [0, tasks), tasks of about `task_elements` elements each,
// spread over the threads. Which thread runs a task never changes what the task computes.
template <typename Fn>
void for_each_task(int64_t tasks, int64_t task_elements, const Fn& fn) {
  const int64_t grain = std::max<int64_t>(1, kMinParallelElements / std::max<int64_t>(1, task_elements));
  at::parallel_for(0, tasks, grain, [&](int64_t begin, int64_t end) {
    for (int64_t t = begin; t < end; ++t) fn(t);
  });
}

// ---- Loads: a float type as vectors of its accumulator type --------------------------
// float and double load as they are; float16 and bfloat16 are widened to float in vector
// registers (one load of Vectorized<float>::size() 16-bit values, then a conversion).
template <typename T>
struct VecLoad {
  using Acc = T;
  using Vec = Vectorized<T>;
  static constexpr int64_t kWidth = Vec::size();
  static Vec full(const T* p) { return Vec::loadu(p); }
  static Vec partial(const T* p, int64_t n) { return Vec::loadu(p, n); }
};

template <typename T>
struct WidenedVecLoad {
  using Acc = float;
  using Vec = Vectorized<float>;
  static constexpr int64_t kWidth = Vec::size();
  static Vec full(const T* p) {
    Vec v;
    if constexpr (std::is_same_v<T, c10::BFloat16>) {
      at::vec::load_fp32_from_bf16(p, v);
    } else {
      at::vec::load_fp32_from_fp16(p, v);
    }
    return v;
  }
  static Vec partial(const T* p, int64_t n) {
    T padded[kWidth] = {};  // zeros past the end
    std::memcpy(padded, p, n * sizeof(T));
    return full(padded);
  }
};
template <>
struct VecLoad<c10::BFloat16> : WidenedVecLoad<c10::BFloat16> {};
template <>
struct VecLoad<c10::Half> : WidenedVecLoad<c10::Half> {};

// ---- Pairwise combination ------------------------------------------------------------
// Items pushed in order are summed as a balanced binary tree (a binary counter: the
// k-th push merges as many times as k has trailing ones), so that the error of a sum of
// m items grows with log2(m). V: an accumulator vector or scalar. The levels are raw
// bytes: Vectorized's constructor zeroes, and zeroing 64 levels (4 KiB) on every call
// cost more than summing a 4096-element row.
template <typename V>
class PairwiseSum {
 public:
  void push(V v) {
    for (int64_t c = count_; c & 1; c >>= 1) v = level(--depth_) + v;
    set_level(depth_++, v);
    ++count_;
  }
  V total() const {  // at least one push
    V s = level(depth_ - 1);
    for (int d = depth_ - 2; d >= 0; --d) s = level(d) + s;
    return s;
  }

 private:
  static constexpr int kMaxDepth = 64;  // 2^64 items
  V level(int d) const {
    V v;
    std::memcpy(&v, bytes_ + d * sizeof(V), sizeof(V));
    return v;
  }
  void set_level(int d, const V& v) { std::memcpy(bytes_ + d * sizeof(V), &v, sizeof(V)); }

  alignas(64) unsigned char bytes_[kMaxDepth * sizeof(V)];
  int depth_ = 0;
  int64_t count_ = 0;
};

template <typename V>
V tree_sum(const V (&acc)[kAccumulators]) {
  static_assert(kAccumulators == 8);
  return ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]));
}

// The lanes of v summed pairwise, in combine_t.
template <typename A>
combine_t<A> horizontal_sum(const Vectorized<A>& v) {
  constexpr int64_t kWidth = Vectorized<A>::size();
  alignas(64) A stored[kWidth];
  v.store(stored);
  combine_t<A> lanes[kWidth];
  for (int64_t j = 0; j < kWidth; ++j) lanes[j] = stored[j];
  for (int64_t half = kWidth / 2; half >= 1; half /= 2) {
    for (int64_t j = 0; j < half; ++j) lanes[j] = lanes[j] + lanes[j + half];
  }
  return lanes[0];
}

// ---- One row: n elements, contiguous or strided --------------------------------------

// n contiguous floats: leaves of kAccumulators x kLeafRounds vectors, summed pairwise.
template <typename T>
combine_t<typename VecLoad<T>::Acc> contiguous_float_sum(const T* x, int64_t n) {
  using L = VecLoad<T>;
  using V = typename L::Vec;
  constexpr int64_t W = L::kWidth;
  constexpr int64_t kLeaf = kAccumulators * kLeafRounds * W;
  PairwiseSum<V> leaves;
  int64_t i = 0;
  for (; i + kLeaf <= n; i += kLeaf) {
    const T* p = x + i;
    V acc[kAccumulators];
    for (int k = 0; k < kAccumulators; ++k) acc[k] = L::full(p + k * W);
    for (int r = 1; r < kLeafRounds; ++r) {
      for (int k = 0; k < kAccumulators; ++k) acc[k] = acc[k] + L::full(p + (r * kAccumulators + k) * W);
    }
    leaves.push(tree_sum(acc));
  }
  if (i < n) {  // the last, partial leaf: whole vectors round the accumulators, then the rest
    V acc[kAccumulators];
    for (int k = 0; k < kAccumulators; ++k) acc[k] = V(typename L::Acc(0));
    int k = 0;
    for (; i + W <= n; i += W, k = (k + 1) % kAccumulators) acc[k] = acc[k] + L::full(x + i);
    if (i < n) acc[k] = acc[k] + L::partial(x + i, n - i);
    leaves.push(tree_sum(acc));
  }
  return horizontal_sum(leaves.total());
}

// n floats `stride` apart: the same cascade on scalars (no vector loads to be had).
template <typename T>
combine_t<acc_t<T>> strided_float_sum(const T* x, int64_t n, int64_t stride) {
  using A = acc_t<T>;
  constexpr int64_t kLeaf = kAccumulators * kLeafRounds;
  PairwiseSum<A> leaves;
  int64_t i = 0;
  for (; i < n; i += kLeaf) {
    A acc[kAccumulators] = {};
    const int64_t m = std::min(kLeaf, n - i);
    for (int64_t j = 0; j < m; ++j) {
      acc[j % kAccumulators] = acc[j % kAccumulators] + static_cast<A>(x[(i + j) * stride]);
    }
    leaves.push(tree_sum(acc));
  }
  return leaves.total();
}

// Integers add exactly, so only speed matters. 8- and 16-bit values are added in 32-bit
// lanes, which cannot overflow within a block (2^12 values a lane, each below 2^16 in
// magnitude), then widened: twice the lanes per vector of 64-bit ones. The total wraps
// modulo 2^64, as torch.sum's int64 result does.
template <typename T>
acc_t<T> integer_sum(const T* x, int64_t n, int64_t stride) {
  acc_t<T> total = 0;
  if (stride != 1) {
    for (int64_t i = 0; i < n; ++i) total += static_cast<acc_t<T>>(static_cast<int64_t>(x[i * stride]));
    return total;
  }
  if constexpr (sizeof(T) <= 2) {
    constexpr int kLanes = 16;
    constexpr int64_t kBlock = kLanes << 12;
    for (int64_t start = 0; start < n; start += kBlock) {
      const int64_t m = std::min(kBlock, n - start);
      const T* p = x + start;
      int32_t lane[kLanes] = {};
      int64_t i = 0;
      for (; i + kLanes <= m; i += kLanes) {
        for (int j = 0; j < kLanes; ++j) lane[j] += static_cast<int32_t>(p[i + j]);
      }
      for (; i < m; ++i) lane[0] += static_cast<int32_t>(p[i]);
      for (int j = 0; j < kLanes; ++j) total += static_cast<acc_t<T>>(static_cast<int64_t>(lane[j]));
    }
  } else {
    constexpr int kLanes = 8;
    acc_t<T> lane[kLanes] = {};
    int64_t i = 0;
    for (; i + kLanes <= n; i += kLanes) {
      for (int j = 0; j < kLanes; ++j) lane[j] += static_cast<acc_t<T>>(static_cast<int64_t>(x[i + j]));
    }
    for (; i < n; ++i) total += static_cast<acc_t<T>>(static_cast<int64_t>(x[i]));
    for (int j = 0; j < kLanes; ++j) total += lane[j];
  }
  return total;
}

template <typename T>
combine_t<acc_t<T>> row_sum(const T* x, int64_t n, int64_t stride) {
  if constexpr (std::is_integral_v<T>) {
    return integer_sum(x, n, stride);
  } else {
    return stride == 1 ? contiguous_float_sum(x, n) : strided_float_sum(x, n, stride);
  }
}

// Partial sums of `count` items, p[0], p[step], ..., combined in a fixed order.
template <typename A>
A combine(const A* p, int64_t count, int64_t step) {
  if constexpr (std::is_integral_v<A>) {
    A total = 0;
    for (int64_t i = 0; i < count; ++i) total += p[i * step];
    return total;
  } else {
    PairwiseSum<A> sum;
    for (int64_t i = 0; i < count; ++i) sum.push(p[i * step]);
    return sum.total();
  }
}

// ---- Rows pass -----------------------------------------------------------------------
// A task sums one chunk of one row (a whole row when it is at most kRowChunk long). Rows
// of several chunks write a partial sum a chunk, combined pairwise per row.
template <typename T, typename Out>
void rows_pass(const T* x, const ReductionPass& pass, Out* y) {
  using C = combine_t<acc_t<T>>;
  const int64_t rows = pass.outer_size, length = pass.length, stride = pass.reduced_stride;
  const int64_t chunks = ceil_div(length, kRowChunk);
  auto chunk_sum = [&](int64_t row, int64_t chunk) {
    const int64_t start = chunk * kRowChunk;
    return row_sum(x + pass.outer.offset(row) + start * stride, std::min(kRowChunk, length - start), stride);
  };
  if (chunks == 1) {
    for_each_task(rows, length, [&](int64_t row) { y[row] = static_cast<Out>(chunk_sum(row, 0)); });
    return;
  }
  std::unique_ptr<C[]> partial(new C[rows * chunks]);
  for_each_task(rows * chunks, kRowChunk,
                [&](int64_t task) { partial[task] = chunk_sum(task / chunks, task % chunks); });
  for_each_task(rows, chunks, [&](int64_t row) {
    y[row] = static_cast<Out>(combine(partial.get() + row * chunks, chunks, 1));
  });
}

// ---- Columns pass --------------------------------------------------------------------
// One tile: `rows` rows (row_stride apart) of `width` adjacent columns into tile[0, width).
// Rows are taken kBlockRows at a time: a block's sums stay in registers, kColumnVectors
// vectors of columns side by side (independent adds), and are then added into the tile.
// Every row read is a contiguous run of the tile's width, which the prefetchers follow;
// walking a few vectors of columns down all the rows instead (ATen's order) touches a new
// page a row.
template <typename T>
void float_column_tile(const T* x, int64_t row_stride, int64_t rows, int64_t width,
                       typename VecLoad<T>::Acc* tile) {
  using L = VecLoad<T>;
  using V = typename L::Vec;
  constexpr int64_t W = L::kWidth;
  constexpr int64_t kGroup = kColumnVectors * W;
  for (int64_t block = 0; block < rows; block += kBlockRows) {
    const int64_t block_rows = std::min(kBlockRows, rows - block);
    const T* b = x + block * row_stride;
    auto add_to_tile = [&](int64_t c, const V& s) {
      (block == 0 ? s : V::loadu(tile + c) + s).store(tile + c);
    };
    int64_t c = 0;
    for (; c + kGroup <= width; c += kGroup) {
      V s[kColumnVectors];
      for (int v = 0; v < kColumnVectors; ++v) s[v] = L::full(b + c + v * W);
      for (int64_t r = 1; r < block_rows; ++r) {
        for (int v = 0; v < kColumnVectors; ++v) s[v] = s[v] + L::full(b + r * row_stride + c + v * W);
      }
      for (int v = 0; v < kColumnVectors; ++v) add_to_tile(c + v * W, s[v]);
    }
    for (; c < width; c += W) {  // the last vectors, the very last one partial
      const int64_t n = std::min(W, width - c);
      auto load = [&](const T* p) { return n == W ? L::full(p) : L::partial(p, n); };
      V s = load(b + c);
      for (int64_t r = 1; r < block_rows; ++r) s = s + load(b + r * row_stride + c);
      add_to_tile(c, s);  // the tile has room for a whole last vector
    }
  }
}

// The same sums with scalar loads, for columns that are not adjacent (inner_stride > 1):
// each column gets the same adds in the same order as in float_column_tile.
template <typename T>
void strided_float_column_tile(const T* x, int64_t row_stride, int64_t col_stride, int64_t rows,
                               int64_t width, acc_t<T>* tile, acc_t<T>* block_sums) {
  using A = acc_t<T>;
  for (int64_t block = 0; block < rows; block += kBlockRows) {
    const int64_t block_rows = std::min(kBlockRows, rows - block);
    for (int64_t r = 0; r < block_rows; ++r) {
      const T* row = x + (block + r) * row_stride;
      for (int64_t c = 0; c < width; ++c) {
        const A v = static_cast<A>(row[c * col_stride]);
        block_sums[c] = r == 0 ? v : block_sums[c] + v;
      }
    }
    for (int64_t c = 0; c < width; ++c) tile[c] = block == 0 ? block_sums[c] : tile[c] + block_sums[c];
  }
}

// Integers: exact, so plain adds row after row (the compiler vectorizes the column loop).
template <typename T>
void integer_column_tile(const T* x, int64_t row_stride, int64_t col_stride, int64_t rows,
                         int64_t width, acc_t<T>* tile) {
  std::fill(tile, tile + width, acc_t<T>{0});
  for (int64_t r = 0; r < rows; ++r) {
    const T* row = x + r * row_stride;
    if (col_stride == 1) {
      for (int64_t c = 0; c < width; ++c) tile[c] += static_cast<acc_t<T>>(static_cast<int64_t>(row[c]));
    } else {
      for (int64_t c = 0; c < width; ++c) {
        tile[c] += static_cast<acc_t<T>>(static_cast<int64_t>(row[c * col_stride]));
      }
    }
  }
}

template <typename T>
void column_tile(const T* x, int64_t row_stride, int64_t col_stride, int64_t rows, int64_t width,
                 acc_t<T>* tile) {
  if constexpr (std::is_integral_v<T>) {
    integer_column_tile(x, row_stride, col_stride, rows, width, tile);
  } else if (col_stride == 1) {
    float_column_tile(x, row_stride, rows, width, tile);
  } else {
    alignas(64) acc_t<T> block_sums[kTileWidth<acc_t<T>>];
    strided_float_column_tile(x, row_stride, col_stride, rows, width, tile, block_sums);
  }
}

// A task sums one chunk of kChunkRows rows of one tile of columns under one outer index.
// A pass of one chunk writes the outputs; of several, a partial sum per chunk and output,
// then combined pairwise over chunks, a block of outputs at a time.
template <typename T, typename Out>
void columns_pass(const T* x, const ReductionPass& pass, Out* y) {
  using A = acc_t<T>;
  using C = combine_t<A>;
  const int64_t outer = pass.outer_size, inner = pass.inner, length = pass.length;
  const int64_t chunks = ceil_div(length, kChunkRows);
  const int64_t tiles = ceil_div(inner, kTileWidth<A>);
  const int64_t outputs = outer * inner;
  std::unique_ptr<C[]> partial(chunks > 1 ? new C[chunks * outputs] : nullptr);

  const int64_t task_elements = std::min(length, kChunkRows) * std::min(inner, kTileWidth<A>);
  for_each_task(chunks * outer * tiles, task_elements, [&](int64_t task) {
    const int64_t tile_index = task % tiles;
    const int64_t o = task / tiles % outer;
    const int64_t chunk = task / tiles / outer;
    const int64_t c0 = tile_index * kTileWidth<A>, width = std::min(kTileWidth<A>, inner - c0);
    const int64_t r0 = chunk * kChunkRows, rows = std::min(kChunkRows, length - r0);
    const T* base = x + pass.outer.offset(o) + r0 * pass.reduced_stride + c0 * pass.inner_stride;

    alignas(64) A tile[kTileWidth<A> + kTilePad<A>];
    column_tile(base, pass.reduced_stride, pass.inner_stride, rows, width, tile);
    const int64_t first_output = o * inner + c0;
    if (chunks == 1) {
      for (int64_t c = 0; c < width; ++c) y[first_output + c] = static_cast<Out>(tile[c]);
    } else {
      C* into = partial.get() + chunk * outputs + first_output;
      for (int64_t c = 0; c < width; ++c) into[c] = tile[c];
    }
  });
  if (chunks == 1) return;

  // partial[chunk][output]: a pairwise tree over chunks, in place (chunk c takes in chunk
  // c + step), vector adds across outputs.
  constexpr int64_t kOutputBlock = 256;
  for_each_task(ceil_div(outputs, kOutputBlock), chunks * kOutputBlock, [&](int64_t block) {
    const int64_t j0 = block * kOutputBlock, count = std::min(kOutputBlock, outputs - j0);
    for (int64_t step = 1; step < chunks; step *= 2) {
      for (int64_t chunk = 0; chunk + step < chunks; chunk += 2 * step) {
        C* into = partial.get() + chunk * outputs + j0;
        const C* from = partial.get() + (chunk + step) * outputs + j0;
        for (int64_t j = 0; j < count; ++j) into[j] = into[j] + from[j];
      }
    }
    for (int64_t j = 0; j < count; ++j) y[j0 + j] = static_cast<Out>(partial[j0 + j]);
  });
}

template <typename T, typename Out>
void run_pass(const T* x, const ReductionPass& pass, Out* y) {
  if (pass.is_rows()) {
    rows_pass(x, pass, y);
  } else {
    columns_pass(x, pass, y);
  }
}

// What a pass that is not the last writes for the next: combine_t as a tensor dtype
// (double for every float type, int64 for integers and bool).
template <typename T>
using carry_t = std::conditional_t<std::is_integral_v<acc_t<T>>, int64_t, combine_t<acc_t<T>>>;

// The passes of plan in order, each after the first reading the last one's outputs.
inline void launch(const SumPlan& plan, at::Tensor& out) {
  WARPREDUCE_DISPATCH(plan.input.scalar_type(), "warpreduce_sum_cpu", [&] {
    using T = scalar_t;
    using Carry = carry_t<T>;
    const T* x = plan.input.const_data_ptr<T>();
    out_t<T>* y = out.mutable_data_ptr<out_t<T>>();
    const auto& passes = plan.passes;
    if (passes.size() == 1) return run_pass(x, passes[0], y);
    const at::TensorOptions carry_options = out.options().dtype(c10::CppTypeToScalarType<Carry>::value);
    at::Tensor carried = at::empty({passes[0].outputs()}, carry_options);
    run_pass(x, passes[0], carried.mutable_data_ptr<Carry>());
    for (size_t k = 1; k + 1 < passes.size(); ++k) {
      at::Tensor next = at::empty({passes[k].outputs()}, carry_options);
      run_pass(carried.const_data_ptr<Carry>(), passes[k], next.mutable_data_ptr<Carry>());
      carried = next;
    }
    run_pass(carried.const_data_ptr<Carry>(), passes.back(), y);
  });
}

}  // namespace warpreduce::cpu::CPU_CAPABILITY
