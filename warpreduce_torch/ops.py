"""Python side of warpreduce::sum: the API and the fake kernel.

The schema, the checks, the kernels and autograd are in C++ (csrc/); nothing here
re-checks input.
"""

import torch

_sum = torch.ops.warpreduce.sum.default


def sum(input, dim=None, keepdim=False, *, dtype=None, kernel="auto"):  # noqa: A001
    """torch.sum(input, dim, keepdim, dtype=dtype), computed by the kernel `kernel`.

    `kernel` is one of ``kernels(input.device)``: "auto" (the default, the fastest) on
    every device; on CUDA also the eight staged kernels and "cub".
    """
    # The op converts every argument it is given from Python (~0.3 us each on the GPU
    # machine, where a whole small call costs ~8 us), so pass only those that differ
    # from the schema's defaults.
    if dtype is None and kernel == "auto":
        return _sum(input) if dim is None and not keepdim else _sum(input, dim, keepdim)
    return _sum(input, dim, keepdim, dtype=dtype, kernel=kernel)


def kernels(device="cuda"):
    """The names `kernel=` accepts for tensors on `device` ("cpu", "cuda", or a
    torch.device), in stage order."""
    return torch.ops.warpreduce.kernels(torch.device(device).type)


# warpreduce::sum forwards to warpreduce::_sum (csrc/ops.cpp says why), which holds the
# kernels, autograd and this fake kernel.
@torch.library.register_fake("warpreduce::_sum")
def _(self, dim, keepdim, dtype, kernel_name):
    # The real kernels' own checks (dtype, kernel name), then torch.sum's shape and dtype
    # rule, applied to the fake tensor: the rule the C++ plan follows.
    torch.ops.warpreduce._check_args(self.dtype, dtype, self.device.type, kernel_name)
    return torch.sum(self, dim, keepdim, dtype=dtype)
