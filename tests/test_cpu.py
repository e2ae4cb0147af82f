"""The CPU kernels (csrc/cpu/) against torch.sum, path by path: rows (contiguous, strided,
split into chunks), columns (contiguous, strided, split into chunks), several passes, the
copied layout; every dtype and lengths around each block size on the reduced and the
kept side; integers exact with torch.sum's wraparound; float error no worse than
torch.sum's; the same bits for any thread count; each instruction-set build, and that
nothing outside those builds uses their instructions."""

import math
import os
import platform
import re
import shutil
import subprocess
import sys

import pytest
import torch

import warpreduce_torch as wr
from warpreduce_torch import _C
from warpreduce_torch.testing import (
    VIEW_LAYOUTS,
    assert_sum_matches,
    in_tight_storage,
    random_tensor,
    random_view,
)

from .support import DTYPES


def plan(x, dim):
    dims = None if dim is None else [dim] if isinstance(dim, int) else list(dim)
    return _C.plan(x, dims)


def kinds(x, dim):
    return [p["kind"] for p in plan(x, dim)["passes"]]


@pytest.fixture
def restore_threads():
    saved = torch.get_num_threads()
    yield
    torch.set_num_threads(saved)


# Row lengths around the kernels' sizes: a vector (4 to 16 elements), a leaf (64 vectors),
# a chunk a task sums (2^14), several chunks; primes.
ROW_LENGTHS = [1, 2, 3, 7, 31, 33, 127, 1021, 1025, 2**14 - 1, 2**14 + 1, 3 * 2**14 + 5, 65537]


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_rows(dtype):
    for length in ROW_LENGTHS:
        for rows in (1, 3):
            x = random_tensor((rows, length), dtype, "cpu", seed=length + rows)
            assert_sum_matches(wr.sum(x, -1), x, -1)
            assert_sum_matches(wr.sum(x, -1, keepdim=True), x, -1, keepdim=True)
            assert_sum_matches(wr.sum(x), x)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16, torch.float16])
@pytest.mark.parametrize("length", [9, 10, 17, 33, 300, 511])
def test_short_rows_keep_their_bits_in_any_batch(dtype, length):
    """Short rows are summed a vector's width of rows at a time (horizontal_sums: 8 float
    or 4 double rows on AVX2, 16 or 8 on AVX-512): a row's bits must not depend on how many
    rows come with it, or where it sits among them."""
    x = random_tensor((37, length + 1), dtype, "cpu", seed=length)[:, 1:]  # unaligned too
    whole = wr.sum(x, -1)
    assert_sum_matches(whole, x, -1)
    for begin, end in [(0, 1), (0, 3), (0, 8), (5, 14), (15, 17), (3, 20), (36, 37), (1, 37)]:
        assert torch.equal(wr.sum(x[begin:end], -1), whole[begin:end]), (begin, end)


# Reduced lengths around a block of rows (16) and a chunk (256); kept widths around a
# vector, a group of vectors (64 floats) and a tile (2048 floats, 1024 doubles).
COLUMN_LENGTHS = [2, 15, 17, 255, 257, 1023]
COLUMN_WIDTHS = [3, 17, 33, 65, 1031, 2049]


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_columns(dtype):
    for length in COLUMN_LENGTHS:
        for width in COLUMN_WIDTHS:
            x = random_tensor((length, width), dtype, "cpu", seed=length * width)
            assert kinds(x, 0) == ["columns"]
            assert_sum_matches(wr.sum(x, 0), x, 0)
    x = random_tensor((3, 257, 65), dtype, "cpu")  # under an outer dim
    assert_sum_matches(wr.sum(x, 1, keepdim=True), x, 1, keepdim=True)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16, torch.float16])
def test_rows_ignore_what_follows(dtype):
    """Rows end in a whole vector load with the lanes past the row zeroed, where the input
    goes on: NaN and inf after each row (a sliced view) must not leak; the last row's load
    would pass the end of the input and is partial. Short rows, and long rows whose last
    leaf is partial (leaves of 256-1024 elements by dtype and instruction set; a chunk of
    2^14)."""
    for length in [9, 15, 17, 31, 33, 40, 63, 65, 127, 129, 257, 300, 1000, 1031, 2053, 2**14 + 9]:
        base = random_tensor((37, length + 5), dtype, "cpu", seed=length)
        base[:, length:] = float("nan")
        base[:, length + 2 :] = float("inf")
        for x in (base[:, :length], base[:, :length][:, ::1].expand(2, 37, length)):
            assert_sum_matches(wr.sum(x, -1), x, -1)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16, torch.float16])
def test_columns_ignore_what_follows(dtype):
    """A partial last vector of columns is read whole where the input goes on, its extra
    lanes summed into the tile's padding: NaN and inf right of the columns must not leak."""
    for width in [3, 17, 65, 135, 228, 2049]:
        base = random_tensor((300, width + 5), dtype, "cpu", seed=width)
        base[:, width:] = float("nan")
        base[:, width + 2 :] = float("inf")
        for x in (base[:, :width], base[:, :width].expand(2, 300, width)):
            assert_sum_matches(wr.sum(x, -2), x, -2)


# Narrow columns whose rows are packed (x.sum(0) of an (n, inner) tensor) are read m rows
# at a time as rows of m * inner columns (a multiple of 16, at least 64 wide) while there
# are at least 16 such rows: inner around 16 and 64, primes; lengths on both sides of 16
# wide rows for m = 16 (inner 3, 5, 7, 33 ...) and m = 32 (inner 2), with and without rows
# left over.
NARROW_WIDTHS = [2, 3, 5, 7, 15, 16, 17, 31, 33, 48, 63, 64, 65]
NARROW_LENGTHS = [1, 2, 15, 255, 256, 257, 511, 512, 513, 1025, 70001]


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_narrow_packed_columns(dtype):
    for inner in NARROW_WIDTHS:
        for length in NARROW_LENGTHS:
            x = random_tensor((length, inner), dtype, "cpu", seed=length + inner)
            assert_sum_matches(wr.sum(x, 0), x, 0)
    x = random_tensor((3, 4099, 5), dtype, "cpu")  # under an outer dim, and two merged dims
    assert_sum_matches(wr.sum(x, 1), x, 1)
    assert_sum_matches(wr.sum(x, (0, 1)), x, (0, 1))
    offset = random_tensor((3 * 4099 * 7 + 1,), dtype, "cpu")[1:].view(3, 4099, 7)
    assert_sum_matches(wr.sum(offset, 1, keepdim=True), offset, 1, keepdim=True)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("inner", [2, 3, 4, 5, 6, 7, 8, 12, 16, 18, 22, 24, 40])
def test_folded_packed_columns(dtype, inner):
    """Packed columns under an outer dim: each outer slice summed as one row, its lanes
    folded into the outputs (folded_packed_columns: columns that divide a vector's width,
    or periods of 3 to 11 vectors); slices shorter than a vector, than a leaf, longer
    than a leaf, and past a task's chunk of a row (2^14 elements: chunks of whole periods,
    two, and four the last partial). A slice's bits do not depend on the others."""
    for length in (1, 3, 5, 31, 129, 257, 1025, 4097, 2**14 // inner + 1, 3 * 2**14 // inner + 7):
        x = random_tensor((37, length, inner), dtype, "cpu", seed=length + inner)
        whole = wr.sum(x, 1)
        assert_sum_matches(whole, x, 1)
        assert torch.equal(wr.sum(x[5:9], 1), whole[5:9])
        offset = random_tensor((5 * length * inner + 1,), dtype, "cpu")[1:]
        offset = offset.view(5, length, inner)
        assert_sum_matches(wr.sum(offset, 1, keepdim=True), offset, 1, keepdim=True)


# Narrow columns of an outer dim of a slightly larger stride ((length, n, span)[..., :inner],
# dim 0) are summed a whole span at a time, gaps included, when span <= 2 * inner: both
# sides of that limit and of 64 columns; the gaps hold inf and NaN, which must not leak.
GAPPED = [(2, 3), (2, 4), (2, 5), (7, 8), (5, 10), (5, 11), (31, 33), (63, 64), (63, 65), (64, 65)]


def with_poisoned_gaps(shape, dtype, inner, seed):
    """The first `inner` elements of the last dim of a random tensor of `shape`, whose
    other elements (the gaps) hold NaN and inf for float dtypes."""
    base = random_tensor(shape, dtype, "cpu", seed=seed)
    if dtype.is_floating_point:
        base[..., inner:] = float("nan")
        base[..., inner + 1 :] = float("inf")
    return base[..., :inner]


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_narrow_gapped_columns(dtype):
    for inner, span in GAPPED:
        for length, count in [(1, 2), (3, 5), (257, 3), (1025, 33)]:
            x = with_poisoned_gaps((2, length, count, span), dtype, inner, seed=inner + length)
            assert_sum_matches(wr.sum(x[0], 0), x[0], 0)
            assert_sum_matches(wr.sum(x, 1), x, 1)  # under another outer dim
            expanded = x[0, :, :1].expand(length, 3, inner)  # an outer dim of stride 0
            assert_sum_matches(wr.sum(expanded, 0), expanded, 0)


# Narrow columns of rows a little further apart than they are wide ((length, span)[:, :inner],
# dim 0) are summed as packed rows of the whole span, gaps included, when span <= 2 *
# inner, each slice's last row added after (its gap may lie past the storage); the gaps
# hold inf and NaN, which must not leak.
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_gapped_row_columns(dtype):
    for inner, span in GAPPED:
        for length in [1, 2, 3, 257, 1025]:
            x = with_poisoned_gaps((3, length, span), dtype, inner, seed=inner + length)
            assert_sum_matches(wr.sum(x[0], 0), x[0], 0)
            assert_sum_matches(wr.sum(x, 1), x, 1)  # under another outer dim
            tight = in_tight_storage(x)  # the storage ends at the last element
            assert_sum_matches(wr.sum(tight, 1), tight, 1)


# Columns a step apart ((length, inner * step)[:, ::step], dim 0) are summed as the
# adjacent columns of their whole span, every step-th sum kept: steps 2-4 (5 takes scalar
# loads), narrow spans on both sides of 64, wide ones (one columns pass that keeps every
# step-th sum, over tiles of 2048 floats that a step of 3 does not divide); the skipped
# elements hold inf and NaN, which must not leak into the kept sums.
STEPPED = [
    (2, 2),
    (4, 2),
    (5, 3),
    (3, 4),
    (31, 2),
    (32, 2),
    (33, 2),
    (21, 3),
    (22, 3),
    (4, 5),
    (40, 2),
    (837, 2),
    (1001, 3),
    (250, 4),
    (700, 4),
]


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_stepped_columns(dtype):
    for inner, step in STEPPED:
        for length in [1, 3, 257, 1025]:
            base = random_tensor((2, length, inner * step), dtype, "cpu", seed=inner + length)
            if dtype.is_floating_point:
                base[..., 1::step] = float("nan")
                if step > 2:
                    base[..., 2::step] = float("inf")
            x = base[..., ::step]
            assert_sum_matches(wr.sum(x[0], 0), x[0], 0)
            assert_sum_matches(wr.sum(x, 1), x, 1)  # under another outer dim
            assert_sum_matches(wr.sum(x, (0, 1)), x, (0, 1))
            # The rows' last skipped elements read where the storage holds them (the
            # plan's slack), and not where it ends at the last kept element.
            tight = in_tight_storage(x)
            if length > 1:  # (else no pass: a copy)
                assert plan(x, 1)["passes"][0]["slack"] == step - 1
                assert plan(tight, 1)["passes"][0]["slack"] == 0
            assert_sum_matches(wr.sum(tight, 1), tight, 1)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_strided_rows_and_columns(dtype):
    base = random_tensor((66, 2**14 + 9), dtype, "cpu")
    rows = base[:, ::3]  # rows of elements 3 apart
    (p,) = plan(rows, 1)["passes"]
    assert p["kind"] == "rows" and p["reduced_stride"] == 3
    assert_sum_matches(wr.sum(rows, 1), rows, 1)
    long_rows = random_tensor((2, 3 * 2**14 + 1), dtype, "cpu")[:, ::2]  # several chunks
    assert_sum_matches(wr.sum(long_rows, 1), long_rows, 1)
    columns = base[::2, :1200:3]  # columns 3 apart
    (p,) = plan(columns, 0)["passes"]
    assert p["kind"] == "columns" and p["inner_stride"] == 3
    assert_sum_matches(wr.sum(columns, 0), columns, 0)
    expanded = base[:1, :70].expand(300, 70)  # rows 0 apart: exact reads each of them
    assert_sum_matches(wr.sum(expanded, 0, kernel="exact"), expanded, 0, kernel="exact")
    assert_sum_matches(wr.sum(expanded, 0), expanded, 0)
    one = base[0, 0].expand(1000)  # one element read 1000 times
    assert_sum_matches(wr.sum(one), one)


# Strides that divide a vector's lanes (read as the whole span, every s-th lane kept:
# 2 to 16 across dtypes and instruction sets) and some that do not (3, 5, 32); lengths
# around the tiny-row limit (8), a vector, a leaf and a chunk; the spans end short of
# their base, at it and past a vector's worth of slack.
LANE_STRIDES = [2, 3, 4, 5, 8, 16, 32]
LANE_LENGTHS = [1, 2, 3, 7, 8, 9, 17, 31, 33, 127, 1025, 2**14 + 3]


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_rows_at_small_strides(dtype):
    for stride in LANE_STRIDES:
        for length in LANE_LENGTHS:
            if length * stride > 2**16:
                continue
            base = random_tensor((3, length * stride + 1), dtype, "cpu", seed=stride * length)
            for rows in (base[:, : length * stride : stride], base[:, 1::stride][:, :length]):
                if length > 1:
                    (p,) = plan(rows, 1)["passes"]
                    assert p["kind"] == "rows" and p["reduced_stride"] == stride
                assert_sum_matches(wr.sum(rows, 1), rows, 1)
            flat = base[0, : length * stride : stride]  # the full sum of a strided vector
            assert_sum_matches(wr.sum(flat), flat)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_tiny_rows(dtype):
    """Rows of 1 to 17 elements (scalar adds up to 8 floats, 16 integers), packed, strided,
    under sliced and expanded outer dims."""
    for length in range(1, 18):
        x = random_tensor((1031, length), dtype, "cpu", seed=length)
        assert_sum_matches(wr.sum(x, 1), x, 1)
        wide = random_tensor((257, 3 * length + 2), dtype, "cpu", seed=length)
        for rows in (wide[:, 1 : length + 1], wide[:, : 3 * length : 3], wide[::2, 2::3]):
            assert_sum_matches(wr.sum(rows, 1), rows, 1)
        expanded = x[:33].expand(5, 33, length)
        assert_sum_matches(wr.sum(expanded, -1), expanded, -1)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_tiny_columns(dtype):
    """A few rows of a few columns under each outer index (each output a tiny row down its
    column): up to and past the limits of both (8 float rows, 16 integer ones; 16 float
    columns, 12 integer ones), rows packed or apart, columns of stride 1 or 2, sliced outer
    dims, an unaligned start."""
    for length in (1, 2, 3, 4, 7, 8, 9, 16, 17):
        for inner in (1, 2, 3, 6, 12, 13, 16, 17):
            for pad in (0, 1, 3):
                base = random_tensor((67, length, 2 * inner + pad + 1), dtype, "cpu", seed=length)
                for x in (
                    base[:, :, 1 : inner + 1],
                    base[:, :, : 2 * inner : 2],
                    base[::2, :, pad : pad + inner],
                ):
                    assert_sum_matches(wr.sum(x, 1), x, 1)
                    assert_sum_matches(wr.sum(x, (0, 1)), x, (0, 1))


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_several_passes_and_the_copied_layout(dtype):
    for shape, dim in [
        ((5, 33, 7, 9), (0, 2)),
        ((4, 17, 300, 3), (0, 2, 3)),
        ((3, 1025, 2, 33), (1, 3)),
        ((300, 5, 70), (0, 2)),
        ((3, 40, 33, 6), (1, 3)),  # the columns of 40 first, then the rows of 6
    ]:
        x = random_tensor(shape, dtype, "cpu")
        assert len(plan(x, dim)["passes"]) >= 2
        assert_sum_matches(wr.sum(x, dim), x, dim)
        assert_sum_matches(wr.sum(x, dim, keepdim=True), x, dim, keepdim=True)
    x = random_tensor((3, 4, 5, 6, 7, 8), dtype, "cpu")[::2, ::2, ::2, ::2, ::2, ::2]
    assert plan(x, 5)["copied"]
    assert_sum_matches(wr.sum(x, 5), x, 5)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("layout", VIEW_LAYOUTS)
def test_layouts(dtype, layout):
    for shape in [(33, 1025), (31, 5, 67), (2, 3, 17, 65)]:
        x = random_view(shape, layout, dtype, "cpu", seed=len(shape))
        for dim in [None, 0, -1, 1, (0, -1)]:
            assert_sum_matches(wr.sum(x, dim), x, dim)


# --- integers: exact, wrapping like torch.sum's int64 -----------------------------------


@pytest.mark.parametrize("dtype", [torch.int8, torch.uint8, torch.int16, torch.bool], ids=str)
def test_narrow_integers_at_their_extremes(dtype):
    """8- and 16-bit values add in 32-bit lanes a block at a time: the largest values over
    several blocks must not overflow them."""
    n = 5 * 2**16 + 3
    for value in (
        [True] if dtype == torch.bool else [torch.iinfo(dtype).max, torch.iinfo(dtype).min]
    ):
        x = torch.full((n,), value, dtype=dtype)
        assert wr.sum(x).item() == n * int(value)
        rows = x[: 5 * 2**16].view(5, 2**16)
        assert torch.equal(wr.sum(rows, 1), torch.sum(rows, 1))
        assert torch.equal(wr.sum(rows, 0), torch.sum(rows, 0))


@pytest.mark.parametrize("dim", [None, 0, 1, (0, 2)])
def test_int64_wraps_like_torch_in_every_pass(dim):
    big = torch.iinfo(torch.int64).max
    x = torch.randint(big - 1000, big, (33, 70, 5), dtype=torch.int64)
    for view in (x, x.transpose(0, 1), x[:, ::2]):
        assert_sum_matches(wr.sum(view, dim), view, dim)


# --- float error over many inputs -------------------------------------------------------


def float_error(fn, x, dim, ref):
    return (fn(x, dim).double() - ref).abs().mean().item()


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16], ids=str)
@pytest.mark.parametrize(
    "shape,dim",
    [((1 << 18,), 0), ((1024, 1024), 0), ((1024, 1024), 1), ((64, 300, 64), (0, 2))]
    + [((64, 4000, 4), 1)],  # folded packed columns
    ids=str,
)
def test_float_error_no_worse_than_torch_sum(dtype, shape, dim):
    """Mean error against a float64 sum over 20 inputs, at most torch.sum's, give or take
    half an ulp of the results (the rounding of the result itself)."""
    ours = theirs = half_ulp = 0.0
    for seed in range(20):
        x = random_tensor(shape, dtype, "cpu", seed)
        ref = x.double().sum(dim)
        ours += float_error(wr.sum, x, dim, ref)
        theirs += float_error(torch.sum, x, dim, ref)
        half_ulp += (torch.finfo(dtype).eps * ref.abs() / 2).mean().item()
    assert ours <= theirs + half_ulp, (ours / 20, theirs / 20, half_ulp / 20)


def test_float64_error_no_worse_than_torch_sum():
    """float64 against an exactly rounded sum (math.fsum)."""
    ours = theirs = 0.0
    for seed in range(10):
        x = random_tensor((1 << 16,), torch.float64, "cpu", seed)
        exact = math.fsum(x.tolist())
        ours += abs(wr.sum(x).item() - exact)
        theirs += abs(torch.sum(x).item() - exact)
    assert ours <= theirs + 10 * torch.finfo(torch.float64).eps * abs(exact) / 2


def test_float16_outputs_round_like_torch():
    """float16 outputs are converted from float sums a vector at a time in the AVX2 and
    AVX-512 builds: the same rounding as c10::Half's (to nearest, ties to even), overflow
    to inf, subnormals, NaN and inf kept. The inputs make every float sum exact (values
    of one narrow range of exponents), so the reference is the exact sum rounded once.
    Paths: columns of one chunk and of several, narrow gapped columns, short rows; output
    counts on both sides of a conversion's 16 or 32 lanes."""
    generator = torch.Generator().manual_seed(0)

    def values(shape, scale, low, high):
        k = torch.randint(low, high, shape, generator=generator, dtype=torch.int64)
        return (k.double() * scale).to(torch.float16)

    for scale, low, high in [
        (2.0**-24, -1000, 1000),  # subnormal sums
        (2.0**-10, -(2**12), 2**12),  # ties between float16s
        (32.0, 900, 2047),  # large: sums past 65504 overflow to inf
    ]:
        for shape, dim in [
            ((7, 37), 0),
            ((3, 1000), 0),
            ((300, 45), 0),
            ((2, 5, 3, 20), 1),
            ((53, 9), 1),
            ((40, 33), 1),
        ]:
            x = values(shape, scale, low, high)
            x.view(-1)[:: x.numel() // 3] = float("nan")
            x.view(-1)[1 :: x.numel() // 2] = float("inf")
            views = [(x, dim), (x.expand(3, *shape), (0, dim + 1))]  # each sum times 3
            if x.dim() == 4:
                views.append((x[..., :12], dim))  # narrow columns a gap apart
            for v, d in views:
                got = wr.sum(v, d)
                want = v.double().sum(d).to(torch.float16)
                torch.testing.assert_close(got, want, rtol=0, atol=0, equal_nan=True)


# --- the same bits whatever the thread count ---------------------------------------------


THREAD_CASES = [
    ((2**20 + 3,), None),  # a long row: chunks combined pairwise
    ((3, 100003), -1),  # rows of several chunks
    ((4099, 257), -1),  # many short rows
    ((70001, 130), 0),  # columns: chunks of rows combined pairwise
    ((8, 2**18), 0),  # many tiles of few rows
    ((1025, 4099), 0),
    ((32, 64, 28, 28), (0, 2, 3)),  # two passes
    ((5, 2 * 100003), "stride2"),  # rows of a stride that divides the lanes
    ((99991, 14), "stride2"),  # tiny strided rows
    ((100003, 5), 0),  # narrow packed columns
    ((7, 30011, 3), 1),
    ((1001, 300, 4), 1),  # folded packed columns
    ((1001, 900, 3), 1),  # ... in periods of 3 vectors
    ((1001, 300, 22), 1),  # ... of 11 vectors
    ((2**20 + 3, 6), 0),  # ... one long slice in chunks (periods of 3 vectors)
    ((3, 50001, 8), 1),  # ... three long slices in chunks
    ((70001, 50, 8), "gapped"),  # narrow gapped columns
    # columns of fewer tasks than threads (2 chunks of rows x 1 and 3 tiles), whose
    # tiles narrow with the thread count (column_tile_width)
    ((300, 2048), 0),
    ((384, 4283), 0),
    ((384, 3, 714, 2), "stepped"),  # a stepped span read to the rows' stride
    ((248, 2666), "offset"),  # an offset view: 2665 columns, 2 tiles
    ((3, 300, 1500), 1),  # several outer slices
    ((40, 333), 0),  # fewer columns than the narrowest tile
    ((885, 275, 6, 6), "gapped rows"),  # 3 columns of rows 6 apart
    ((300, 3 * 1001), "stepped3"),  # kept columns every 3rd of tiles cut at 64-column steps
]


def thread_case_input(shape, dim, dtype):
    if dim == "gapped":
        return random_tensor(shape, dtype, "cpu")[..., :7], 0
    if dim == "stride2":
        return random_tensor(shape, dtype, "cpu")[:, ::2], -1
    if dim == "stepped":
        return random_tensor(shape, dtype, "cpu")[..., ::2], 0
    if dim == "stepped3":
        return random_tensor(shape, dtype, "cpu")[..., ::3], 0
    if dim == "gapped rows":
        return random_tensor(shape, dtype, "cpu")[..., :3], (1, 2)
    if dim == "offset":
        return random_tensor(shape, dtype, "cpu")[:, 1:], 0
    return random_tensor(shape, dtype, "cpu"), dim


@pytest.mark.parametrize(
    "dtype", [torch.float32, torch.bfloat16, torch.float64, torch.int32], ids=str
)
@pytest.mark.parametrize("shape,dim", THREAD_CASES, ids=str)
def test_same_bits_for_any_thread_count(restore_threads, dtype, shape, dim):
    x, dim = thread_case_input(shape, dim, dtype)
    torch.set_num_threads(1)
    first = wr.sum(x, dim)
    for threads in (2, 3, 8, 16):
        torch.set_num_threads(threads)
        assert torch.equal(wr.sum(x, dim), first), threads
    assert_sum_matches(first, x, dim)


# --- the builds for each instruction set --------------------------------------------------

ISA_CHECK = r"""
import torch, warpreduce_torch as wr
print(torch.backends.cpu.get_cpu_capability())
for dtype in [torch.float32, torch.float64, torch.bfloat16, torch.float16, torch.int8, torch.int32]:
    for shape, dim in [((100003,), None), ((70, 1025), -1), ((1025, 70), 0), ((257, 2049), 0),
                       ((5, 33, 7, 9), (0, 2)), ((66, 130), 1)]:
        x = torch.randn(shape).mul(10).to(dtype)
        views = (
            [x, x[..., 1:], x[..., ::2], x.transpose(0, -1)]
            if len(shape) > 1
            else [x, x[1:], x[::2], x[::3]]
        )
        for v in views:
            got, ref = wr.sum(v, dim), v.double().sum(dim)
            scale = v.double().abs().sum(dim).clamp_min(1)
            assert got.dtype == torch.sum(v, dim).dtype
            if dtype.is_floating_point:
                assert ((got.double() - ref).abs() <= 1e-2 * scale).all(), (dtype, shape, dim)
            else:
                assert torch.equal(got, torch.sum(v, dim)), (dtype, shape, dim)
print("ok")
"""


def cpu_flags():
    try:
        with open("/proc/cpuinfo") as f:
            return set(next(line for line in f if line.startswith("flags")).split(":")[1].split())
    except (OSError, StopIteration):
        return set()


ISA_FLAGS = {
    "default": set(),
    "avx2": {"avx2", "fma"},
    "avx512": {"avx2", "fma", "avx512f", "avx512bw", "avx512vl", "avx512dq"},
}


@pytest.mark.parametrize("isa", list(ISA_FLAGS))
def test_each_instruction_set_build(isa):
    """ATEN_CPU_CAPABILITY lowers torch's choice, and the op follows it: each build of the
    kernels runs in a process of its own."""
    if isa != "default" and (platform.machine() != "x86_64" or not ISA_FLAGS[isa] <= cpu_flags()):
        pytest.skip(f"this processor has no {isa}")
    env = dict(os.environ, ATEN_CPU_CAPABILITY=isa, PYTHONPATH=os.pathsep.join(sys.path))
    done = subprocess.run(
        [sys.executable, "-c", ISA_CHECK], env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-3000:]
    capability, status = done.stdout.split()[-2:]
    assert (capability, status) == (isa.upper(), "ok")


@pytest.mark.skipif(
    platform.machine() != "x86_64" or shutil.which("objdump") is None,
    reason="needs x86-64 and objdump",
)
def test_only_the_isa_builds_use_avx():
    """Code shared by the builds (std::, c10:: and at:: helpers) must be compiled for the
    baseline x86-64 only, or a processor without AVX could crash in it: only functions
    whose names involve AVX2:: or AVX512:: (at::vec's and warpreduce::cpu's namespaces for
    those builds, so the function exists for that build alone) may hold an AVX instruction
    (VEX or EVEX: mnemonics v..., ymm, zmm or mask registers)."""
    disassembly = subprocess.run(
        ["objdump", "-d", "--no-show-raw-insn", "-C", _C.__file__],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    function, offenders = None, set()
    avx = re.compile(r"^\s*[0-9a-f]+:\s+(v(?!err|erw)\w+|.*%[yz]mm|.*%k[0-7])")
    for line in disassembly.splitlines():
        header = re.match(r"^[0-9a-f]+ <(.*)>:$", line)
        if header:
            function = header.group(1)
        elif function and avx.match(line) and not re.search(r"\b(AVX2|AVX512)::", function):
            offenders.add(function)
    assert not offenders, sorted(offenders)[:20]
