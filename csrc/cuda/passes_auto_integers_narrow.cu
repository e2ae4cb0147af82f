// kernel="auto" for bool and the 8- and 16-bit integers (run_pass.cuh); the dtypes are spread over
// four files so that they compile in parallel.
#include "run_pass.cuh"

namespace warpreduce {

WARPREDUCE_INSTANTIATE_AUTO(BoolByte)
WARPREDUCE_INSTANTIATE_AUTO(uint8_t)
WARPREDUCE_INSTANTIATE_AUTO(int8_t)
WARPREDUCE_INSTANTIATE_AUTO(int16_t)
WARPREDUCE_INSTANTIATE_AUTO(uint16_t)

}  // namespace warpreduce
