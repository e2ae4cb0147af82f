// kernel="exact" for float16 and bfloat16 (run_pass.cuh, accumulate.cuh; integer sums are
// exact already and take auto's kernels).
#include "run_pass.cuh"

namespace warpreduce {

WARPREDUCE_INSTANTIATE_EXACT(c10::Half)
WARPREDUCE_INSTANTIATE_EXACT(c10::BFloat16)

}  // namespace warpreduce
