// kernel="auto" for the 32- and 64-bit integers (run_pass.cuh). The dtypes are spread
// over files of a few so that they compile in parallel: one file of both 16-bit floats
// was the build's longest (408 s of a 2-core build).
#include "run_pass.cuh"

namespace warpreduce {

WARPREDUCE_INSTANTIATE_AUTO(int32_t)
WARPREDUCE_INSTANTIATE_AUTO(int64_t)
WARPREDUCE_INSTANTIATE_AUTO(uint32_t)
WARPREDUCE_INSTANTIATE_AUTO(uint64_t)

}  // namespace warpreduce
