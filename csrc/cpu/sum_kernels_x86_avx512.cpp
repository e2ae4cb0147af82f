// The CPU kernels for AVX-512 (F, BW, VL and DQ, what torch's AVX512 capability means):
// sum_kernels_x86.h, shared with sum_kernels_x86_avx2.cpp, compiled with this ISA on.
// Each ISA is a TU of its own, so that its pragmas turn it on for its own code only.
#include "sum_kernels_prelude.h"

#define CPU_CAPABILITY AVX512
#define CPU_CAPABILITY_AVX512
#define WARPREDUCE_X86_TARGET "avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512dq"
#define WARPREDUCE_X86_KERNELS avx512_kernels
#include "sum_kernels_x86.h"
