#include "plan.h"

#include <ATen/ops/add.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/full.h>
#include <ATen/ops/mul.h>
#include <ATen/ops/scalar_tensor.h>
#include <ATen/ops/view_as_complex.h>
#include <ATen/ops/view_as_real.h>
#include <ATen/ops/zeros.h>
#include <c10/util/Exception.h>
#include <c10/util/accumulate.h>

#include <algorithm>
#include <numeric>
#include <sstream>

#include "exact.h"
#include "launch_model.h"

namespace warpreduce {
namespace {

struct NamedDtype {
  at::ScalarType type;
  const char* name;  // as torch names it
};
#define WARPREDUCE_NAMED_DTYPE(type, name, ...) NamedDtype{type, name},
constexpr NamedDtype kSupportedDtypes[] = {WARPREDUCE_DTYPES(WARPREDUCE_NAMED_DTYPE, )};
#undef WARPREDUCE_NAMED_DTYPE

void check_dtype(at::ScalarType t) {
  for (const auto& supported : kSupportedDtypes) {
    if (supported.type == t) return;
  }
  std::ostringstream names;
  for (const auto& supported : kSupportedDtypes) {
    names << (&supported == kSupportedDtypes ? "" : ", ") << supported.name;
  }
  TORCH_CHECK_NOT_IMPLEMENTED(false, "warpreduce.sum does not support dtype ", t,
                              "; supported: ", names.str());
}

const Kernel* find_kernel(c10::ArrayRef<Kernel> kernels, std::string_view name) {
  for (const Kernel& k : kernels) {
    if (k.name == name) return &k;
  }
  return nullptr;
}

c10::ArrayRef<Kernel> kernels_of(c10::DeviceType device) {
  switch (device) {
    case c10::DeviceType::CPU:
      return cpu_kernels();
    case c10::DeviceType::CUDA:
      return cuda_kernels();
    default:
      TORCH_CHECK_VALUE(false, "warpreduce.sum runs on cpu and cuda tensors, not ",
                        c10::DeviceTypeName(device, /*lower_case=*/true));
  }
}

// The passes that sum `layout` (memory_layout's), or false if one does not fit the
// geometry.
bool plan_passes(Layout layout, c10::SmallVector<ReductionPass, 2>* passes, const Gaps& gaps,
                 bool slices) {
  passes->clear();
  for (;;) {
    PassPlan plan;
    if (!plan_pass(layout, &plan, gaps, slices)) return false;
    passes->push_back(plan.pass);
    if (plan.last()) return true;
    layout = std::move(plan.rest);
  }
}

}  // namespace

#ifndef WARPREDUCE_WITH_CUDA
c10::ArrayRef<Kernel> cuda_kernels() { return {}; }
#endif

int64_t pass_element_bytes(at::ScalarType t, size_t k) {
  if (k == 0) return static_cast<int64_t>(c10::elementSize(t));
  return t == at::kHalf || t == at::kBFloat16 ? 4 : 8;
}

std::vector<std::string> supported_dtypes() {
  std::vector<std::string> names;
  for (const auto& supported : kSupportedDtypes) names.emplace_back(supported.name);
  return names;
}

std::string_view role_name(KernelRole role) {
  // In KernelRole's order.
  static constexpr std::string_view kNames[] = {"stage", "fast", "exact", "baseline"};
  return kNames[static_cast<int>(role)];
}

std::vector<std::string> kernel_names(c10::DeviceType device, std::optional<KernelRole> role) {
  std::vector<std::string> names;
  for (const Kernel& k : kernels_of(device)) {
    if (!role || k.role == *role) names.emplace_back(k.name);
  }
  return names;
}

at::ScalarType natural_dtype(at::ScalarType t) {
  return at::isIntegralType(t, /*includeBool=*/true) ? at::kLong : t;
}

namespace {

std::string names_of(c10::ArrayRef<Kernel> kernels) {
  if (kernels.empty()) return "none in this build";
  std::ostringstream names;
  for (size_t i = 0; i < kernels.size(); ++i) names << (i ? ", " : "") << kernels[i].name;
  return names.str();
}

// Whether place_outputs may set an order (the kernels then write the result in place):
// CUDA auto (cuda_auto), kept dims out of order or one broadcast, the natural dtype.
bool may_place_outputs(const SumPlan& plan, bool cuda_auto) {
  const size_t broadcast = plan.broadcast_dims.size();
  return cuda_auto && broadcast <= 1 && !(plan.kept_in_order() && broadcast == 0) &&
         natural_dtype(plan.input.scalar_type()) == plan.out_dtype &&
         plan.outputs < (int64_t{1} << 31);
}

// The broadcast dim's size (1 without one): the one dim where the result's shape and the
// narrowed sum's differ (neither is empty: an empty result needs no kernel).
int64_t result_copies(const SumPlan& plan) {
  return plan.broadcast_dims.empty() ? 1
                                     : c10::multiply_integers(plan.broadcast_shape) /
                                           c10::multiply_integers(plan.out_shape);
}

// A result dim's stride: the product of the sizes of the kept dims after it (reduced dims
// are 1 or absent in the result), and of the copies where the broadcast dim is after it.
int64_t result_stride(const SumPlan& plan, int64_t dim, int64_t copies) {
  int64_t stride = 1;
  for (size_t j = 0; j < plan.kept_dims.size(); ++j) {
    if (plan.kept_dims[j] > dim) stride *= plan.kept_sizes[j];
  }
  if (!plan.broadcast_dims.empty() && plan.broadcast_dims[0] > dim) stride *= copies;
  return stride;
}

// SumPlan::output_order, output_copies and output_copy_stride for a plan whose passes
// are set, where the CUDA auto kernels run it (cuda_auto): the strides of its result
// (broadcast_shape where a kept dim is broadcast, else out_shape), contiguous.
void place_outputs(SumPlan& plan, bool cuda_auto) {
  if (!may_place_outputs(plan, cuda_auto)) return;
  const int64_t copies = result_copies(plan);
  OuterDims order;
  for (size_t k = 0; k < plan.kept_dims.size(); ++k) {
    if (!order.append(plan.kept_sizes[k], result_stride(plan, plan.kept_dims[k], copies))) return;
  }
  if (order.ndim == 0) {  // one output (copied out along the broadcast dim)
    order.ndim = 1;
    order.sizes[0] = order.strides[0] = 1;
  }
  plan.output_order = order;
  if (!plan.broadcast_dims.empty()) {
    plan.output_copies = copies;
    plan.output_copy_stride = result_stride(plan, plan.broadcast_dims[0], copies);
  }
}

// A plan of one pass of short rows (the rows_short kernel's) that writes its result in
// place, out of the pass's order, its adjacent outputs at least a sector apart: its rows
// taken in the result's order instead, its outer dims reordered by their strides in the
// result (merged again where each is one dim), so that a warp's stores are adjacent,
// where its rows still lie one after another in memory. On an H200 (2026-11-29, seed
// 319's float32 254140 x 2 x 121 x 1 permuted over dim 1, a result with the 121
// innermost: each 4-byte output 254140 outputs from the next), 1016.5 us in the pass's
// order (0.42x torch.sum), 228.8 in the result's (1.89x).
// WARPREDUCE_NO_RESULT_ORDER_ROWS=1 leaves them in the pass's order: a knob for
// measuring.
void rows_in_result_order(SumPlan& plan) {
  static const bool no_result_order_rows = knob_is_set("WARPREDUCE_NO_RESULT_ORDER_ROWS");
  if (no_result_order_rows || plan.copied || plan.passes.size() != 1 || plan.output_order.ndim == 0)
    return;
  ReductionPass& pass = plan.passes[0];
  if (!pass.is_rows() || pass.gapped() || pass.outer_size < 2 ||
      pass.length > LaunchTuning::kShortRowMaxLength) {
    return;
  }
  // The kept dims in memory order (the pass's outer dims, unmerged), each with its
  // stride in the input and in the result: the output order, unmerged.
  struct Kept {
    int64_t size, stride, result_stride;
  };
  c10::SmallVector<Kept, 8> kept;
  const int64_t copies = result_copies(plan);
  for (size_t k = 0; k < plan.kept_dims.size(); ++k) {
    const int64_t dim = plan.kept_dims[k];
    kept.push_back({plan.kept_sizes[k], plan.input.stride(dim), result_stride(plan, dim, copies)});
  }
  // Adjacent outputs of the pass (the innermost kept dim in memory) a sector apart or more.
  const int64_t out_bytes = static_cast<int64_t>(c10::elementSize(plan.out_dtype));
  if (kept.empty() || kept.back().result_stride * out_bytes < 32) return;
  const Kept innermost = kept.back();  // in memory
  std::stable_sort(kept.begin(), kept.end(),
                   [](const Kept& a, const Kept& b) { return a.result_stride > b.result_stride; });
  // Both in that order, each merged where it is one dim: the rows in memory, the outputs
  // in the result (one dim where the result is contiguous: a store without division).
  OuterDims outer, order;
  for (const Kept& k : kept) {
    if (!outer.append(k.size, k.stride) || !order.append(k.size, k.result_stride)) return;
  }
  // Only where the rows that share a sector, adjacent in memory, are taken soon after one
  // another (within kResultOrderMaxRevisit rows: a block's rows of one round, from L1):
  // the 4 rows of 2 floats in a sector above are 121 rows apart so taken. Rows
  // revisited further on (int32 7 x 442548 x 5 permuted (1, 0, 2) over dim 2, seed 317:
  // 442548 rows) would read about as many more bytes as the scattered stores write.
  constexpr int64_t kResultOrderMaxRevisit = 512;  // rows_short's fewest rows a round
  int64_t revisit = 1;  // rows between two adjacent in memory, taken in the result's order
  for (const Kept& k : kept) {
    if (k.result_stride < innermost.result_stride) revisit *= k.size;
  }
  if (pass.reduced_stride != 1 || innermost.stride != pass.length ||
      revisit > kResultOrderMaxRevisit) {
    return;
  }
  pass.outer = outer;
  plan.output_order = order;
}

// ReductionPass::result_apart and outer_outputs_adjacent for the last pass of a plan that
// writes its result in place, from the result's innermost dim in output_order (its digit
// of stride 1): the outputs below it, and whether they are the pass's inner outputs (the
// outer index's innermost digit is the result's innermost dim).
void mark_result_order(SumPlan& plan) {
  ReductionPass& pass = plan.passes.back();
  const OuterDims& order = plan.output_order;
  int64_t apart = 1;
  for (int d = order.ndim - 1; d >= 0; --d) {
    if (order.strides[d] == 1) {
      pass.result_apart = apart;
      pass.outer_outputs_adjacent = !pass.is_rows() && apart == pass.kept_inner();
      return;
    }
    apart *= order.sizes[d];
  }
}

}  // namespace

int64_t exact_digits_width(at::ScalarType dtype) {
  switch (dtype) {
    case at::kHalf:
      return exact::Superaccumulator<c10::Half>::kExported;
    case at::kBFloat16:
      return exact::Superaccumulator<c10::BFloat16>::kExported;
    case at::kFloat:
      return exact::Superaccumulator<float>::kExported;
    case at::kDouble:
      return exact::Superaccumulator<double>::kExported;
    default:
      TORCH_CHECK_VALUE(false, "warpreduce: exact digits are for sums to float16, bfloat16, ",
                        "float32 and float64 (other sums are exact already), not ", dtype);
  }
}

int64_t check_exact_digits(const at::Tensor& digits, at::ScalarType dtype) {
  const int64_t width = exact_digits_width(dtype);
  TORCH_CHECK_VALUE(
      digits.scalar_type() == at::kLong && digits.dim() >= 1 && digits.size(-1) == width,
      "warpreduce._exact_from_digits: expected int64 digits of last dim ", width, " for ", dtype,
      ", got ", digits.scalar_type(), " of shape ", digits.sizes());
  return width;
}

const Kernel* check_args(at::ScalarType self_dtype, std::optional<at::ScalarType> dtype,
                         c10::DeviceType device, std::string_view kernel) {
  // dtype= casts first, whatever the input's dtype (as torch.sum does): what the kernels
  // sum is the dtype after it.
  check_dtype(dtype.value_or(self_dtype));
  // torch.sum sums complex32 on CUDA tensors only.
  TORCH_CHECK_NOT_IMPLEMENTED(
      dtype.value_or(self_dtype) != at::kComplexHalf || device != c10::DeviceType::CPU,
      "warpreduce.sum does not support dtype ComplexHalf on cpu tensors "
      "(torch.sum does not either)");

  const bool on_cpu = device == c10::DeviceType::CPU, on_cuda = device == c10::DeviceType::CUDA;
  if (!on_cpu && !on_cuda) {
    // Fake and meta tensors run no kernel; any name valid on some device passes.
    if (find_kernel(cpu_kernels(), kernel) || find_kernel(cuda_kernels(), kernel)) return nullptr;
    TORCH_CHECK_VALUE(false, "warpreduce.sum: unknown kernel '", kernel,
                      "'; cpu tensors take: ", names_of(cpu_kernels()),
                      "; cuda tensors take: ", names_of(cuda_kernels()));
  }
  const c10::ArrayRef<Kernel> kernels = kernels_of(device);
  const Kernel* found = find_kernel(kernels, kernel);
  if (!found) {
    const c10::ArrayRef<Kernel> other = on_cpu ? cuda_kernels() : cpu_kernels();
    TORCH_CHECK_VALUE(!find_kernel(other, kernel), "warpreduce.sum: kernel '", kernel, "' runs on ",
                      on_cpu ? "cuda" : "cpu", " tensors, not ", on_cpu ? "cpu" : "cuda", " ones; ",
                      on_cpu ? "cpu" : "cuda", " tensors take: ", names_of(kernels));
    TORCH_CHECK_VALUE(false, "warpreduce.sum: unknown kernel '", kernel, "' for ",
                      on_cpu ? "cpu" : "cuda", " tensors; valid names: ", names_of(kernels));
  }
  return found;
}

ReducedDims reduced_dims(int64_t ndim, at::OptionalIntArrayRef dim, bool keepdim) {
  constexpr int64_t kMaxDims = 64;  // torch.sum's limit, and its message
  if (!dim.has_value() || dim->empty()) {
    // torch.sum(x, None, True) refuses tensors of more than 64 dims; a sum of all of them
    // otherwise needs no bit per dim.
    TORCH_CHECK(!(keepdim && !dim.has_value() && ndim > kMaxDims),
                "only tensors with up to 64 dims are supported");
    return ReducedDims(static_cast<size_t>(ndim), true);
  }
  // Every dim wrapped first, so that a dim out of range is an IndexError even when an
  // earlier one repeats, as torch.sum reports it.
  at::DimVector wrapped;
  for (int64_t d : *dim) wrapped.push_back(at::maybe_wrap_dim(d, ndim));
  TORCH_CHECK(ndim <= kMaxDims, "only tensors with up to 64 dims are supported");
  ReducedDims reduced(static_cast<size_t>(std::max<int64_t>(ndim, 1)), false);
  for (int64_t d : wrapped) {
    TORCH_CHECK(!reduced[d], "dim ", d, " appears multiple times in the list of dims");
    reduced[d] = true;
  }
  reduced.resize(ndim);  // a 0-d tensor takes dim 0 or -1 and has no dim to reduce
  return reduced;
}

SumPlan make_plan(const at::Tensor& self, at::OptionalIntArrayRef dim, bool keepdim,
                  std::optional<at::ScalarType> dtype, std::string_view kernel, bool as_cuda) {
  SumPlan plan;
  plan.kernel = check_args(self.scalar_type(), dtype, self.device().type(), kernel);
  // The CUDA auto kernels write the result in place and read gapped rows.
  const bool cuda_auto =
      (self.is_cuda() || as_cuda) && plan.kernel && plan.kernel->role == KernelRole::kFast;

  const int64_t ndim = self.dim();
  const ReducedDims reduced = reduced_dims(ndim, dim, keepdim);

  // auto and exact sum a kept dim of stride 0 (an expanded view) once: every output along
  // it adds the same elements, so the sum of the view narrowed to size 1 there, copied out
  // along it (broadcast()), reads 1/size of the elements that summing each output would.
  // (The staged and baseline kernels run as written.) Only where an output adds more than
  // one element: a copy or a fill writes each output once already.
  at::Tensor x = self;
  int64_t length = 1;
  for (int64_t d = 0; d < ndim; ++d) length *= reduced[d] ? self.size(d) : 1;
  if (length > 1 && plan.kernel &&
      (plan.kernel->role == KernelRole::kFast || plan.kernel->role == KernelRole::kExact)) {
    for (int64_t d = 0; d < ndim; ++d) {
      if (reduced[d] || self.size(d) < 2 || self.stride(d) != 0) continue;
      plan.broadcast_dims.push_back(d);
      x = x.narrow(d, 0, 1);
    }
    for (int64_t d = 0; !plan.broadcast_dims.empty() && d < ndim; ++d) {
      if (!reduced[d] || keepdim) plan.broadcast_shape.push_back(reduced[d] ? 1 : self.size(d));
    }
  }

  // dtype= casts first, as torch.sum does; integers and bool read at their own width
  // already sum in int64, so asking for int64 needs no copy.
  const bool widening_int =
      at::isIntegralType(self.scalar_type(), /*includeBool=*/true) && dtype == at::kLong;
  if (dtype && *dtype != self.scalar_type() && !widening_int) x = x.to(*dtype);
  plan.out_dtype = dtype.value_or(natural_dtype(self.scalar_type()));

  for (int64_t d = 0; d < ndim; ++d) {
    if (reduced[d]) {
      plan.length *= x.size(d);
      if (keepdim) plan.out_shape.push_back(1);
    } else {
      plan.outputs *= x.size(d);
      plan.out_shape.push_back(x.size(d));
    }
  }
  plan.input = x;

  // auto sums an expanded reduced dim (stride 0: every index the same elements) once and
  // multiplies by its size, `repeat`: on the last pass, or here when every reduced dim is
  // expanded. (exact and the staged kernels add every element.)
  int64_t repeat = 1;
  bool only_expanded = true;
  for (int64_t d = 0; d < ndim; ++d) {
    if (!reduced[d] || x.size(d) == 1) continue;
    if (x.stride(d) == 0) {
      repeat *= x.size(d);
    } else {
      only_expanded = false;
    }
  }
  const bool fold_expanded = repeat > 1 && plan.kernel && plan.kernel->role == KernelRole::kFast;

  // Sums that need no kernel.
  const at::TensorOptions out_options = x.options().dtype(plan.out_dtype);
  if (plan.outputs == 0) {
    plan.result = at::empty(plan.out_shape, out_options);
  } else if (plan.length == 0) {
    plan.result = at::zeros(plan.out_shape, out_options);
  } else if (dtype && at::isIntegralType(*dtype, false) && !at::isSignedType(*dtype) &&
             *dtype != at::kByte) {
    // torch.sum sums uint16/32/64 inputs (into int64) but not into them, unless there is
    // nothing to add.
    TORCH_CHECK_NOT_IMPLEMENTED(false, "warpreduce.sum: dtype=", *dtype,
                                " is not supported (torch.sum does not sum into it either)");
  } else if (plan.length == 1 || (fold_expanded && only_expanded)) {
    // One distinct element each (every reduced dim of size 1, or expanded), into a new
    // tensor: floats as 0 + repeat x, one rounding, as torch.sum adds from 0 (-0.0 sums
    // to +0.0; the 0 a CPU scalar, no device allocation); integers times the repeat in
    // the result dtype, which wraps as their sum does (a bool result: the element).
    at::Tensor first = x;
    for (int64_t d = 0; d < ndim; ++d) {
      if (reduced[d]) first = first.narrow(d, 0, 1);
    }
    at::Tensor result = at::empty(plan.out_shape, out_options);
    const at::Tensor elements = first.reshape(plan.out_shape);
    if (at::isFloatingType(plan.out_dtype)) {
      // On the CPU a scattered layout is copied into a contiguous addend first (converted
      // on the way): at::add_out over the view itself ran at a third of copy_'s speed
      // (bfloat16 20 x 7 x 361 x 161 x 1 x 2 permuted, over dim 4, one thread: 92 ms;
      // copied, then added, 35 ms; torch.sum 55 ms). (Added in place instead, NaNs kept
      // their bits where torch.sum's addition gives its own.)
      // A 2-D transposed view with a short side is copied as a 3-D one: ATen copies 2-D
      // transposes in blocks of 60 x 60, which for a side of 3 cost 6x a copy row by row
      // (bfloat16 3 x 2421078 from 2421078 x 3, one thread, dev machine, 2026-12-01: 15.1
      // ms, 2.3 through a 3-D view; 2000 x 3000 took 6.4 in blocks, 12.4 as 3-D).
      constexpr int64_t kAtenTransposeBlock = 60;
      const bool scattered = x.is_cpu() && !elements.is_contiguous();
      const at::Tensor addend =
          scattered ? at::empty(plan.out_shape, out_options) : elements.to(plan.out_dtype);
      if (scattered && elements.dim() == 2 && elements.stride(0) == 1 &&
          std::min(elements.size(0), elements.size(1)) < kAtenTransposeBlock) {
        addend.unsqueeze(0).copy_(elements.unsqueeze(0));
      } else if (scattered) {
        addend.copy_(elements);
      }
      at::add_out(result, at::scalar_tensor(0, out_options.device(at::kCPU)), addend, repeat);
    } else if (repeat == 1 || plan.out_dtype == at::kBool) {
      result.copy_(elements);
    } else if (elements.scalar_type() == plan.out_dtype ||
               c10::isBarebonesUnsignedType(elements.scalar_type())) {  // (no promotion)
      at::mul_out(result, elements.to(plan.out_dtype), repeat);
    } else {
      // Narrower integers or bool into int64: times a 1-element int64 tensor of the
      // result's rank (a scalar would not promote them; 0-d for a 0-d result, whose
      // elements are 0-d too), one pass that reads them and writes the products.
      // Converting first wrote and read the result twice over: int8 2 x 15330803
      // expanded, summed over dim 0 on an H100, took 231 us, 0.31x torch.compile.
      at::mul_out(result, elements,
                  at::full(at::DimVector(plan.out_shape.size(), 1), repeat, out_options));
    }
    plan.result = result;
  }
  if (plan.result) return plan;

  if (plan.outputs == 1 && x.is_non_overlapping_and_dense()) {
    // A full sum of a dense tensor (contiguous, transposed, permuted): its elements fill
    // one block of memory from the data pointer, in some order, which a sum ignores.
    // (Copied out along a broadcast dim by its store: a second launch took 26 us of
    // float32 2 x 3324004 expanded over dim 1, 0.71x torch.sum, H200.)
    ReductionPass row;
    row.length = plan.length;
    plan.passes.push_back(row);
    place_outputs(plan, cuda_auto);
    return plan;
  }

  // The geometry sees the dims of size > 1 only (at most 63 of them, since their product
  // is an element count), so that a bit per dim is enough whatever the tensor's rank.
  at::DimVector sizes, strides, dims;
  uint64_t reduced_bits = 0;
  for (int64_t d = 0; d < ndim; ++d) {
    if (x.size(d) == 1) continue;
    if (fold_expanded && reduced[d] && x.stride(d) == 0) continue;
    if (reduced[d]) reduced_bits |= uint64_t{1} << sizes.size();
    dims.push_back(d);
    sizes.push_back(x.size(d));
    strides.push_back(x.stride(d));
  }
  const DimOrder order = memory_order(sizes, strides);
  for (int k : order) {
    if ((reduced_bits >> k) & 1) continue;
    plan.kept_dims.push_back(dims[k]);
    plan.kept_sizes.push_back(sizes[k]);
  }
  // Where the kernels write a result whose kept dims are out of memory order, the result's
  // innermost dim (the last kept one) stays apart from the kept dims below it in memory.
  // Merged with them, a lane's adjacent outputs lay a result row apart; apart, it is the
  // outer dim whose outputs sit side by side, which outer-first columns store along
  // (launch_model.h). Seed 151's shapes, merged on an H100 and apart on an H200 (x
  // torch.sum): bool 8 x 201 x 150795 transposed over dim 0 8.7 -> 18.3 (1014 us merged,
  // torch.compile 973), bfloat16 2 x 2 x 323 x 19427 transposed over dim 0 0.87 -> 1.94,
  // int32 2 x 10702 x 198 transposed 1.30 -> 1.64.
  // Not where the kept dims below it are narrow (under kApartMinBytes): outer-first lanes
  // there load an element each, a few bytes apart. Merged, the block reads in vectors,
  // and the columns store across (Launch::store_across). On an H200 (2026-11-28, seeds
  // 211 and 223, x torch.sum): float16 2 x 5 x 3 x 171730 permuted over dims (2, 0), a
  // 171730 x 5 block, 0.38 -> 0.95; float32 2 x 1067 x 2 x 5 x 1910 transposed 0.72 ->
  // 2.61; bfloat16 6 x 7 x 1862928 permuted 0.66 -> 2.64; 3 x 3 x 84 x 5 x 25 x 100
  // transposed (25 below) 0.30 -> 0.80. Blocks of up to 4 KiB (kSlabMaxBytes) were kept
  // apart at first, for the tiles of slabs; merged too (2026-11-29, seeds 187-227, against
  // apart): bfloat16 45875 x 2 x 886 transposed over dim 0 294 -> 46 us (an 886 x 2
  // block: columns of one pair before), float32 65 x 6 x 4746 x 6 x 6 transposed 127 ->
  // 75, 13 x 4 x 49 x 35 x 3 x 37 23.0 -> 16.7, bool 7 x 220 x 6572 permuted 19.2 ->
  // 15.6, bfloat16 804 x 164 x 13 x 7 x 5 transposed 132 -> 113 (tiles of 17 short
  // segments before); two lost: int8 7 x 2597 x 6 x 32 x 5 permuted 29 -> 41 us (8.1 ->
  // 5.8x torch.sum; a 7 x 5 block merged with the kept dims above into one of 545370
  // bytes, int64 outputs stored in the pass's order), bfloat16 8 x 5 x 49529 x 7 permuted
  // 17.5 -> 19.7 (1.32 -> 1.18x; its block of 5 vectors folds again since, as it did
  // apart: launch_model.cpp). (Dims of 26-63 bytes below were not measured; the
  // shapes kept apart for outer-first columns had 191 bytes and more.)
  // WARPREDUCE_NO_NARROW_MERGE=1 keeps such dims apart: a knob for measuring.
  const int64_t bytes = static_cast<int64_t>(x.element_size());
  int unmerged = -1;
  if (!plan.kept_in_order() && may_place_outputs(plan, cuda_auto)) {
    for (int k = 0; k < static_cast<int>(sizes.size()); ++k) {
      if (!((reduced_bits >> k) & 1)) unmerged = k;
    }
    static const bool no_narrow_merge = knob_is_set("WARPREDUCE_NO_NARROW_MERGE");
    const auto at = std::find(order.begin(), order.end(), unmerged);
    int64_t below = 1;  // the kept dims that merge with `unmerged` below it
    for (auto d = at; d + 1 != order.end(); ++d) {
      const int next = *(d + 1);
      if (((reduced_bits >> next) & 1) || strides[*d] != sizes[next] * strides[next]) break;
      below *= sizes[next];
    }
    if (!no_narrow_merge && below > 1 && below * bytes < LaunchTuning::kApartMinBytes) {
      unmerged = -1;
    }
  }
  plan.layout = memory_layout(sizes, strides, order, reduced_bits, unmerged);
  // Gaps under a 32-byte sector (geometry.h says why): gapped rows where the spans are too
  // long for the tiles of short rows, gapped inner dims where the slabs are too long for
  // the tiles of slabs (which do not read gaps). WARPREDUCE_NO_GAPPED_ROWS=1 and
  // WARPREDUCE_NO_GAPPED_COLUMNS=1 plan without them: knobs for measuring side by side
  // (benchmarks), read once.
  static const bool no_gapped_rows = knob_is_set("WARPREDUCE_NO_GAPPED_ROWS");
  static const bool no_gapped_columns = knob_is_set("WARPREDUCE_NO_GAPPED_COLUMNS");
  static const bool no_padded_columns = knob_is_set("WARPREDUCE_NO_PADDED_COLUMNS");
  // WARPREDUCE_NO_WIDE_ROW_GAPS=1: gapped rows of gaps under a sector only (LaunchTuning's
  // kWideRowGapMinSectorPercent): a knob for measuring.
  static const bool no_wide_row_gaps = knob_is_set("WARPREDUCE_NO_WIDE_ROW_GAPS");
  // The storage past the view's last element (a strided last dim x[..., ::2] of a tensor
  // ends one element before its storage does), which a gapped or padded first pass (CUDA
  // auto only) and, on the CPU, a stepped one (cpu/sum_kernels.h, stepped_columns) may
  // read.
  auto storage_slack = [&] {
    int64_t last = x.storage_offset();
    for (int64_t d = 0; d < ndim; ++d) last += (x.size(d) - 1) * x.stride(d);
    const int64_t stored = static_cast<int64_t>(x.storage().nbytes()) / x.element_size();
    return std::max<int64_t>(0, stored - last - 1);
  };
  Gaps gaps;
  if (cuda_auto) {
    if (!no_gapped_rows) {
      gaps.max_row_gap = 31 / bytes;
      gaps.min_row_span = LaunchTuning::kRowSlabMaxBytes / bytes + 1;
      gaps.element_bytes = bytes;
      // WARPREDUCE_NO_SHORT_GAPPED_ROWS=1: rows a gap apart from min_row_span only
      // (LaunchTuning::kShortGappedRowCarryNumerator): a knob for measuring.
      static const bool no_short_gapped_rows = knob_is_set("WARPREDUCE_NO_SHORT_GAPPED_ROWS");
      if (!no_short_gapped_rows && bytes >= 4) {
        gaps.max_short_row_bytes = pass_element_bytes(x.scalar_type(), 1) *
                                   LaunchTuning::kShortGappedRowCarryNumerator /
                                   LaunchTuning::kShortGappedRowCarryDenominator;
      }
      if (!no_wide_row_gaps) {
        gaps.min_row_sector_percent = LaunchTuning::kWideRowGapMinSectorPercent;
        gaps.max_wide_row_period = LaunchTuning::kWideRowGapMaxPeriodBytes;
      }
    }
    if (!no_gapped_columns) {
      gaps.max_column_gap = 31 / bytes;
      gaps.min_column_slab = LaunchTuning::kSlabMaxBytes / bytes;
      gaps.min_column_span = LaunchTuning::kColumnMinUnalignedVectors * 16 / bytes;
      // Short rows a gap apart in slabs that a tile holds (launch_model.cpp, columns_launch,
      // says what they gained). WARPREDUCE_NO_TILED_GAPS=1 leaves them out: a knob for
      // measuring.
      static const bool no_tiled_gaps = knob_is_set("WARPREDUCE_NO_TILED_GAPS");
      gaps.tiled_gaps = !no_tiled_gaps;
      gaps.lanes = 16 % bytes == 0 ? 16 / bytes : 0;
      gaps.data_aligned = reinterpret_cast<uintptr_t>(x.const_data_ptr()) % 16 == 0;
      // Padded inner dims (geometry.h), x[..., :85] of rows of 88 over a dim above, had
      // read 2-byte pairs or an element a lane. On an H200 (2026-11-28, A/B by
      // WARPREDUCE_NO_PADDED_COLUMNS=1): bfloat16 256 x 6 x 382 x 85 sliced over dim 2
      // 962 -> 3168 GB/s (0.47 -> 1.52x torch.sum), 706 x 9719 x 5 over dim 1 795 -> 1745,
      // float32 267 x 2 x 11 x 63 x 45 sliced 2071 -> 2248; rows of 8 floats, 5 or 7 of
      // them, 0.99-1.02x. Rows whose partial vectors are rare (LaunchTuning) keep their
      // vector stores.
      if (!no_padded_columns) {
        gaps.max_padded_width = LaunchTuning::kColumnRarePartialVectors * 16 / bytes - 1;
      }
      gaps.slack = storage_slack();
    }
  }
  // Slices (geometry.h, ReductionPass::slices): CUDA auto's columns take a second reduced
  // dim. WARPREDUCE_NO_COLUMN_SLICES=1 plans a pass for each: a knob for measuring.
  static const bool no_column_slices = knob_is_set("WARPREDUCE_NO_COLUMN_SLICES");
  const bool slices = cuda_auto && !no_column_slices;
  bool planned = plan_passes(plan.layout, &plan.passes, gaps, slices);
  if (!planned && unmerged >= 0) {  // too many dims apart: merged, the outputs scattered
    plan.layout = memory_layout(sizes, strides, order, reduced_bits);
    planned = plan_passes(plan.layout, &plan.passes, gaps, slices);
  }
  if (!planned) {
    // More dims than the geometry indexes (geometry.h): copy into kept-dims-first order,
    // the kept dims in the order the kernels write them, which is one pass of rows.
    // Folded expanded dims are copied at size 1.
    std::vector<int64_t> copy_order(plan.kept_dims.begin(), plan.kept_dims.end());
    at::Tensor folded = x;
    for (int64_t d = 0; d < ndim; ++d) {
      if (reduced[d] || x.size(d) == 1) copy_order.push_back(d);
      if (fold_expanded && reduced[d] && x.stride(d) == 0) folded = folded.narrow(d, 0, 1);
    }
    plan.input = folded.permute(copy_order).contiguous();
    plan.copied = true;
    plan.layout.clear();
    ReductionPass rows;
    rows.outer.ndim = 1;
    rows.outer.sizes[0] = rows.outer_size = plan.outputs;
    rows.outer.strides[0] = rows.length = plan.length / (fold_expanded ? repeat : 1);
    plan.passes.assign({rows});
  }
  if (fold_expanded) plan.passes.back().repeat = repeat;
  if (!plan.copied && (plan.passes[0].gapped() || plan.passes[0].inner_stride > 1)) {
    plan.passes[0].slack = storage_slack();
  }
  place_outputs(plan, cuda_auto);
  rows_in_result_order(plan);
  mark_result_order(plan);
  return plan;
}

at::DimVector SumPlan::input_kept_dims() const {
  if (!copied) return kept_dims;
  at::DimVector dims(kept_dims.size());
  std::iota(dims.begin(), dims.end(), 0);
  return dims;
}

bool SumPlan::kept_in_order() const { return std::is_sorted(kept_dims.begin(), kept_dims.end()); }

at::Tensor SumPlan::rows() const {
  if (copied || (passes.size() == 1 && passes[0].packed_rows())) {
    return input.as_strided({outputs, length}, {length, 1});
  }
  std::vector<int64_t> order(kept_dims.begin(), kept_dims.end());
  for (int64_t d = 0; d < input.dim(); ++d) {
    if (std::find(order.begin(), order.end(), d) == order.end()) order.push_back(d);
  }
  return input.permute(order).contiguous().view({outputs, length});
}

at::Tensor SumPlan::empty_output() const {
  const at::TensorOptions options = input.options().dtype(natural_dtype(input.scalar_type()));
  if (writes_in_place())
    return at::empty(broadcast_dims.empty() ? out_shape : broadcast_shape, options);
  return kept_in_order() ? at::empty(out_shape, options) : at::empty({outputs}, options);
}

at::Tensor SumPlan::finish(const at::Tensor& output) const {
  if (writes_in_place()) return output;
  if (kept_in_order()) {
    return output.scalar_type() == out_dtype ? output : output.to(out_dtype);
  }
  // The output holds the kept dims in write order: that view, permuted into the tensor's
  // order, copied into a contiguous result (converting the dtype on the way).
  at::DimVector permutation(kept_dims.size()), sizes;
  std::iota(permutation.begin(), permutation.end(), 0);
  std::sort(permutation.begin(), permutation.end(),
            [&](int64_t a, int64_t b) { return kept_dims[a] < kept_dims[b]; });
  for (int64_t k : permutation) sizes.push_back(kept_sizes[k]);
  at::Tensor result = at::empty(out_shape, output.options().dtype(out_dtype));
  result.view(sizes).copy_(output.view(kept_sizes).permute(permutation));
  return result;
}

at::Tensor SumPlan::broadcast(const at::Tensor& sum) const {
  if (broadcast_dims.empty() || writes_in_place()) return sum;
  at::Tensor result = at::empty(broadcast_shape, sum.options());
  result.copy_(sum.expand(broadcast_shape));
  return result;
}

namespace {

// A complex sum is two real sums: the same dims of the tensor's real view, whose last dim
// (real, imaginary) is kept. Size-1 dims are dropped first (they sum nothing), so that the
// real view has at most one dim more than the dims that matter.
at::Tensor complex_sum(const at::Tensor& self, at::OptionalIntArrayRef dim, bool keepdim,
                       std::optional<at::ScalarType> dtype, std::string_view kernel) {
  check_args(self.scalar_type(), dtype, self.device().type(), kernel);
  const ReducedDims reduced = reduced_dims(self.dim(), dim, keepdim);
  const at::Tensor x = (dtype ? self.to(*dtype) : self).resolve_conj();
  at::DimVector out_shape, sizes, strides;
  std::vector<int64_t> dims;
  for (int64_t d = 0; d < x.dim(); ++d) {
    if (!reduced[d] || keepdim) out_shape.push_back(reduced[d] ? 1 : x.size(d));
    if (x.size(d) == 1) continue;
    if (reduced[d]) dims.push_back(static_cast<int64_t>(sizes.size()));
    sizes.push_back(x.size(d));
    strides.push_back(x.stride(d));
  }
  // And a new size-1 dim: it adds nothing, and keeps the list of dims to reduce from being
  // empty (which would mean every dim) when each reduced dim had size 1.
  dims.push_back(static_cast<int64_t>(sizes.size()));
  sizes.push_back(1);
  strides.push_back(1);
  const at::Tensor real = at::view_as_real(x.as_strided(sizes, strides));
  return at::view_as_complex(run_sum(real, dims, false, std::nullopt, kernel)).view(out_shape);
}

}  // namespace

at::Tensor run_sum(const at::Tensor& self, at::OptionalIntArrayRef dim, bool keepdim,
                   std::optional<at::ScalarType> dtype, std::string_view kernel) {
  if (at::isComplexType(dtype.value_or(self.scalar_type()))) {
    return complex_sum(self, dim, keepdim, dtype, kernel);
  }
  const SumPlan plan = make_plan(self, dim, keepdim, dtype, kernel);
  if (plan.result) return plan.broadcast(*plan.result);
  at::Tensor out = plan.empty_output();
  plan.kernel->launch(plan, out);
  return plan.broadcast(plan.finish(out));
}

}  // namespace warpreduce
