// kernel="auto" for float16 and bfloat16 (run_pass.cuh); the dtypes are spread over
// four files so that they compile in parallel.
#include "run_pass.cuh"

namespace warpreduce {

WARPREDUCE_INSTANTIATE_AUTO(c10::Half)
WARPREDUCE_INSTANTIATE_AUTO(c10::BFloat16)

}  // namespace warpreduce
