// The CPU kernels as compiled for each instruction set (sum_kernels_<isa>.cpp), for
// sum_cpu.cpp to choose from. A variant the compiler could not build has null launchers.
#pragma once

#include "../plan.h"
#include "exact_cpu.h"

namespace warpreduce::cpu {

struct IsaKernels {
  Launcher sum;         // kernel="auto"
  ExactLauncher exact;  // kernel="exact"'s fast path
};

IsaKernels generic_kernels();  // the compiler's default target: always built
IsaKernels avx2_kernels();     // x86-64 with AVX2, FMA and F16C
IsaKernels avx512_kernels();   // x86-64 with AVX-512 F, BW, VL and DQ

}  // namespace warpreduce::cpu
