"""Random inputs and the comparison with torch.sum: one source for the tests, the
benchmarks and the stress programs.

    from warpreduce_torch.testing import random_tensor, assert_sum_matches
    x = random_tensor((1000, 33), torch.bfloat16, "cuda", seed=1)
    assert_sum_matches(warpreduce_torch.sum(x, 0), x, 0)
"""

import math

import torch


def random_tensor(shape, dtype, device, seed=0, *, mean=0.5):
    """Random data, never zeros (zeros can run faster than real data and hide wrong
    results), made on `device`: floats normal around `mean` (positive by default, so that
    an error relative to sum(|x|) means something; 0 keeps long float16 sums finite);
    integers over the dtype's whole range, so that int64 sums wrap; bools half true."""
    g = torch.Generator(device).manual_seed(seed)
    if dtype.is_floating_point:
        x = torch.randn(shape, generator=g, device=device, dtype=torch.float32) + mean
        return x.to(dtype)
    if dtype.is_complex:
        return torch.randn(shape, generator=g, device=device, dtype=dtype) + mean
    if dtype == torch.bool:
        return torch.rand(shape, generator=g, device=device) < 0.5
    if dtype == torch.uint64:  # random bits: past int64's range too
        x = torch.randint(-(2**63), 2**63 - 1, shape, generator=g, device=device)
        return x.view(torch.uint64)
    info = torch.iinfo(dtype)
    wide = torch.randint(info.min, info.max, shape, generator=g, device=device)
    return wide.to(dtype)


def layouts(x):
    """Views of a 2-D tensor x of shape (m, n), m and n even, that are not contiguous."""
    return {
        "transposed": x.t(),
        "sliced_steps": x[::2, ::3],
        "offset": x[:, 1:],  # data pointer off the 16-byte boundary
        "expanded": x[:1].expand(5, -1),  # stride 0
        "column": x[:, 3],
        "permuted_3d": x.reshape(x.shape[0], -1, 2).permute(2, 0, 1),
    }


VIEW_LAYOUTS = ["contiguous", "transposed", "permuted", "sliced", "offset", "expanded"]


def random_view(shape, layout, dtype, device, seed=0, *, mean=0.5):
    """A random tensor of `shape` in `layout` (one of VIEW_LAYOUTS): a view of a random
    base tensor (random_tensor's, around `mean`), read through its strides."""
    shape = tuple(shape)
    if layout == "contiguous" or len(shape) == 0:
        return random_tensor(shape, dtype, device, seed, mean=mean)
    if layout == "transposed":  # the last two dims swapped (or a 1-D stride 1 view)
        if len(shape) < 2:
            return random_tensor(shape, dtype, device, seed, mean=mean)
        base = random_tensor(shape[:-2] + (shape[-1], shape[-2]), dtype, device, seed, mean=mean)
        return base.transpose(-1, -2)
    if layout == "permuted":  # dims reversed
        base = random_tensor(shape[::-1], dtype, device, seed, mean=mean)
        return base.permute(*reversed(range(len(shape))))
    if layout == "sliced":  # every other element of the first dim, a prefix of the last
        big = (
            (2 * shape[0],) + shape[1:-1] + (shape[-1] + 3,) if len(shape) > 1 else (2 * shape[0],)
        )
        base = random_tensor(big, dtype, device, seed, mean=mean)
        view = base[::2]
        return view[..., : shape[-1]] if len(shape) > 1 else view
    if layout == "offset":  # the data pointer one element past a 16-byte boundary
        base = random_tensor(shape[:-1] + (shape[-1] + 1,), dtype, device, seed, mean=mean)
        return base[..., 1:]
    if layout == "expanded":  # the first dim broadcast (stride 0)
        base = random_tensor((1,) + shape[1:], dtype, device, seed, mean=mean)
        return base.expand(shape)
    raise ValueError(layout)


def in_tight_storage(x):
    """x's elements in a storage of their own that ends at x's last element (nothing to
    read past it), with x's sizes, strides and offset."""
    last = x.storage_offset() + sum((s - 1) * t for s, t in zip(x.shape, x.stride()))
    return (
        x.as_strided((last + 1,), (1,), 0)
        .clone()
        .as_strided(x.shape, x.stride(), x.storage_offset())
    )


def reduced_length(shape, dim):
    """How many elements each output of a sum over `dim` adds."""
    if dim is None or (not isinstance(dim, int) and len(dim) == 0):
        return math.prod(shape)
    dims = [dim] if isinstance(dim, int) else dim
    return math.prod(shape[d] for d in dims) if shape else 1


# CUB's DeviceSegmentedReduce gives a segment one block of 256 threads, each of which adds
# its share of the segment in turn: a chain of n / 256 additions, where the bound below
# allows log2(n) (on 2 GPUs, 65539 int64 values of any magnitude cast to float64 erred by
# 66 eps of sum|x| through kernel='cub').
CHAINS = {"cub": lambda n: n / 256}


def round_float64(values, dtype):
    """float64 `values` (a tensor) rounded once to `dtype`, to nearest, ties to even.
    Not values.to(dtype): torch converts float64 to float16 and bfloat16 through float32,
    rounding twice. float16 and float32 take numpy's direct conversion; bfloat16 goes
    through float32 rounded to odd (truncated, its last bit set where inexact), which then
    rounds to bfloat16 as once (Boldo and Melquiond, "Emulation of FMA and correctly
    rounded sums: proved algorithms using rounding to odd", 2008)."""
    import numpy as np

    v = values.double().cpu().numpy()
    if dtype == torch.float64:
        return torch.from_numpy(v.copy())
    if dtype in (torch.float32, torch.float16):
        return torch.from_numpy(v.astype(np.float32 if dtype == torch.float32 else np.float16))
    if dtype != torch.bfloat16:
        raise ValueError(dtype)
    with np.errstate(over="ignore", invalid="ignore"):
        nearest = v.astype(np.float32)
        away = np.abs(nearest.astype(np.float64)) > np.abs(v)
        truncated = np.where(away, np.nextafter(nearest, np.float32(0)), nearest)
        inexact = truncated.astype(np.float64) != v
    bits = truncated.view(np.uint32) | inexact.astype(np.uint32)
    odd = np.where(np.isfinite(v), bits.view(np.float32), nearest)
    return torch.from_numpy(odd).to(torch.bfloat16)


def _torch_sum(x, dim, keepdim, dtype=None):
    # dim=None as torch.sum(x): torch.sum(x, None) refuses more than 64 dims.
    if dim is None and not keepdim:
        return torch.sum(x, dtype=dtype)
    return torch.sum(x, dim=dim, keepdim=keepdim, dtype=dtype)


def assert_sum_matches(result, x, dim=None, keepdim=False, dtype=None, kernel="auto"):
    """`result` is torch.sum(x, dim, keepdim, dtype=dtype): same shape, dtype and device;
    integers exactly; floats within a tolerance that grows with the reduced length (and
    with the serial chains of `kernel`'s summation order), against a float64 reference."""
    expected = _torch_sum(x, dim, keepdim, dtype)
    assert result.shape == expected.shape
    assert result.dtype == expected.dtype
    assert result.device == expected.device
    # The values compared flat: torch 2.11's elementwise kernels take at most 64 dims,
    # where a sum with keepdim of a 65-dim input gives 65.
    result, expected = result.reshape(-1), expected.reshape(-1)
    if not (expected.dtype.is_floating_point or expected.dtype.is_complex):
        assert torch.equal(result, expected), (result, expected)
        return
    source = x if dtype is None else x.to(dtype)  # dtype= casts first
    wide = torch.complex128 if source.dtype.is_complex else torch.float64
    ref = _torch_sum(source.to(wide), dim, keepdim).reshape(-1)
    abs_ref = _torch_sum(source.to(wide).abs(), dim, keepdim).reshape(-1)
    n = reduced_length(tuple(x.shape), dim)
    # One rounding of the result, plus a pairwise-like bound for the summation itself.
    acc_eps = torch.finfo(torch.float64 if expected.dtype == torch.float64 else torch.float32).eps
    chain = math.log2(n + 2) + CHAINS.get(kernel, lambda n: 0)(n)
    tol = torch.finfo(expected.dtype).eps * ref.abs() + 2 * acc_eps * chain * abs_ref
    err = (result.to(wide) - ref).abs()
    # NaN where the sum of the cast elements is NaN (+inf and -inf among them): torch.sum
    # casts during the reduction on some paths (integers beyond float16's range summed
    # with dtype=torch.float16 can give it inf), where its documented rule casts first.
    # (Masks, not indexing: boolean indexing of tensors of more than 25 dims fails on CUDA.)
    nan = ref.isnan()
    assert torch.all(result.isnan() | ~nan)
    finite = torch.isfinite(expected) & ~nan
    within = (err <= tol) | ~finite
    assert torch.all(within), (
        f"max error {torch.where(finite, err, 0).max().item():.3g}, tolerance "
        f"{torch.where(finite, tol, float('inf')).min().item():.3g}"
    )
    # Elsewhere, where torch.sum gives inf (an input inf, or overflow of float16) or NaN,
    # the same.
    special = ~finite & ~nan
    assert torch.all((result.isnan() == expected.isnan()) | ~special)
    inf = expected.isinf() & ~nan
    if expected.dtype.is_complex:
        # Part by part: where one part is infinite, the other is still a finite sum, which
        # may round differently from torch.sum's (within the tolerance above).
        for k in range(2):
            got, want = torch.view_as_real(result)[..., k], torch.view_as_real(expected)[..., k]
            finite_part = torch.isfinite(want)
            close = (got.to(torch.float64) - torch.view_as_real(ref)[..., k]).abs() <= tol
            assert torch.all((got == want) | finite_part | ~inf)
            assert torch.all(close | ~finite_part | ~inf)
        return
    assert torch.all((result == expected) | ~inf)
