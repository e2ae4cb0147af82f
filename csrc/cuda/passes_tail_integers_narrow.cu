// kernel="auto"'s first passes with a tail (tail.cuh) for bool and the 8- and 16-bit
// integers.
#include "run_pass.cuh"

namespace warpreduce {

WARPREDUCE_INSTANTIATE_TAIL(BoolByte)
WARPREDUCE_INSTANTIATE_TAIL(uint8_t)
WARPREDUCE_INSTANTIATE_TAIL(int8_t)
WARPREDUCE_INSTANTIATE_TAIL(int16_t)
WARPREDUCE_INSTANTIATE_TAIL(uint16_t)

}  // namespace warpreduce
