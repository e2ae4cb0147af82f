"""Python side of warpreduce::sum: the API and the fake kernel.

The schema, the checks, the kernels and autograd are in C++ (csrc/); nothing here
re-checks input.
"""

import torch
from torch._C import _has_torch_function_unary
from torch.compiler import is_compiling

from . import _C

_sum = torch.ops.warpreduce.sum.default


def sum(input, dim=None, keepdim=False, *, dtype=None, kernel="auto"):  # noqa: A001
    """torch.sum(input, dim, keepdim, dtype=dtype), computed by the kernel `kernel`.

    `kernel` is one of ``kernels(input.device)``: "auto" (the default, the fastest) on
    every device; on CUDA also the eight staged kernels and "cub".
    """
    # The common call (no dtype=) goes straight to the op through a C++ binding
    # (csrc/python.cpp says why). torch.ops is taken where Python has to see the call:
    # under torch.compile, and for tensor subclasses or modes that override
    # __torch_function__.
    if dtype is None and not is_compiling() and not _has_torch_function_unary(input):
        if dim is not None and not isinstance(dim, (tuple, list)):
            dim = (dim,)
        return _C.sum(input, dim, keepdim, kernel)
    return _sum(input, dim, keepdim, dtype=dtype, kernel=kernel)


def kernels(device="cuda", role=None):
    """The names `kernel=` accepts for tensors on `device` ("cpu", "cuda", or a
    torch.device), in stage order; with `role`, only those of one role: "stage" (the
    staged kernels), "fast" (auto) or "baseline" (cub)."""
    return torch.ops.warpreduce.kernels(torch.device(device).type, role)


def dtypes():
    """The dtypes warpreduce.sum takes, in the library's order."""
    return [getattr(torch, name) for name in torch.ops.warpreduce.dtypes()]


# warpreduce::sum forwards to warpreduce::_sum (csrc/ops.cpp says why), which holds the
# kernels, autograd and this fake kernel.
@torch.library.register_fake("warpreduce::_sum")
def _(self, dim, keepdim, dtype, kernel_name):
    # The real kernels' own checks (dtype, kernel name), then torch.sum's shape and dtype
    # rule, applied to the fake tensor: the rule the C++ plan follows.
    torch.ops.warpreduce._check_args(self.dtype, dtype, self.device.type, kernel_name)
    return torch.sum(self, dim, keepdim, dtype=dtype)
