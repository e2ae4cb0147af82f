// kernel="auto"'s first passes with a tail (tail.cuh) for the 32- and 64-bit integers.
#include "run_pass.cuh"

namespace warpreduce {

WARPREDUCE_INSTANTIATE_TAIL(int32_t)
WARPREDUCE_INSTANTIATE_TAIL(int64_t)
WARPREDUCE_INSTANTIATE_TAIL(uint32_t)
WARPREDUCE_INSTANTIATE_TAIL(uint64_t)

}  // namespace warpreduce
