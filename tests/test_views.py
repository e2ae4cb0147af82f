"""warpreduce_torch.sum against torch.sum on random views: ranks up to 9, and up to 64 dims
with size-1 dims added (permute, slices with steps and offsets, expand, transpose,
unsqueeze), random dim lists (negative, repeated, out of range, empty = all), keepdim,
every dtype and dtype=. Values as assert_sum_matches says, and the result's dtype, shape,
strides and contiguity exactly torch.sum's; where torch.sum raises, the same error type.

CI runs a few hundred views a device; WARPREDUCE_VIEW_CASES=N runs N (the GPU machine's
reliability step runs 10,000), with WARPREDUCE_VIEW_SEED choosing the views. A failing
view prints its seed and number: `View(seed, number)` makes it again.
"""

import dataclasses
import os
import random

import pytest
import torch

import warpreduce_torch as wr
from warpreduce_torch.testing import assert_sum_matches, random_tensor

from .support import DEVICES, DTYPES

CASES = int(os.environ.get("WARPREDUCE_VIEW_CASES", "400"))
SEED = int(os.environ.get("WARPREDUCE_VIEW_SEED", "0"))
MAX_ELEMENTS = 4096  # of the base tensor


@dataclasses.dataclass(frozen=True)
class View:
    """The view and the call numbered `number` of the views drawn from `seed`."""

    seed: int
    number: int

    def make(self, device):
        """(x, dim, keepdim, dtype): the view and the arguments of the call."""
        rng = random.Random(self.seed * 1_000_003 + self.number)
        rank = rng.randint(1, 9)
        shape = [1] * rank
        budget = MAX_ELEMENTS
        for d in rng.sample(range(rank), rank):  # sizes 0-7, within the budget
            size = rng.choice([0, 1, 1, 2, 2, 3, 4, 5, 7]) if rng.random() < 0.9 else 1
            if size and budget // size >= 1:
                shape[d] = size
                budget //= max(size, 1)
            elif size == 0 and rng.random() < 0.3:
                shape[d] = 0
        dtype = rng.choice(DTYPES)
        x = random_tensor(tuple(shape), dtype, device, seed=self.number)
        for _ in range(rng.randint(1, 4)):
            x = _random_view(x, rng)
        dim = _random_dims(x.dim(), rng)
        keepdim = rng.random() < 0.5
        out_dtype = rng.choice([None] * 6 + DTYPES)
        return x, dim, keepdim, out_dtype


def _random_view(x, rng):
    op = rng.choice(["permute", "slice", "expand", "transpose", "unsqueeze", "many_dims"])
    n = x.dim()
    if op == "permute" and n > 1:
        return x.permute(*rng.sample(range(n), n))
    if op == "transpose" and n > 1:
        return x.transpose(rng.randrange(n), rng.randrange(n))
    if op == "slice" and n > 0:
        d = rng.randrange(n)
        size = x.size(d)
        start = rng.randint(0, max(size - 1, 0))
        step = rng.choice([1, 2, 3])
        index = [slice(None)] * n
        index[d] = slice(start, size, step)
        return x[tuple(index)]
    if op == "expand":
        d = rng.randint(0, n)
        return x.unsqueeze(d).expand(*x.shape[:d], rng.choice([2, 3]), *x.shape[d:])
    if op == "unsqueeze":
        return x.unsqueeze(rng.randint(0, n))
    if op == "many_dims":  # size-1 dims, up to 64 dims in all (or 65: torch.sum's limit)
        for _ in range(rng.choice([16, 33, 64, 65]) - n):
            x = x.unsqueeze(rng.randint(0, x.dim()))
        return x
    return x


def _random_dims(ndim, rng):
    kind = rng.random()
    if kind < 0.1:
        return None
    if kind < 0.15:
        return ()
    if ndim == 0:
        return rng.choice([0, -1, (0,), 1])
    count = rng.randint(1, min(ndim, 4))
    dims = [d - ndim if rng.random() < 0.3 else d for d in rng.sample(range(ndim), count)]
    if rng.random() < 0.05:
        dims.append(dims[0])  # repeated: torch.sum raises RuntimeError
    if rng.random() < 0.03:
        dims.append(ndim + 1)  # out of range: IndexError
    return dims[0] if len(dims) == 1 and rng.random() < 0.5 else tuple(dims)


def check_like_torch_sum(x, dim, keepdim, dtype):
    try:
        if dim is None and not keepdim:
            # As torch.sum(x): torch.sum(x, None) refuses tensors of more than 64 dims,
            # which torch.sum(x) sums, and the op cannot tell the two calls apart.
            expected = torch.sum(x, dtype=dtype)
        else:
            expected = torch.sum(x, dim, keepdim, dtype=dtype)
    except Exception as error:  # noqa: BLE001 (the type is what is compared)
        with pytest.raises(type(error)):
            wr.sum(x, dim, keepdim, dtype=dtype)
        return
    result = wr.sum(x, dim, keepdim, dtype=dtype)
    assert_sum_matches(result, x, dim, keepdim, dtype)
    assert result.stride() == expected.stride()
    assert result.is_contiguous() == expected.is_contiguous()


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("block", range(8))
def test_random_views(device, block):
    for number in range(block, CASES, 8):
        view = View(SEED, number)
        x, dim, keepdim, dtype = view.make(device)
        try:
            check_like_torch_sum(x, dim, keepdim, dtype)
        except AssertionError as failure:
            raise AssertionError(
                f"{view}: {tuple(x.shape)} {x.stride()} {x.dtype} dim={dim} "
                f"keepdim={keepdim} dtype={dtype}"
            ) from failure


@pytest.mark.parametrize("device", DEVICES)
def test_opcheck_on_views(device):
    checked = 0
    for number in range(CASES):
        x, dim, keepdim, dtype = View(SEED, number).make(device)
        if x.numel() == 0 or x.dim() > 12 or (x.dtype.is_complex or dtype is not None):
            continue
        try:
            torch.sum(x, dim, keepdim)
        except Exception:  # noqa: BLE001 (opcheck is for calls that run)
            continue
        dims = [dim] if isinstance(dim, int) else dim
        torch.library.opcheck(torch.ops.warpreduce.sum.default, (x, dims, keepdim))
        checked += 1
        if checked == 12:
            break
    assert checked == 12


def test_views_cover_every_dtype_and_up_to_65_dims():
    views = [View(SEED, n).make("cpu") for n in range(400)]
    assert {x.dtype for x, *_ in views} == set(DTYPES)
    assert {64, 65} <= {x.dim() for x, *_ in views}
    assert any(not x.is_contiguous() and x.numel() > 1 for x, *_ in views)
