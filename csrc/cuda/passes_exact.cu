// kernel="exact" for the float dtypes (run_pass.cuh, accumulate.cuh); integer sums are
// exact already and take auto's kernels.
#include "run_pass.cuh"

namespace warpreduce {

WARPREDUCE_INSTANTIATE_EXACT(c10::Half)
WARPREDUCE_INSTANTIATE_EXACT(c10::BFloat16)
WARPREDUCE_INSTANTIATE_EXACT(float)
WARPREDUCE_INSTANTIATE_EXACT(double)

}  // namespace warpreduce
