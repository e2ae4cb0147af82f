// kernel="auto"'s first passes with a tail (tail.cuh) for float32 and float64.
#include "run_pass.cuh"

namespace warpreduce {

WARPREDUCE_INSTANTIATE_TAIL(float)
WARPREDUCE_INSTANTIATE_TAIL(double)

}  // namespace warpreduce
