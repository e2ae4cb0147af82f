"""Runs every CUDA kernel once on a small and a medium input, full and dim reductions,
and checks the results; meant to run under compute-sanitizer (benchmarks/gpu_check.sh):

    PYTORCH_NO_CUDA_MEMORY_CACHING=1 compute-sanitizer --tool racecheck python benchmarks/sanitize.py

(without the caching allocator each tensor is its own allocation, so memcheck sees an
access past its end)."""

import torch

import warpreduce_torch as wr

CASES = [  # (shape, dim)
    ((1025,), None),  # small
    (((1 << 20) + 3,), None),  # medium: several blocks, several launches
    ((37, 1025), 1),
    ((1025, 37), 0),
]

for kernel in wr.kernels("cuda"):
    for dtype in (torch.float32, torch.int8):
        for shape, dim in CASES:
            x = (torch.rand(shape, device="cuda") * 100).to(dtype)
            got = wr.sum(x, dim, kernel=kernel)
            want = torch.sum(x, dim)
            if dtype.is_floating_point:
                torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-2)
            else:
                assert torch.equal(got, want), (kernel, dtype, shape)
    torch.cuda.synchronize()
    print(f"{kernel}: ok", flush=True)
