// kernel="auto" for bfloat16 (run_pass.cuh).
#include "run_pass.cuh"

namespace warpreduce {

WARPREDUCE_INSTANTIATE_AUTO(c10::BFloat16)

}  // namespace warpreduce
