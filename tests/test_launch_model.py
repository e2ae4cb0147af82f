"""The launch model (csrc/launch_model.h): which kernel and launch shape each pass takes,
checked through warpreduce_torch._C.plan on any machine, with shapes on both sides of
each boundary; and the sums of those shapes against torch.sum on every device, every
dtype, aligned and unaligned, so that each branch's kernel runs on the GPU machine."""

import pytest
import torch

import warpreduce_torch as wr
from warpreduce_torch.testing import assert_sum_matches, random_tensor, round_float64

from .support import DEVICES, DTYPES


def make(shape, layout, dtype, device):
    """A tensor of `shape`: contiguous, "offset" (its data one element past an aligned
    address), "stepped" (the last dim every other element), "wide" (a prefix of a wider
    last dim) or "sliced" (every other slice of the first dim, a prefix of the last)."""
    shape = tuple(shape)
    if layout == "contiguous":
        return random_tensor(shape, dtype, device)
    if layout == "offset":
        return random_tensor(shape[:-1] + (shape[-1] + 1,), dtype, device)[..., 1:]
    if layout == "stepped":
        return random_tensor(shape[:-1] + (2 * shape[-1],), dtype, device)[..., ::2]
    if layout == "wide":
        return random_tensor(shape[:-1] + (shape[-1] + 5,), dtype, device)[..., : shape[-1]]
    if layout == "sliced":  # every other slice of the first dim, a prefix of the last
        base = random_tensor((2 * shape[0],) + shape[1:-1] + (shape[-1] + 3,), dtype, device)
        return base[::2, ..., : shape[-1]]
    raise ValueError(layout)


def launches(x, dims):
    return [p["launch"].split()[0] for p in wr._C.plan(x, list(dims))["passes"]]


# (shape, layout, dims, expected kind of each pass) for float32; boundaries on both sides.
CASES = [
    # the full reduction: several blocks on one row
    ((1 << 16,), "contiguous", [0], ["rows_split"]),
    # rows of whole vectors: 8 vectors a row; 25 (of 32 lanes: >= 3 in 4) and 23 (not)
    ((4096, 32), "contiguous", [1], ["rows_vectors"]),
    ((4096, 100), "contiguous", [1], ["rows_vectors"]),
    ((4096, 92), "contiguous", [1], ["slabs"]),
    # short rows that are not whole vectors, or not aligned, or stepped: tiles of rows
    ((4096, 3), "contiguous", [1], ["slabs"]),
    ((4096, 32), "offset", [1], ["slabs"]),
    ((4096, 7), "stepped", [1], ["slabs"]),
    ((4096, 256), "contiguous", [1], ["slabs"]),  # 1 KiB rows: still tiled
    ((16384, 257), "contiguous", [1], ["rows_grouped"]),  # just over
    # longer rows, many of them: a group of lanes a row; few of them: blocks a row
    ((65536, 1024), "contiguous", [1], ["rows_grouped"]),
    ((8, 1 << 20), "contiguous", [1], ["rows_split"]),
    ((4096, 1024), "stepped", [1], ["rows_grouped"]),
    ((2048, 4096), "stepped", [1], ["rows_split"]),  # over 64 loads a lane
    # tiny reduced extents in the middle, small inner extents: a lane a vector of
    # adjacent outputs with its whole (short) column where the loads are vectors (aligned,
    # with a partial last one where the inner extent holds 4 vectors or more), tiles of
    # slabs where they are not
    ((4096, 4, 16), "contiguous", [1], ["columns"]),
    ((4096, 2, 16), "contiguous", [1], ["columns"]),
    ((4096, 8, 8), "contiguous", [1], ["columns"]),  # rows of 2 vectors
    ((4096, 4, 2), "contiguous", [1], ["slabs"]),
    ((4096, 4, 15), "contiguous", [1], ["slabs"]),
    ((4096, 4, 16), "offset", [1], ["slabs"]),
    ((512, 8, 127), "contiguous", [1], ["slabs"]),  # 4064-byte slabs
    ((512, 8, 129), "contiguous", [1], ["column_tiles"]),  # just over: rows of a tile
    ((64, 9, 113), "contiguous", [1], ["slabs"]),
    ((64, 97, 13), "contiguous", [1], ["columns"]),
    ((64, 9, 17), "sliced", [1], ["columns"]),  # aligned rows, a partial last vector
    ((64, 9, 15), "sliced", [1], ["slabs"]),  # too narrow
    ((64, 33, 17), "sliced", [1], ["slabs"]),  # too long for a partial vector
    # short runs of slabs (a sliced tensor's 6 rows between slices): tiles of whole runs
    ((4096, 6, 6), "sliced", [2], ["slabs"]),
    ((4096, 3, 8), "sliced", [0, 1, 2], ["slabs", "rows_split"]),
    # a short reduced dim above wide columns that vectors cannot read (float32 rows not
    # aligned alike, stepped columns): column tiles
    ((3, 100003), "contiguous", [0], ["column_tiles"]),
    ((8, 4096), "offset", [0], ["column_tiles"]),
    ((32, 4096), "offset", [0], ["column_tiles"]),
    ((33, 4096), "offset", [0], ["columns"]),  # just over
    ((2, 31, 5000), "stepped", [1], ["column_tiles"]),
    ((2, 32, 5000), "stepped", [1], ["columns"]),  # just over: tiles under 64 wide
    ((7, 90, 31), "sliced", [0], ["columns"]),  # too narrow for column tiles
    # columns: wide ones (a warp across 512 bytes), few ones with long columns (a warp
    # across a patch of rows), unaligned and stepped ones (an element a lane)
    ((1024, 4096), "contiguous", [0], ["columns"]),
    ((4, 65536, 8), "contiguous", [1], ["columns"]),
    ((1024, 4096), "offset", [0], ["columns"]),
    ((1024, 4096), "stepped", [0], ["columns"]),
    # two passes: rows of 1 KiB, then columns of the partial sums
    ((64, 128, 256), "contiguous", [0, 2], ["slabs", "columns"]),
]


@pytest.mark.parametrize("shape,layout,dims,kinds", CASES, ids=str)
def test_launch_kinds(shape, layout, dims, kinds):
    x = make(shape, layout, torch.float32, "cpu")
    assert launches(x, dims) == kinds


def test_column_shapes():
    # 4 rows of 16 floats: lanes across outer slices, each with its column (flat).
    x = make((4096, 4, 16), "contiguous", torch.float32, "cpu")
    assert wr._C.plan(x, [1])["passes"][0]["launch"] == "columns vector=4 tx=512 ty=1 flat"
    # Few columns and a long reduced dim: a patch of rows x columns a warp.
    x = make((4, 65536, 8), "contiguous", torch.float32, "cpu")
    assert wr._C.plan(x, [1])["passes"][0]["launch"] == "columns vector=4 tx=2 ty=256"
    # Wide columns: a warp across 32 vectors, 16 lanes down the rows.
    x = make((1024, 4096), "contiguous", torch.float32, "cpu")
    assert wr._C.plan(x, [0])["passes"][0]["launch"] == "columns vector=4 tx=32 ty=16 flat"
    # A partial last vector: vectors; stepped columns: an element a lane.
    x = make((64, 9, 17), "sliced", torch.float32, "cpu")
    assert wr._C.plan(x, [1])["passes"][0]["launch"].startswith("columns vector=4 tx=")
    x = make((1024, 4096), "stepped", torch.float32, "cpu")
    assert wr._C.plan(x, [0])["passes"][0]["launch"].startswith("columns vector=1 tx=")


# Rows not aligned alike under a short reduced dim: shifted vectors for 1- and 2-byte
# elements (as wide as the float32 cases of column tiles and slabs above), tiles for wider
# ones; long reduced dims: an element a lane.
SHIFTED_CASES = [
    ((3, 100003), "contiguous", [0]),
    ((8, 4096), "offset", [0]),
    ((32, 4096), "offset", [0]),
    ((4096, 4, 64), "offset", [1]),
    ((7, 90, 131), "sliced", [0]),
]


@pytest.mark.parametrize("shape,layout,dims", SHIFTED_CASES, ids=str)
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16, torch.int8, torch.bool], ids=str)
def test_shifted_columns(shape, layout, dims, dtype):
    x = make(shape, layout, dtype, "cpu")
    (p,) = wr._C.plan(x, dims)["passes"]
    assert p["launch"].startswith("columns vector=") and " shifted " in p["launch"]
    x = make(shape, layout, torch.float32, "cpu")
    assert " shifted " not in wr._C.plan(x, dims)["passes"][0]["launch"]


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("shape,layout,dims", SHIFTED_CASES, ids=str)
def test_shifted_columns_sum_like_torch_sum(device, dtype, shape, layout, dims):
    x = make(shape, layout, dtype, device)
    for kernel in [k for k in ("auto", "exact") if k in wr.kernels(device)]:
        assert_sum_matches(wr.sum(x, dims, kernel=kernel), x, dims)
    # Past the reduced extent where shifted vectors end: an element a lane.
    x = make((33,) + tuple(shape[1:]), layout, dtype, device)
    assert_sum_matches(wr.sum(x, dims), x, dims)


def test_every_kind_is_covered():
    kinds = {kind for *_, ks in CASES for kind in ks}
    assert kinds == {
        "rows_split",
        "rows_vectors",
        "slabs",
        "column_tiles",
        "rows_grouped",
        "columns",
    }


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("shape,layout,dims,kinds", CASES, ids=str)
def test_every_branch_sums_like_torch_sum(device, dtype, shape, layout, dims, kinds):
    x = make(shape, layout, dtype, device)
    for kernel in [k for k in ("auto", "exact") if k in wr.kernels(device)]:
        assert_sum_matches(wr.sum(x, dims, kernel=kernel), x, dims)


def correctly_rounded(x, dims):
    """The exact sum of each output's elements rounded once to x's dtype: math.fsum of
    the float64 values (each exact) is the exact sum rounded to float64; rounding that to
    a narrower dtype again (round_float64) can differ only where the exact sum lies
    within 2^-53 of a rounding boundary of the narrower type, which random data does not
    reach."""
    import math

    moved = x.double().cpu()
    kept = [d for d in range(x.dim()) if d not in dims]
    moved = moved.permute(*kept, *dims).reshape(-1, math.prod(x.shape[d] for d in dims))
    sums = torch.tensor([math.fsum(row.tolist()) for row in moved], dtype=torch.float64)
    return round_float64(sums, x.dtype).reshape([x.shape[d] for d in kept])


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize(
    "dtype", [torch.float16, torch.bfloat16, torch.float32, torch.float64], ids=str
)
@pytest.mark.parametrize("shape,layout,dims,kinds", CASES[:-1], ids=str)
def test_exact_is_correctly_rounded_on_every_branch(device, dtype, shape, layout, dims, kinds):
    if "exact" not in wr.kernels(device):
        pytest.skip(f"no exact kernel on {device} in this build")
    x = make(shape, layout, dtype, device)
    if x.numel() > 1 << 18:  # the reference is a Python loop
        x = x[
            tuple(
                slice(0, max(1, s // 8)) if d not in dims else slice(None)
                for d, s in enumerate(x.shape)
            )
        ]
    expected = correctly_rounded(x, dims)
    result = wr.sum(x, dims, kernel="exact").cpu()
    assert torch.equal(result.view(-1).view(torch.int8), expected.view(-1).view(torch.int8))
