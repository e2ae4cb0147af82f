// kernel="auto" for the 16-bit integers (run_pass.cuh).
#include "run_pass.cuh"

namespace warpreduce {

WARPREDUCE_INSTANTIATE_AUTO(int16_t)
WARPREDUCE_INSTANTIATE_AUTO(uint16_t)

}  // namespace warpreduce
