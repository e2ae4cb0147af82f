// kernel="exact" for float16 and bfloat16 (run_pass.cuh, accumulate.cuh; integer sums
// are exact already and take auto's kernels). The dtypes are spread over files of a few
// so that they compile in parallel: one file of both 16-bit floats was the build's
// longest (408 s of a 2-core build).
#include "run_pass.cuh"

namespace warpreduce {

WARPREDUCE_INSTANTIATE_EXACT(c10::Half)
WARPREDUCE_INSTANTIATE_EXACT(c10::BFloat16)

}  // namespace warpreduce
