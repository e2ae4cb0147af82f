// The CPU kernels as compiled for each instruction set (sum_kernels_<isa>.cpp), for
// sum_cpu.cpp to choose from. A variant the compiler could not build returns nullptr.
#pragma once

#include "../plan.h"

namespace warpreduce::cpu {

Launcher generic_kernels();  // the compiler's default target: always built
Launcher avx2_kernels();  // x86-64 with AVX2, FMA and F16C
Launcher avx512_kernels();  // x86-64 with AVX-512 F, BW, VL and DQ

}  // namespace warpreduce::cpu
