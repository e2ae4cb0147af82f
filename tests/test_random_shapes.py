"""The random-shape benchmark's shapes (warpreduce_torch.bench.random_shapes), small:
every layout, dtype and rank it draws, summed over random dims, against torch.sum; the
sampler itself, and the bytes a view must read (its roofline's size)."""

import itertools
import math

import pytest
import torch

import warpreduce_torch as wr
from warpreduce_torch.bench.random_shapes import (
    DTYPE_WEIGHTS,
    LAYOUTS,
    Case,
    make_row,
    needed_bytes,
    result_bytes,
    sample_cases,
)
from warpreduce_torch.testing import assert_sum_matches

from .support import DEVICES

MIN_BYTES, MAX_BYTES = 1 << 10, 256 << 10
CASES = sample_cases(200, seed=0, min_bytes=MIN_BYTES, max_bytes=MAX_BYTES)
IDS = [f"{i}: {case.name}" for i, case in enumerate(CASES)]


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("index", range(len(CASES)), ids=IDS)
def test_sum_matches_torch_sum(index, device):
    case = CASES[index]
    x = case.make(device, seed=index)
    assert_sum_matches(wr.sum(x, case.dims), x, case.dims)


# Apart from the values, so that a layout difference is reported as such: torch.sum's
# result is contiguous, and a result that is not breaks .view() in user code.
@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("index", range(len(CASES)), ids=IDS)
def test_result_strides_match_torch_sum(index, device):
    case = CASES[index]
    x = case.make(device, seed=index)
    result, expected = wr.sum(x, case.dims), torch.sum(x, case.dims)
    assert (result.stride(), result.is_contiguous()) == (
        expected.stride(),
        expected.is_contiguous(),
    ), f"strides {result.stride()}, torch.sum's {expected.stride()} (input strides {x.stride()})"


def test_sampler_is_repeatable_and_covers_every_layout_dtype_and_rank():
    assert sample_cases(200, 0, MIN_BYTES, MAX_BYTES) == CASES
    assert sample_cases(200, 1, MIN_BYTES, MAX_BYTES) != CASES
    assert {c.layout for c in CASES} == set(LAYOUTS)
    assert {c.dtype for c in CASES} == set(DTYPE_WEIGHTS)
    assert {len(c.shape) for c in CASES} == set(range(1, 7))
    assert any(c.dims is None for c in CASES) and any(
        c.dims is not None and min(c.dims) < 0 for c in CASES
    )
    for case in CASES[:50]:
        x = case.make("cpu")
        assert tuple(x.shape) == case.shape
        assert MIN_BYTES <= x.numel() * x.element_size() <= MAX_BYTES
        if case.layout == "strided_last":
            assert x.stride(-1) == 2


def sectors_by_hand(x):
    """The 32-byte sectors x reads, element by element."""
    base = x.untyped_storage().data_ptr()
    assert base % 32 == 0
    sectors = set()
    for index in itertools.product(*(range(s) for s in x.shape)):
        offset = x.storage_offset() + sum(i * s for i, s in zip(index, x.stride()))
        sectors.add(offset * x.element_size() // 32)
    return len(sectors) * 32


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32, torch.bfloat16, torch.int8])
def test_needed_bytes_counts_the_sectors_a_view_reads(dtype):
    base = torch.zeros(12, 10, 9, dtype=dtype)
    views = [
        base,
        base[::2],
        base[..., ::2],
        base[:, 1:, 3:],
        base.permute(2, 0, 1),
        base[:1].expand(5, -1, -1),
        base[3, ::3, 1],
        base[:, :0],
    ]
    for view in views:
        assert needed_bytes(view) == (sectors_by_hand(view) if view.numel() else 0)
    assert needed_bytes(base) == math.ceil(base.numel() * base.element_size() / 32) * 32


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.int8, torch.bool])
def test_result_bytes_are_torch_sums(dtype):
    x = torch.zeros(6, 5, 4, dtype=dtype)
    for dims in (None, (1,), (0, -1), (-3, 1, 2)):
        expected = torch.sum(x) if dims is None else torch.sum(x, dims)
        assert result_bytes(x, dims) == expected.numel() * expected.element_size()


def test_memory_bound_counts_the_result_too():
    # int8 4 x 1000 over dim 0: 4000 bytes read, 1000 int64 outputs written (8000 bytes)
    case = Case((4, 1000), (0,), "contiguous", "int8")
    x = case.make("cpu")
    times = {"torch.sum": 3e-6, "auto": 2e-6, "roofline": 1e-6}
    row = make_row(0, case, times, (x, needed_bytes(x), {}, None))
    assert row["written_mib"] * 2**20 == 8000
    assert row["auto_vs_roofline"] == pytest.approx(0.5)
    assert row["auto_vs_memory"] == pytest.approx(0.5 * (4000 + 8000) / 4000)
