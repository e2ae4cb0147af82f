// The body of sum_kernels_x86_<isa>.cpp, written once for every x86 instruction set: turns
// the TU's ISA on (WARPREDUCE_X86_TARGET, a `#pragma GCC target` string), compiles the
// kernels into warpreduce::cpu::CPU_CAPABILITY under it, turns it off again and defines
// WARPREDUCE_X86_KERNELS (isa.h's avx2_kernels or avx512_kernels). The TU includes the
// prelude first and defines CPU_CAPABILITY, CPU_CAPABILITY_<ISA> and the two macros
// before this header; the pragmas act on the TU that includes it, from this point on
// (sum_kernels_prelude.h says why nothing shared may come after them). Built with GCC on
// x86-64 only (setup.py compiles every file with the same flags, so the ISA comes from the
// pragma); elsewhere the function returns no kernels and the generic ones serve.
#pragma once

#if !defined(WARPREDUCE_CPU_KERNELS_PRELUDE) || !defined(CPU_CAPABILITY) || \
    !defined(WARPREDUCE_X86_TARGET) || !defined(WARPREDUCE_X86_KERNELS)
#error "include sum_kernels_prelude.h and define CPU_CAPABILITY and WARPREDUCE_X86_* first"
#endif

#include "isa.h"

#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__)

#define WARPREDUCE_PRAGMA(text) _Pragma(#text)
#define WARPREDUCE_GCC_TARGET(isa) WARPREDUCE_PRAGMA(GCC target(isa))

#pragma GCC push_options
#pragma GCC diagnostic push
// at::vec under a target pragma: g++ warns that lambdas' compiler-made thunks (never
// called) return vectors without the ISA, and about _mm512_undefined_* inputs.
#pragma GCC diagnostic ignored "-Wpsabi"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
WARPREDUCE_GCC_TARGET(WARPREDUCE_X86_TARGET)
// In C++, g++ lexes the file before it acts on the pragma, so the ISA macros (__AVX__ ...)
// stay unset (checked with g++ 12); sleef.h, whose vector math at::vec's classes name,
// declares its AVX functions only under them. They are set for that one header, which
// declares functions and defines no code.
#define __AVX__ 1
#define __AVX2__ 1
#if defined(CPU_CAPABILITY_AVX512)
#define __AVX512F__ 1
#endif
#include <sleef.h>
#undef __AVX__
#undef __AVX2__
#undef __AVX512F__
#include "sum_kernels.h"
// after the auto kernels, whose helpers it shares
#include "exact_kernels.h"
#pragma GCC diagnostic pop
#pragma GCC pop_options

namespace warpreduce::cpu {
IsaKernels WARPREDUCE_X86_KERNELS() {
  return {&CPU_CAPABILITY::launch, &CPU_CAPABILITY::exact_launch};
}
}  // namespace warpreduce::cpu
#else
namespace warpreduce::cpu {
IsaKernels WARPREDUCE_X86_KERNELS() { return {nullptr, nullptr}; }
}  // namespace warpreduce::cpu
#endif
