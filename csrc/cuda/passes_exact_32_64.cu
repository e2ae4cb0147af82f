// kernel="exact" for float32 and float64 (run_pass.cuh, accumulate.cuh).
#include "run_pass.cuh"

namespace warpreduce {

WARPREDUCE_INSTANTIATE_EXACT(float)
WARPREDUCE_INSTANTIATE_EXACT(double)

}  // namespace warpreduce
