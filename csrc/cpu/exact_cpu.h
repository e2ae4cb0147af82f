// kernel="exact" on the CPU (exact.h says what it computes): the fast path, built for
// each instruction set (exact_kernels.h), and the exact fallback around it
// (exact_cpu.cpp).
#pragma once

#include <cstdint>
#include <mutex>
#include <vector>

#include "../plan.h"

namespace warpreduce::cpu {

// The outputs of an exact sum that the fast path could not certify, from any thread.
class UncertifiedOutputs {
 public:
  void add(int64_t output);
  std::vector<int64_t> take();

 private:
  std::mutex mutex_;
  std::vector<int64_t> outputs_;
};

// The fast path of a float sum: writes every output of `out` (as Launcher says) that it
// can certify, and lists the others.
using ExactLauncher = void (*)(const SumPlan& plan, at::Tensor& out,
                               UncertifiedOutputs& uncertified);

// The whole exact sum of a float plan: `fast`, then each output it left recomputed from
// plan.input's elements with a superaccumulator.
void sum_exactly(const SumPlan& plan, at::Tensor& out, ExactLauncher fast);

}  // namespace warpreduce::cpu
