// CPU body of warpreduce::sum: the kernel table, and the choice among the builds of the
// kernels (sum_kernels.h) for each instruction set.
#include <ATen/Version.h>
#include <torch/library.h>

#include <string>

#include "../plan.h"
#include "isa.h"

namespace warpreduce {
namespace {

// The widest build of the kernels that both torch and the processor allow: torch's own
// choice (at::get_cpu_capability(): AVX512, AVX2 or DEFAULT, which ATEN_CPU_CAPABILITY
// can lower, so that each build can be tested on one machine), confirmed by the
// processor's feature bits, since torch takes that variable at its word.
cpu::IsaKernels choose_kernels() {
  const std::string torch_choice = at::get_cpu_capability();
#if defined(__GNUC__) && defined(__x86_64__)
  __builtin_cpu_init();
  const bool has_avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  const bool has_avx512 = has_avx2 && __builtin_cpu_supports("avx512f") &&
                          __builtin_cpu_supports("avx512bw") &&
                          __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq");
  if (torch_choice == "AVX512" && has_avx512 && cpu::avx512_kernels().sum) {
    return cpu::avx512_kernels();
  }
  if ((torch_choice == "AVX512" || torch_choice == "AVX2") && has_avx2 && cpu::avx2_kernels().sum) {
    return cpu::avx2_kernels();
  }
#endif
  return cpu::generic_kernels();
}

const cpu::IsaKernels& kernels() {
  static const cpu::IsaKernels chosen = choose_kernels();
  return chosen;
}

void launch_auto(const SumPlan& plan, at::Tensor& out) { kernels().sum(plan, out); }

// Integers and bool add exactly already: the auto kernels.
void launch_exact(const SumPlan& plan, at::Tensor& out) {
  if (!at::isFloatingType(plan.input.scalar_type())) return launch_auto(plan, out);
  cpu::sum_exactly(plan, out, kernels().exact);
}

// The CPU kernels kernel= names: the only list of them.
constexpr Kernel kCpuKernels[] = {
    {"auto", KernelRole::kFast, launch_auto},
    {"exact", KernelRole::kExact, launch_exact},
};

at::Tensor sum_cpu(const at::Tensor& self, at::OptionalIntArrayRef dim, bool keepdim,
                   std::optional<at::ScalarType> dtype, c10::string_view kernel) {
  return run_sum(self, dim, keepdim, dtype, kernel);
}

}  // namespace

c10::ArrayRef<Kernel> cpu_kernels() { return kCpuKernels; }

TORCH_LIBRARY_IMPL(warpreduce, CPU, m) { m.impl("_sum", &sum_cpu); }

}  // namespace warpreduce
