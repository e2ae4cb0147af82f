// The CPU kernels for AVX2 (with FMA and F16C, what torch's AVX2 capability means).
// The ISA is turned on for this TU's own code only, after the prelude (which says why).
// Built with GCC on x86-64 (setup.py compiles every file with the same flags, so the ISA
// comes from `#pragma GCC target`); elsewhere the generic kernels serve.
// sum_kernels_x86_avx512.cpp is this file for another ISA, line for line (deliberately):
// each translation unit must turn its ISA on with pragmas of its own around the kernels.
#include "sum_kernels_prelude.h"

#include "isa.h"

#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__)
#pragma GCC push_options
#pragma GCC diagnostic push
// at::vec under a target pragma: g++ warns that lambdas' compiler-made thunks (never
// called) return vectors without the ISA, and about _mm512_undefined_* inputs.
#pragma GCC diagnostic ignored "-Wpsabi"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC target("avx2,fma,f16c")
// In C++, g++ lexes the file before it acts on the pragma, so the ISA macros (__AVX__ ...)
// stay unset (checked with g++ 12); sleef.h, whose vector math at::vec's classes name,
// declares its AVX functions only under them. They are set for that one header, which
// declares functions and defines no code.
#define __AVX__ 1
#define __AVX2__ 1
#include <sleef.h>
#undef __AVX__
#undef __AVX2__
#define CPU_CAPABILITY AVX2
#define CPU_CAPABILITY_AVX2
#include "sum_kernels.h"
// after the auto kernels, whose helpers it shares
#include "exact_kernels.h"
#pragma GCC diagnostic pop
#pragma GCC pop_options

namespace warpreduce::cpu {
IsaKernels avx2_kernels() { return {&AVX2::launch, &AVX2::exact_launch}; }
}  // namespace warpreduce::cpu
#else
namespace warpreduce::cpu {
IsaKernels avx2_kernels() { return {nullptr, nullptr}; }
}  // namespace warpreduce::cpu
#endif
