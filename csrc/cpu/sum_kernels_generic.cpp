// The CPU kernels for the compiler's default target (at::vec's portable Vectorized):
// what runs where neither AVX2 nor AVX-512 is available (or ATEN_CPU_CAPABILITY=default).
#include "sum_kernels_prelude.h"

#define CPU_CAPABILITY DEFAULT
#include "sum_kernels.h"
// after the auto kernels, whose helpers it shares
#include "exact_kernels.h"

#include "isa.h"

namespace warpreduce::cpu {
IsaKernels generic_kernels() { return {&DEFAULT::launch, &DEFAULT::exact_launch}; }
}  // namespace warpreduce::cpu
