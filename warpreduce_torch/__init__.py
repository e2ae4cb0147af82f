"""torch.sum as a custom op: ``torch.ops.warpreduce.sum``, with staged CUDA kernels."""

import torch  # noqa: F401  (loads libtorch, which _C links against)

from . import _C  # noqa: F401  (loads the library: the op and its CPU/CUDA bodies)
from .ops import dtypes, kernels, sum  # noqa: A004
from . import distributed  # noqa: F401  (registers the sharding rule for DTensors)

__all__ = ["dtypes", "kernels", "sum"]
