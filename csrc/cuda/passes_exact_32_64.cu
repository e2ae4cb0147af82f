// kernel="exact" for float32 and float64 (run_pass.cuh, accumulate.cuh). The dtypes are
// spread over files of a few so that they compile in parallel: one file of both 16-bit
// floats was the build's longest (408 s of a 2-core build).
#include "run_pass.cuh"

namespace warpreduce {

WARPREDUCE_INSTANTIATE_EXACT(float)
WARPREDUCE_INSTANTIATE_EXACT(double)

}  // namespace warpreduce
