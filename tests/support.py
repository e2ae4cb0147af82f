"""What the tests share beyond warpreduce_torch.testing: the devices, the dtypes and the
awkward sizes they run over."""

import pytest
import torch

import warpreduce_torch as wr
from warpreduce_torch.testing import layouts

HAS_CUDA = torch.cuda.is_available()
requires_cuda = pytest.mark.skipif(
    not HAS_CUDA,
    reason="no CUDA GPU visible: the CUDA tests run on the GPU machine (benchmarks/gpu_check.sh)",
)
DEVICES = ["cpu", pytest.param("cuda", marks=requires_cuda)]

# Every dtype the op takes, from the library's own list; complex32 (which torch.sum, and
# so the op, sums on CUDA only) in tests/test_parity.py.
DTYPES = [t for t in wr.dtypes() if t != torch.complex32]
FLOAT_DTYPES = [t for t in DTYPES if t.is_floating_point]
INT_DTYPES = [t for t in DTYPES if not (t.is_floating_point or t.is_complex)]

# Awkward lengths: empty, one, around a warp, around a block, 2^k +- 1, primes.
SIZES = [0, 1, 2, 31, 33, 255, 257, 1025, 4093, 65535, 65537, 1_000_003]

LAYOUTS = list(layouts(torch.empty(6, 8)))
