"""One call of warpreduce's auto on a few dim reductions, for Nsight Compute: which
kernel each case runs, and why it runs at the speed it does. With --exact, a call of
kernel="exact" after each (float cases).

    ncu --clock-control none --csv --metrics <list> python3 benchmarks/ncu_dims.py [--exact] [names]

benchmarks/gpu_check.sh runs it (step ncu-dims)."""

import sys

import torch

import warpreduce_torch as wr
from warpreduce_torch.bench.dims import Case

CASES = {
    "bf16-rows-100": Case((2**20, 100), -1, "bfloat16"),
    "f32-rows-3": Case((2**23, 3), -1),
    "f32-slabs-2x2": Case((2**22, 2, 2), 1),
    "bf16-slabs-8x2": Case((2**21, 8, 2), 1, "bfloat16"),
    "f32-cols-4x16": Case((2**20, 4, 16), 1),
    "f32-cols-nchw": Case((32, 256, 56, 56), 1),
    "bf16-cols-64k": Case((1024, 2**16), 0, "bfloat16"),
    "f32-cols-4096": Case((4096, 4096), 0),
    "f32-vectors-32": Case((2**20, 32), -1),
    "bf16-vectors-128": Case((2**16, 128), -1, "bfloat16"),
    "f32-vectors-100": Case((2**19, 100), -1),
    "bf16-cols-8": Case((8, 2**24), 0, "bfloat16"),
    "f32-cols-64k": Case((2**16, 128), 0),
    "bf16-cols-32": Case((32, 2**20), 0, "bfloat16"),
    # shifted vectors under 39 rows an odd number of elements apart (seed 431, 0.51 of
    # the roofline)
    "bf16-shifted-39": Case((146, 39, 16215), 1, "bfloat16"),
    # a short reduced dim whose int64 outputs outweigh the input (seed 439, 0.36x
    # torch.compile)
    "i8-shifted-6": Case((6, 3, 6, 477873), 2, "int8"),
}

args = sys.argv[1:]
exact = "--exact" in args
names = [a for a in args if a != "--exact"] or list(CASES)
for name in names:
    case = CASES[name]
    x = case.make(0)
    wr.sum(x, case.dim)
    if exact:
        wr.sum(x, case.dim, kernel="exact")
    if name == "f32-rows-3":  # and column tiles: 3 rows of an offset view, over dim 0
        y = torch.randn(3, 2**22 + 1, device="cuda")[:, 1:]
        wr.sum(y, 0)
    torch.cuda.synchronize()
    print(name, case.name, flush=True)
