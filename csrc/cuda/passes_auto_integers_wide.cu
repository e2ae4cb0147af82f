// kernel="auto" for the 32- and 64-bit integers (run_pass.cuh).
#include "run_pass.cuh"

namespace warpreduce {

WARPREDUCE_INSTANTIATE_AUTO(int32_t)
WARPREDUCE_INSTANTIATE_AUTO(int64_t)
WARPREDUCE_INSTANTIATE_AUTO(uint32_t)
WARPREDUCE_INSTANTIATE_AUTO(uint64_t)

}  // namespace warpreduce
