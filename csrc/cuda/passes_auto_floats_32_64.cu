// kernel="auto" for float32 and float64 (run_pass.cuh).
#include "run_pass.cuh"

namespace warpreduce {

WARPREDUCE_INSTANTIATE_AUTO(float)
WARPREDUCE_INSTANTIATE_AUTO(double)

}  // namespace warpreduce
