"""One call of each staged kernel on 2^24 int32 (the study's input), for Nsight Compute:

    ncu --clock-control none --csv --metrics <list> python3 benchmarks/ncu_stages.py

benchmarks/gpu_check.sh runs it; RESULTS.md explains each step with these counters."""

import torch

import warpreduce_torch as wr

x = torch.randint(-100, 100, (1 << 24,), device="cuda", dtype=torch.int32)
for kernel in wr.kernels("cuda", "stage") + ["auto"]:
    wr.sum(x, kernel=kernel)
torch.cuda.synchronize()
