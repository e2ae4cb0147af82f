// The reduction geometry: how the elements of one sum lie in memory, in the words every
// kernel of the project uses. No ATen here (sizes and strides in, plain structs out), so
// the CPU and CUDA paths and the device code share it. Lists are small vectors: a call
// of the op plans afresh, and heap allocations showed in its host time.
//
// A sum over some dims of a strided tensor is described the way its memory is laid out:
// the dims in memory order (largest stride first), size-1 dims dropped, and neighbours
// that are one dim in memory merged. What is left is reduced in passes of the canonical
// form
//
//     [outer..., reduced, inner]
//
// - `reduced`: one dim (size `length`, any stride) that the pass sums over;
// - `inner`: the kept dim below it, or none (inner == 1). With none, the reduced dim is
//   the innermost one: a ROW reduction (each output sums a row, contiguous when the
//   reduced stride is 1). With one, each output is a COLUMN: the outputs are adjacent in
//   memory (inner stride 1) and the reduced dim is strided above them. (The inner dim
//   may also hold short reduced dims left for a later pass: plan_pass says when);
// - `outer`: every other dim, in memory order; they give each output's offset (up to
//   kMaxOuterDims dims that do not merge: sliced or expanded inputs, reduced dims left
//   for a later pass).
//
// Output o of a pass is outer index o / inner, inner index o % inner: the outputs come
// in the kept dims' memory order. A tensor whose reduced dims merge into one (the usual
// case: x.sum(-1), x.sum(0), a full sum of a dense tensor, transposes and permutations
// of those) takes one pass. Reduced dims that stay apart (x.sum((0, 2)) of a contiguous
// 3-D tensor, full sums of sliced tensors) take one pass each, innermost first (but for
// short innermost ones under a longer one, plan_pass); each pass writes the kept dims and
// the reduced dims still to come into a contiguous scratch tensor, which the next pass
// reads.
#pragma once

#include <c10/util/ArrayRef.h>
#include <c10/util/SmallVector.h>

#include <array>
#include <cstdint>

#if defined(__CUDACC__)
#define WARPREDUCE_HOST_DEVICE __host__ __device__
#else
#define WARPREDUCE_HOST_DEVICE
#endif

namespace warpreduce {

// A dim of the input as the geometry sees it.
struct LayoutDim {
  int64_t size;
  int64_t stride;  // in elements; 0 for an expanded (broadcast) dim
  bool reduced;
};

using Layout = c10::SmallVector<LayoutDim, 8>;
using DimOrder = c10::SmallVector<int, 8>;

// The dims d of (sizes, strides) with size > 1 in memory order: outermost first, stride-0
// dims (which cost no memory traffic wherever they go) first, then by decreasing stride,
// ties in the tensor's own order.
DimOrder memory_order(c10::ArrayRef<int64_t> sizes, c10::ArrayRef<int64_t> strides);

// The dims of `order` (memory_order's), with neighbours merged where they are one dim
// in memory, but for dim `unmerged_above` (if any) and the dim below it in memory.
// reduced[d]: dim d is summed over. Sizes must all be > 0.
Layout memory_layout(c10::ArrayRef<int64_t> sizes, c10::ArrayRef<int64_t> strides,
                     const DimOrder& order, uint64_t reduced, int unmerged_above = -1);

constexpr int kMaxOuterDims = 4;

// The outer dims of a pass: the input offset of outer index o, by its digits. One dim
// (the common case) needs no division.
struct OuterDims {
  int ndim = 0;
  std::array<int64_t, kMaxOuterDims> sizes{};  // innermost last
  std::array<int64_t, kMaxOuterDims> strides{};

  WARPREDUCE_HOST_DEVICE int64_t offset(int64_t o) const {
    if (ndim <= 1) return ndim == 0 ? 0 : o * strides[0];
    int64_t off = 0;
    // Over every slot with constant indices, so that device code keeps the arrays in
    // registers (a loop to ndim put them in local memory).
#if defined(__CUDACC__)
#pragma unroll
#endif
    for (int d = kMaxOuterDims - 1; d > 0; --d) {
      if (d < ndim) {
        off += (o % sizes[d]) * strides[d];
        o /= sizes[d];
      }
    }
    return off + o * strides[0];
  }

  // Adds a dim below the others, merged with the innermost where the two are one dim
  // (its stride is the new one's extent); false where a new dim does not fit.
  bool append(int64_t size, int64_t stride) {
    if (ndim > 0 && strides[ndim - 1] == size * stride) {
      sizes[ndim - 1] *= size;
      strides[ndim - 1] = stride;
      return true;
    }
    if (ndim == kMaxOuterDims) return false;
    sizes[ndim] = size;
    strides[ndim] = stride;
    ++ndim;
    return true;
  }
};

// One pass of [outer..., reduced, inner]: output (o, i) = sum over r < length of
// x[outer.offset(o) + r * reduced_stride + i * inner_stride].
struct ReductionPass {
  OuterDims outer;
  int64_t outer_size = 1;  // product of outer.sizes
  int64_t length = 1;      // elements each output sums
  int64_t reduced_stride = 1;
  int64_t inner = 1;  // 1: a row reduction
  int64_t inner_stride = 1;
  // Each output is its sum times this (kernel="auto" only, on the last pass): the product
  // of the reduced dims of stride 0, which the plan leaves out (an expanded dim repeats
  // the same elements: reading them once a repeat ran at 0.38x torch.sum, H200).
  int64_t repeat = 1;
  // Gaps (CUDA auto only, plan_pass's Gaps), read (they share the data's DRAM sectors)
  // and left out. A gapped row: the row is the contiguous span of `length` elements, of
  // which element k is summed when k % period < width. A gapped inner dim (columns): the
  // inner dim is the contiguous span of `inner` elements (inner_stride 1), of which
  // element i is an output when i % period < width, output (i / period) * width + i %
  // period of the outer slice. 1 and 1: every element.
  int64_t period = 1;
  int64_t width = 1;
  // A gapped inner dim of slabs that a tile holds whole (Gaps::tiled_gaps): the slab
  // tiles read it, gaps and all, and sum its kept positions alone.
  bool tiled_gaps = false;
  // Elements that may be read past the pass's last one (the rest of the input's storage:
  // plan.cpp sets it on a gapped or stepped first pass, the only readers), so that a
  // gapped inner dim is read in whole vectors where its span ends within one
  // (run_pass.cuh), and a stepped one as packed rows (cpu/sum_kernels.h).
  int64_t slack = 0;
  // The result holds the outputs of consecutive outer indices (one inner index) next to
  // each other, and those of consecutive inner indices apart (plan.cpp sets it on the last
  // pass of a CUDA auto sum that writes a permuted layout's result in place: x.sum(1) of
  // x = t.permute(2, 1, 0)), so that columns can store along the outer dim.
  bool outer_outputs_adjacent = false;
  // Outputs that the result holds side by side lie this many outputs apart in the pass's
  // order (plan.cpp sets it on the last pass of a CUDA auto sum that writes a permuted
  // layout's result in place; 1: side by side, or not set), so that columns can store
  // across (Launch::store_across).
  int64_t result_apart = 1;

  // Slices (CUDA auto columns only: plan_pass's `slices`): a reduced dim among the outer
  // dims that the same lanes add, `slices` of them, slice_stride apart (above the rows of
  // the reduced dim: slice_stride >= length * reduced_stride), so that two reduced dims
  // with kept dims between them take one pass, not two (float32 38 x 2 x 54191 x 2 x 4
  // over dims (1, 3): the first of two passes wrote its partial sums as doubles, as many
  // bytes as it read: 0.40x torch.sum on an H200). Row r of an output's rows() is row r %
  // length of slice r / length.
  int64_t slices = 1;
  int64_t slice_stride = 0;

  bool is_rows() const { return inner == 1; }
  int64_t rows() const { return length * slices; }
  bool gapped() const { return period > 1; }
  // The outputs an outer index holds: `inner`, less the gaps of a gapped inner dim.
  int64_t kept_inner() const {
    if (is_rows() || !gapped()) return inner;
    return inner / period * width + (inner % period < width ? inner % period : width);
  }
  // Rows of contiguous elements, evenly spaced (x.sum(-1), a full sum of a dense tensor).
  bool even_rows() const {
    return is_rows() && reduced_stride == 1 && outer.ndim <= 1 && !gapped();
  }
  int64_t outputs() const { return outer_size * kept_inner(); }
  // The span a gapped inner dim is read as in vectors of `vec` elements: padded to whole
  // vectors where the storage goes on past it (slack: the span of x[..., ::2] ends one
  // element short of a vector), else as it is. run_pass.cuh reads it so, and the launch
  // model decides on it (launch_model.cpp, columns_launch).
  int64_t read_span(int64_t vec) const {
    const int64_t padded = (inner + vec - 1) / vec * vec;
    return gapped() && padded - inner <= slack ? padded : inner;
  }
  // Rows one after the other: row r starts at x + r * length.
  bool packed_rows() const {
    return is_rows() && reduced_stride == 1 && !gapped() &&
           (outer.ndim == 0 || (outer.ndim == 1 && outer.strides[0] == length));
  }
};

// How a reduction of `layout` (memory_layout's result, at least one reduced dim) runs.
struct PassPlan {
  ReductionPass pass;  // the first pass
  // The layout of that pass's outputs as a contiguous tensor (the kept dims and the
  // reduced dims still to come, memory order): empty of reduced dims after the last pass.
  Layout rest;
  bool last() const;
};

// Gaps, where a caller's kernels read them (CUDA auto): gaps of at most max_*_gap elements
// between the elements, read with 16-byte vectors and left out (ReductionPass::period).
// Gaps under a 32-byte sector cost no DRAM traffic: every sector of the span holds
// elements.
// - Gapped rows: a row reduction whose elements leave such gaps, a strided innermost dim
//   (x[..., ::2]) or short rows a little apart under another reduced dim (x[..., :5] of
//   rows of 8, summed over both), when the span is at least min_row_span elements; rows
//   a gap apart also where the gaps are wider but few of the span's sectors are empty
//   (min_row_sector_percent).
// - Gapped inner dims (columns): the kept dims under the reduced dim (or the block of a
//   short reduced dim second) that are one dim in memory but for such gaps at the bottom,
//   a strided innermost dim (x[..., ::2]) or short rows a little apart (x[..., :5] of rows
//   of 8), as one span of adjacent columns, when an output's elements span more than
//   min_column_slab elements (shorter slabs go to tiles of whole slabs) and the span is
//   at least min_column_span elements (wide enough for vectors). With tiled_gaps, also
//   the short rows a little apart of shorter slabs, however narrow the span: the tiles of
//   whole slabs then read one slab an outer index, not a run of short rows each.
// - Padded inner dims (columns): the innermost dim alone, kept and contiguous, under the
//   reduced dim, not a whole number of vectors, where each row leaves a gap after it
//   (x[..., :85] of rows of 88): read as whole vectors of the padded span, the padding
//   from the gap (and past the last row, from the storage's `slack`), under slabs as
//   long as gapped inner dims', up to max_padded_width elements wide (wider rows' partial
//   vectors are rare). Rows aligned alike, as for a strided innermost dim.
struct Gaps {
  int64_t max_row_gap = 0;  // elements; 0: no gapped rows
  int64_t min_row_span = 0;
  // Rows a gap apart whose span is shorter are gapped too where a row holds at most this
  // many bytes (of element_bytes each): summed apart, their first pass would write a
  // partial sum for every row. 0: none.
  int64_t max_short_row_bytes = 0;
  // Rows a gap apart (not a strided dim alone) with wider gaps too, periods of up to
  // max_wide_row_period bytes, where at least min_row_sector_percent of the span's 32-byte
  // sectors hold elements (of element_bytes each) at the data's worst alignment: the
  // span's reads then cost at most 100 / min_row_sector_percent times the sectors that the
  // elements alone touch, where the rows' other plan is two passes. 0: none.
  int64_t min_row_sector_percent = 0;
  int64_t max_wide_row_period = 0;
  int64_t element_bytes = 0;
  int64_t max_column_gap = 0;  // elements; 0: no gapped inner dims
  int64_t min_column_slab = 0;
  int64_t min_column_span = 0;
  bool tiled_gaps = false;
  // A strided innermost dim alone (x[..., ::2]) is a gapped inner dim only where the
  // rows start alike on a 16-byte vector of `lanes` elements: the data at such an address
  // (data_aligned), every other dim's stride a multiple of lanes.
  int64_t lanes = 0;
  bool data_aligned = false;
  int64_t max_padded_width = 0;  // elements; 0: no padded inner dims
  int64_t slack = 0;  // elements of storage past the data's last one
};

// The first pass of a sum of `layout`: over its innermost reduced dim, except where the
// reduced dims under a longer reduced dim are short (16 elements in all at most) and lie
// with kept dims in one block of memory, [..., R_big, K, R_small] or [..., R_big, K,
// R_small, K2]: then over R_big, with the block as its inner dim; and, with `gaps`, over
// the innermost reduced dim as a gapped row, with the reduced dim above it where its rows
// lie a small gap apart, or over columns whose inner dim is gapped. False when more than
// kMaxOuterDims dims would be outer. Such a tensor is copied into kept-dims-first order,
// which always fits (one kept dim, one reduced dim).
// With `slices`, a columns pass of whole aligned vectors (Gaps::lanes and data_aligned
// say so: set with gapped inner dims) also takes the innermost reduced dim among its
// outer dims as ReductionPass::slices, where that lies above its rows.
bool plan_pass(const Layout& layout, PassPlan* plan, const Gaps& gaps = {}, bool slices = false);

}  // namespace warpreduce
