"""torch.sum as a custom op: ``torch.ops.warpreduce.sum``, with staged CUDA kernels."""

import torch

from ._build_check import build_info, check_build, check_device_supported

check_build(torch.__version__)  # before loading _C: a mismatch makes a clear error there

from . import _C  # noqa: E402, F401  (loads the library: the op and its CPU/CUDA bodies)
from .ops import dtypes, kernels, sum  # noqa: E402, A004
from . import distributed  # noqa: E402, F401  (registers the sharding rule for DTensors)
from . import override  # noqa: E402
from .override import disable, enable, is_enabled, sums  # noqa: E402

__all__ = [
    "build_info",
    "check_device_supported",
    "disable",
    "dtypes",
    "enable",
    "is_enabled",
    "kernels",
    "override",
    "sum",
    "sums",
]
