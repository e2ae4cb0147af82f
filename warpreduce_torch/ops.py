"""Python side of warpreduce::sum: the API, the fake kernel and the vmap rule.

The schema, the argument parsing, the checks, the kernels and autograd are in C++
(csrc/); nothing here re-checks input.
"""

import torch
from torch._C import _has_torch_function_unary
from torch.compiler import is_compiling

from . import _C

# warpreduce::sum, the public op, and warpreduce::_sum, the op it forwards to, which
# carries the kernels (csrc/ops.cpp says why there are two), or for kernel="exact",
# warpreduce::_exact_sum, which runs _sum's "exact" kernel (DTensor gives it a handler of
# its own: distributed.py).
_sum_op = torch.ops.warpreduce.sum.default
_sum_kernels_op = torch.ops.warpreduce._sum.default
_exact_sum_op = torch.ops.warpreduce._exact_sum.default


def sum(input, dim=None, keepdim=False, *, dtype=None, kernel="auto"):
    """torch.sum(input, dim, keepdim, dtype=dtype), computed by the kernel `kernel`.

    `kernel` is one of ``kernels(input.device)``: "auto" (the default, the fastest) on
    every device; "exact", the exact sum rounded once (the same bits whatever the batch,
    layout, device or sharding); on CUDA also the eight staged kernels and "cub".
    """
    # A plain call goes straight to the op through a C++ binding that parses arguments
    # as torch.sum does (csrc/python.cpp says why). torch.ops is taken where Python has
    # to see the call: under torch.compile, and for tensor subclasses or modes that
    # override __torch_function__.
    if not is_compiling() and not _has_torch_function_unary(input):
        if dtype is None and kernel == "auto":
            return _C.sum(input, dim, keepdim)  # keywords cost ~0.2 us a call to pass on
        return _C.sum(input, dim, keepdim, dtype=dtype, kernel=kernel)
    if dim is not None and not isinstance(dim, (list, tuple)):
        # A dim that dynamo made dynamic (a model's x.dim() - 1, a dim that changed between
        # calls): the op's int[1] argument, like aten's own, takes a SymInt only in a list.
        dim = [dim]
    if input.is_nested:  # a jagged tensor would raise a bare NotImplementedError below
        raise NotImplementedError(
            "warpreduce.sum takes strided tensors, not nested ones: use torch.sum, or "
            "convert first (.to_padded_tensor(0))"
        )
    return _sum_op(input, dim, keepdim, dtype=dtype, kernel=kernel)


def kernels(device="cuda", role=None):
    """The names `kernel=` accepts for tensors on `device` ("cpu", "cuda", or a
    torch.device), in stage order; with `role`, only those of one role: "stage" (the
    staged kernels), "fast" (auto), "exact" (exact) or "baseline" (cub)."""
    return torch.ops.warpreduce.kernels(torch.device(device).type, role)


def dtypes():
    """The dtypes warpreduce.sum takes, in the library's order."""
    return [getattr(torch, name) for name in torch.ops.warpreduce.dtypes()]


# warpreduce::sum forwards to warpreduce::_sum (csrc/ops.cpp says why), which holds the
# kernels, autograd, this fake kernel and the vmap rule.
@torch.library.register_fake("warpreduce::_sum")
def _(self, dim, keepdim, dtype, kernel_name):
    # The real kernels' own checks (dtype, a kernel name valid on some device), then
    # torch.sum's shape and dtype rule, applied to the fake tensor: the rule the C++ plan
    # follows. The name is not checked against the fake tensor's device: DTensor (torch
    # 2.11) propagates shardings on fake tensors on the CPU whatever the mesh's device, and
    # rejected every CUDA kernel name on a CUDA mesh; the real call checks it.
    torch.ops.warpreduce._check_args(self.dtype, dtype, "meta", kernel_name)
    return torch.sum(self, dim, keepdim, dtype=dtype)


@torch.library.register_fake("warpreduce::_exact_sum")
def _(self, dim, keepdim, dtype):
    torch.ops.warpreduce._check_args(self.dtype, dtype, "meta", "exact")
    return torch.sum(self, dim, keepdim, dtype=dtype)


@torch.library.register_fake("warpreduce::_exact_digits")
def _(self, dim, keepdim, dtype):
    # The exact sums' digits (csrc/exact.h): torch.sum's result shape, then one dim of
    # _exact_digits_width int64s, which also checks that the result is a float type.
    torch.ops.warpreduce._check_args(self.dtype, dtype, "meta", "exact")
    result = torch.sum(self, dim, keepdim, dtype=dtype)
    width = torch.ops.warpreduce._exact_digits_width(result.dtype)
    return result.new_empty((*result.shape, width), dtype=torch.int64)


@torch.library.register_fake("warpreduce::_exact_from_digits")
def _(digits, dtype):
    width = torch.ops.warpreduce._exact_digits_width(dtype)
    torch._check(
        digits.dtype == torch.int64 and digits.dim() >= 1 and digits.shape[-1] == width,
        lambda: (
            f"warpreduce._exact_from_digits: expected int64 digits of last dim {width} "
            f"for {dtype}, got {digits.dtype} of shape {tuple(digits.shape)}"
        ),
    )
    return digits.new_empty(digits.shape[:-1], dtype=dtype)


@torch.library.register_vmap("warpreduce::_sum")
def _(info, in_dims, self, dim, keepdim, dtype, kernel_name):
    def op(*args):
        return _sum_kernels_op(*args, kernel_name)

    return _batched_sum(in_dims, self, dim, keepdim, dtype, op)


@torch.library.register_vmap("warpreduce::_exact_sum")
def _(info, in_dims, self, dim, keepdim, dtype):
    return _batched_sum(in_dims, self, dim, keepdim, dtype, _exact_sum_op)


def _batched_sum(in_dims, self, dim, keepdim, dtype, op):
    """torch.vmap of a sum: op(batched, dims, keepdim, dtype) once for the whole batch.

    With the batch dim (in_dims[0]) moved to the front, a sum of each sample is one sum
    that keeps dim 0 and reduces the sample's dims, shifted by one. Without this rule,
    vmap falls back to calling the op once per sample, and warns."""
    batched = self.movedim(in_dims[0], 0)
    sample_ndim = batched.dim() - 1
    if sample_ndim == 0:
        # A 0-d sample: torch.sum accepts dim 0 or -1 and returns it unreduced (int64
        # for integers). Reduce a new size-1 dim instead: "no dims" means all dims.
        _sample_dims(dim or [], 1)
        batched, dims, keepdim = batched.unsqueeze(1), [1], False
    elif not dim:  # None or []: every dim of the sample
        dims = list(range(1, sample_ndim + 1))
    else:
        dims = [d + 1 for d in _sample_dims(dim, sample_ndim)]
    return op(batched, dims, keepdim, dtype), 0


def _sample_dims(dims, ndim):
    """`dims` wrapped into [0, ndim), with torch.sum's errors for the sample's shape."""
    wrapped = []
    for d in dims:
        if not -ndim <= d < ndim:
            raise IndexError(
                f"Dimension out of range (expected to be in range of [{-ndim}, {ndim - 1}], "
                f"but got {d})"
            )
        d %= ndim
        if d in wrapped:
            raise RuntimeError(f"dim {d} appears multiple times in the list of dims")
        wrapped.append(d)
    return wrapped
