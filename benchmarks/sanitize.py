"""Runs every CUDA kernel on small and medium inputs, full and dim reductions, and checks
the results; meant to run under compute-sanitizer (benchmarks/gpu_check.sh):

    PYTORCH_NO_CUDA_MEMORY_CACHING=1 compute-sanitizer --tool racecheck python benchmarks/sanitize.py

(without the caching allocator each tensor is its own allocation, so memcheck sees an
access past its end). auto also runs every kind of pass of the reduction geometry:
short rows tiled, rows a group of lanes each, long rows split over blocks, columns
vectorized or not, split over blocks or not, and two passes.
"""

import torch

import warpreduce_torch as wr

CASES = [  # (shape, dim)
    ((1025,), None),  # small
    (((1 << 20) + 3,), None),  # medium: several blocks, several launches
    ((37, 1025), 1),
    ((1025, 37), 0),
]
AUTO_CASES = [
    ((4099, 3), 1),  # tiled rows
    ((3000, 301), 1),  # rows a warp each
    ((5, 300003), 1),  # split rows
    ((2**16 + 1, 8), 0),  # few columns: split
    ((4001, 4096), 0),  # vectorized columns
    ((1001, 1027), 0),  # columns element by element
    ((8, 33, 1000), (0, 2)),  # two passes
]


def check(x, dim, kernel):
    got = wr.sum(x, dim, kernel=kernel)
    want = torch.sum(x, dim)
    if x.dtype.is_floating_point:
        torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-2)
    else:
        assert torch.equal(got, want), (kernel, x.dtype, x.shape, dim)


for kernel in wr.kernels("cuda"):
    cases = CASES + (AUTO_CASES if kernel == "auto" else [])
    for dtype in (torch.float32, torch.int8, torch.bfloat16):
        for shape, dim in cases:
            x = (torch.rand(shape, device="cuda") * 100).to(dtype)
            check(x, dim, kernel)
            if x.dim() == 2:
                check(x[:, 1:], dim, kernel)  # unaligned
    torch.cuda.synchronize()
    print(f"{kernel}: ok", flush=True)
