// Everything sum_kernels.h uses besides at::vec and its own code, included by every
// sum_kernels_<isa>.cpp BEFORE it turns its instruction set on.
//
// Why: a TU compiled for AVX2 or AVX-512 emits out-of-line copies of the inline functions
// and templates it uses (std::, c10::, at:: helpers), and the linker keeps one copy of each
// for the whole library: if that were the AVX-512 copy of a function that the default code
// also calls, a machine without AVX-512 would crash there. Functions defined before the
// `#pragma GCC target` of the TU are compiled for the baseline ISA, so every such copy is
// safe; what comes after (at::vec, inside at::vec::<ISA>, and the kernels, inside
// warpreduce::cpu::<ISA>) has names of its own. tests/test_cpu.py checks the built library:
// no function outside those namespaces uses a ymm or zmm register.
//
// The list: the headers that ATen/cpu/vec/vec.h and functional.h include (g++ -H), except
// the vec headers themselves, which depend on the ISA macros.
#pragma once

#define WARPREDUCE_CPU_KERNELS_PRELUDE 1

#include <ATen/AccumulateType.h>
#include <ATen/Config.h>
#include <ATen/Dispatch.h>
#include <ATen/NumericUtils.h>
#include <ATen/Parallel.h>
#include <ATen/core/Tensor.h>
#include <ATen/native/Math.h>
#include <ATen/native/cpu/zmath.h>
#include <ATen/native/quantized/AffineQuantizerBase.h>
#include <ATen/ops/empty.h>
#include <c10/core/ScalarType.h>
#include <c10/util/BFloat16-math.h>
#include <c10/util/BFloat16.h>
#include <c10/util/Half.h>
#include <c10/util/TypeCast.h>
#include <c10/util/complex.h>
#include <c10/util/irange.h>
#include <c10/util/qint32.h>
#include <c10/util/qint8.h>
#include <c10/util/quint2x4.h>
#include <c10/util/quint4x2.h>
#include <c10/util/quint8.h>

#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__))
#include <immintrin.h>  // declares every intrinsic; usable where the ISA is on
#endif

#include <algorithm>
#include <array>
#include <atomic>
#include <cmath>
#include <complex>
#include <cstdint>
#include <cstring>
#include <functional>
#include <iostream>
#include <limits>
#include <memory>
#include <numeric>
#include <optional>
#include <sstream>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "../exact.h"
#include "../launch_model.h"
#include "../pass_chain.h"
#include "../plan.h"
#include "../sum_traits.h"
#include "exact_cpu.h"

#ifdef VECTOR_WIDTH
#error "an ATen/cpu/vec header came in before the ISA was chosen"
#endif
