// kernel="auto" for bool and the 8-bit integers (run_pass.cuh).
#include "run_pass.cuh"

namespace warpreduce {

WARPREDUCE_INSTANTIATE_AUTO(BoolByte)
WARPREDUCE_INSTANTIATE_AUTO(uint8_t)
WARPREDUCE_INSTANTIATE_AUTO(int8_t)

}  // namespace warpreduce
