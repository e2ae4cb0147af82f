// The CPU kernels for AVX2 (with FMA and F16C, what torch's AVX2 capability means):
// sum_kernels_x86.h, shared with sum_kernels_x86_avx512.cpp, compiled with this ISA on.
// Each ISA is a TU of its own, so that its pragmas turn it on for its own code only.
#include "sum_kernels_prelude.h"

#define CPU_CAPABILITY AVX2
#define CPU_CAPABILITY_AVX2
#define WARPREDUCE_X86_TARGET "avx2,fma,f16c"
#define WARPREDUCE_X86_KERNELS avx2_kernels
#include "sum_kernels_x86.h"
