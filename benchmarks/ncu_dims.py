"""One call of warpreduce's auto on a few dim reductions, for Nsight Compute: which
kernel each case runs, and why it runs at the speed it does.

    ncu --clock-control none --csv --metrics <list> python3 benchmarks/ncu_dims.py [names]

benchmarks/gpu_check.sh runs it (step ncu-dims)."""

import sys

import torch

import warpreduce_torch as wr
from warpreduce_torch.bench.dims import Case

CASES = {
    "bf16-rows-100": Case((2**20, 100), -1, "bfloat16"),
    "f32-rows-100": Case((2**19, 100), -1),
    "f32-rows-3": Case((2**23, 3), -1),
    "bf16-cols-8": Case((2**22, 8), 0, "bfloat16"),
    "f32-cols-nchw": Case((32, 256, 56, 56), 1),
    "bf16-cols-64k": Case((1024, 2**16), 0, "bfloat16"),
}

names = sys.argv[1:] or list(CASES)
for name in names:
    case = CASES[name]
    x = case.make(0)
    wr.sum(x, case.dim)
    torch.cuda.synchronize()
    print(name, case.name, flush=True)
