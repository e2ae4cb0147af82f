// kernel="auto"'s first passes with a tail (tail.cuh) for bfloat16 and float16.
#include "run_pass.cuh"

namespace warpreduce {

WARPREDUCE_INSTANTIATE_TAIL(c10::BFloat16)
WARPREDUCE_INSTANTIATE_TAIL(c10::Half)

}  // namespace warpreduce
