// kernel="auto" for float16 (run_pass.cuh).
#include "run_pass.cuh"

namespace warpreduce {

WARPREDUCE_INSTANTIATE_AUTO(c10::Half)

}  // namespace warpreduce
