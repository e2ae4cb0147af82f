"""The launch model (csrc/launch_model.h): which kernel and launch shape each pass takes,
checked through warpreduce_torch._C.plan on any machine, with shapes on both sides of
each boundary; and the sums of those shapes against torch.sum on every device, every
dtype, aligned and unaligned, so that each branch's kernel runs on the GPU machine."""

import math

import pytest
import torch

import warpreduce_torch as wr
from warpreduce_torch.testing import (
    assert_sum_matches,
    in_tight_storage,
    random_tensor,
    round_float64,
)

from .support import DEVICES, DTYPES, requires_cuda


def make(shape, layout, dtype, device, data=random_tensor):
    """A tensor of `shape`: contiguous, "offset" (its data one element past an aligned
    address), "stepped" (the last dim every other element), "wide" (a prefix of a wider
    last dim) or "sliced" (every other slice of the first dim, a prefix of the last).
    `data(shape, dtype, device)` makes the storage (`unfilled` for plans, which depend on
    strides and alignment only)."""
    shape = tuple(shape)
    if layout == "contiguous":
        return data(shape, dtype, device)
    if layout == "offset":
        return data(shape[:-1] + (shape[-1] + 1,), dtype, device)[..., 1:]
    if layout == "stepped":
        return data(shape[:-1] + (2 * shape[-1],), dtype, device)[..., ::2]
    if layout == "wide":
        return data(shape[:-1] + (shape[-1] + 5,), dtype, device)[..., : shape[-1]]
    if layout == "sliced":  # every other slice of the first dim, a prefix of the last
        base = data((2 * shape[0],) + shape[1:-1] + (shape[-1] + 3,), dtype, device)
        return base[::2, ..., : shape[-1]]
    raise ValueError(layout)


def unfilled(shape, dtype, device):
    return torch.empty(shape, dtype=dtype, device=device)


def prefix(shape):
    """The index of a leading corner of that shape: x[prefix((3, 4))] is x[:3, :4]."""
    return tuple(slice(0, n) for n in shape)


def fast_kernels(device):
    """auto, and exact where the device runs it: the kernels each sum is checked with."""
    return [k for k in ("auto", "exact") if k in wr.kernels(device)]


def assert_kernels_sum_like_torch_sum(x, dims):
    """Each fast kernel's sum of x over dims, and auto's with keepdim, against torch.sum
    (exact's of integers is auto's sum)."""
    for kernel in fast_kernels(x.device.type):
        if kernel == "exact" and not x.dtype.is_floating_point:
            continue
        assert_sum_matches(wr.sum(x, dims, kernel=kernel), x, dims, kernel=kernel)
    assert_sum_matches(wr.sum(x, dims, keepdim=True), x, dims, keepdim=True)


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
    # rows of up to 8 elements that are not whole vectors, or not aligned, or stepped: a
    # lane a row; longer short rows: tiles of rows
    ((4096, 3), "contiguous", [1], ["rows_short"]),
    ((4096, 2), "contiguous", [1], ["rows_short"]),
    ((4096, 4), "contiguous", [1], ["rows_vectors"]),
    ((4096, 8), "offset", [1], ["rows_short"]),
    ((4096, 9), "offset", [1], ["slabs"]),  # just over
    ((4096, 5), "sliced", [1], ["rows_short"]),
    ((4096, 32), "offset", [1], ["slabs"]),
    ((4096, 7), "stepped", [1], ["rows_short"]),
    ((4096, 9), "stepped", [1], ["slabs"]),
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
    ((512, 8, 129), "contiguous", [1], ["columns"]),  # just over: rows 129 floats apart
    ((64, 9, 113), "contiguous", [1], ["slabs"]),
    ((64, 97, 13), "contiguous", [1], ["columns"]),
    ((64, 9, 17), "sliced", [1], ["columns"]),  # aligned rows, a partial last vector
    ((64, 9, 15), "sliced", [1], ["slabs"]),  # too narrow
    ((64, 33, 17), "sliced", [1], ["slabs"]),  # too long for a partial vector
    # short runs of slabs (a sliced tensor's 6 rows between slices): tiles of whole runs
    ((4096, 6, 12), "sliced", [2], ["slabs"]),
    ((4096, 6, 6), "sliced", [2], ["rows_short"]),  # rows of up to 8: a lane a row
    ((4096, 3, 12), "sliced", [0, 1, 2], ["slabs", "rows_split"]),
    ((4096, 3, 8), "sliced", [0, 1, 2], ["rows_short", "rows_split"]),
    # a short reduced dim above wide columns that vectors cannot read: float32 rows not
    # aligned alike, a vector's elements a lane read one by one; stepped columns, tiles
    ((3, 100003), "contiguous", [0], ["columns"]),
    ((8, 4096), "offset", [0], ["columns"]),
    ((32, 4096), "offset", [0], ["columns"]),
    ((33, 4096), "offset", [0], ["columns"]),  # just over: an element a lane
    ((2, 31, 5000), "stepped", [1], ["column_tiles"]),
    ((2, 32, 5000), "stepped", [1], ["columns"]),  # just over: tiles under 64 wide
    ((7, 90, 31), "sliced", [0], ["columns"]),  # too narrow for column tiles
    # rows aligned alike to 8 bytes only (an even number of floats apart): a vector's
    # elements one by one up to 64 rows (16-bit: shifted vectors up to 8 rows, pairs after)
    ((7, 4098), "contiguous", [0], ["columns"]),
    ((32, 4098), "contiguous", [0], ["columns"]),
    ((33, 4098), "contiguous", [0], ["columns"]),
    ((64, 4098), "contiguous", [0], ["columns"]),
    ((65, 4098), "contiguous", [0], ["columns"]),  # longer: an element a lane
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
    # 4 rows of 16 floats: lanes across outer slices, each with its column (flat), all 4
    # rows in flight (lean).
    x = make((4096, 4, 16), "contiguous", torch.float32, "cpu")
    assert wr._C.plan(x, [1])["passes"][0]["launch"] == "columns vector=4 tx=512 ty=1 flat lean"
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
    # Rows an even number of floats apart: a vector's elements one by one up to 64 rows
    # (16-byte vectors for the 16-bit types); longer columns an element a lane.
    for dtype in (torch.float32, torch.int32):
        for rows, launch in [(7, "4 elements"), (64, "4 elements"), (65, "1")]:
            x = make((rows, 4098), "contiguous", dtype, "cpu")
            assert wr._C.plan(x, [0])["passes"][0]["launch"].startswith(f"columns vector={launch} ")
    x = make((7, 4098), "contiguous", torch.bfloat16, "cpu")
    assert wr._C.plan(x, [0])["passes"][0]["launch"].startswith("columns vector=8 ")
    x = make((7, 4098), "offset", torch.float32, "cpu")  # not aligned to 8 bytes
    assert wr._C.plan(x, [0])["passes"][0]["launch"].startswith("columns vector=4 elements ")
    # 2-byte elements in rows an even number apart under longer reduced dims: 4-byte
    # pairs; an odd number apart, or data not aligned to 4 bytes: shifted vectors (up to
    # 64 rows).
    for dtype in (torch.bfloat16, torch.float16, torch.int16):
        for shape, layout, vector in [
            ((33, 4098), "contiguous", 2),
            ((33, 4097), "contiguous", "8 shifted"),
            ((33, 4098), "offset", "8 shifted"),
            ((33, 4098), "sliced", 2),  # rows 8202 apart
            ((33, 4098), "wide", "8 shifted"),  # rows 4103 apart
        ]:
            x = make(shape, layout, dtype, "cpu")
            launch = wr._C.plan(x, [0])["passes"][0]["launch"]
            assert launch.startswith(f"columns vector={vector} "), (dtype, shape, layout, launch)


# Rows not aligned alike under a short reduced dim: shifted vectors for 1- and 2-byte
# elements (as wide as the float32 cases of the columns and slabs above), elements one by
# one for wider ones (below); long reduced dims: an element a lane, but for 2-byte
# elements that pairs cannot read (below). (2-byte elements in rows aligned alike to 4
# bytes take shifted vectors up to 8 rows only: below.)
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


# ... and for 4- and 8-byte elements, a vector's adjacent outputs a lane, its elements
# read one by one (slabs where they fit), up to 64 rows of 4-byte elements and 32 of
# 8-byte ones (longer: an element a lane, 8-byte elements phased).
ELEMENT_CASES = [
    ((3, 100003), "contiguous", [0]),
    ((8, 4096), "offset", [0]),
    ((32, 4096), "offset", [0]),
    ((5, 31, 517), "offset", [1]),
]


@pytest.mark.parametrize("shape,layout,dims", ELEMENT_CASES, ids=str)
@pytest.mark.parametrize("dtype", [torch.float32, torch.int32, torch.float64, torch.int64], ids=str)
def test_column_elements(shape, layout, dims, dtype):
    x = make(shape, layout, dtype, "cpu")
    (p,) = wr._C.plan(x, dims)["passes"]
    assert p["launch"].startswith(f"columns vector={16 // x.element_size()} elements ")
    # A longer reduced dim: an element a lane, 32 rows in flight; 8-byte elements phased
    # where a lane keeps 12 rows with one down a column for each phase.
    most = 64 if x.element_size() == 4 else 32
    for rows in (most, most + 1, 48, 49):
        longer = list(shape)
        longer[dims[0]] = rows
        x = make(longer, layout, dtype, "cpu")
        phases = 16 // math.gcd(x.stride(dims[0]) * x.element_size(), 16)
        if rows <= most:
            launch = f"{16 // x.element_size()} elements"
        elif x.element_size() == 8 and rows >= 12 * phases:
            launch = "2 phased"
        else:
            launch = "1"
        assert wr._C.plan(x, dims)["passes"][0]["launch"].startswith(f"columns vector={launch} ")


# Long columns read an element a lane: 4-byte and wider elements of a contiguous inner
# dim start four warps across (a block's rows 128 elements wide), narrower ones and
# strided inner dims a warp across; lanes go down the rows either way while the columns
# leave half the GPU's lanes idle (under 16896 columns of 1024 rows and more, at 132
# SMs: 2 x 16896 x 4 lanes).
WIDE_ELEMENT_CASES = [
    ((1100, 17001), "contiguous", [0], "tx=128 ty=4"),  # rows an odd number apart
    ((1100, 17001), "stepped", [0], "tx=32 ty=16"),  # a strided inner dim
    ((1030, 20001), "offset", [0], "tx=128 ty=4"),
    ((1100, 16895), "contiguous", [0], "tx=64 ty=8"),  # just under: 8 lanes down
    ((20000, 513), "contiguous", [0], "tx=32 ty=16"),  # few columns: 16 lanes down
    ((300, 17001), "contiguous", [0], "tx=128 ty=4"),  # 300 rows: 4 lanes down for all
]


@pytest.mark.parametrize("shape,layout,dims,tiles", WIDE_ELEMENT_CASES, ids=str)
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_element_columns_of_wide_elements_take_wide_tiles(shape, layout, dims, tiles, dtype):
    x = make(shape, layout, dtype, "cpu", data=unfilled)
    launch = wr._C.plan(x, dims, as_cuda=True)["passes"][0]["launch"]
    if " phased " in launch:  # 8-byte elements, 2-byte ones 2048 vectors wide and more
        assert x.element_size() == 8 or (x.element_size() == 2 and shape[-1] >= 16384), launch
        return
    if not launch.startswith("columns vector=1 tx="):
        # bytes read as 4-byte words, 8-byte elements of a stepped dim as pairs
        assert x.element_size() == 1 or layout == "stepped", launch
        return
    narrow = {"tx=128 ty=4": "tx=32 ty=16", "tx=64 ty=8": "tx=32 ty=16"}
    if x.element_size() < 4 and shape[0] >= 1024:
        tiles = narrow.get(tiles, tiles)
    assert launch == f"columns vector=1 {tiles} flat", launch


@requires_cuda
@pytest.mark.parametrize("shape,layout,dims,tiles", WIDE_ELEMENT_CASES, ids=str)
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_wide_element_tiles_sum_like_torch_sum(shape, layout, dims, tiles, dtype):
    x = make(shape, layout, dtype, "cuda")
    assert_kernels_sum_like_torch_sum(x, dims)


# Lanes down the reduced dim of flat columns double while each keeps
# kFlatColumnRowsPerLane (4) rows: bfloat16 rows of 93991 (11749 16-byte columns, few
# enough that 8 lanes down still leave lanes idle), on both sides of each doubling.
# (rows, lanes down)
FLAT_LANE_ROWS_CASES = [(7, 1), (8, 2), (15, 2), (16, 4), (31, 4), (32, 8), (53, 8)]


@pytest.mark.parametrize("rows,lanes_down", FLAT_LANE_ROWS_CASES, ids=str)
def test_flat_columns_lanes_down_keep_four_rows_each(rows, lanes_down):
    x = make((rows, 93991), "contiguous", torch.bfloat16, "cpu", data=unfilled)
    launch = wr._C.plan(x, [0], as_cuda=True)["passes"][0]["launch"]
    assert f" ty={lanes_down} flat" in launch, launch


@requires_cuda
@pytest.mark.parametrize("rows", [rows for rows, _ in FLAT_LANE_ROWS_CASES], ids=str)
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_flat_columns_lanes_down_sum_like_torch_sum(rows, dtype):
    for layout in ("contiguous", "offset"):
        x = make((rows, 93991), layout, dtype, "cuda")
        assert_kernels_sum_like_torch_sum(x, [0])


# Slabs of 2-byte elements far apart (the memory between two more than a slab and more
# than a sector): columns, a lane an output or a pair; slabs
# closer together, and wider elements: tiles. (stored shape, the view's corner, dims,
# the launch of 2-byte elements)
FAR_SLAB_CASES = [
    ((4099, 6, 6), (4099, 3, 3), [1], "columns"),  # slabs of 15 elements, 36 apart
    ((4099, 8, 4), (4099, 4, 2), [1], "columns"),
    ((2053, 10, 8), (2053, 5, 3), [1], "columns"),
    ((1031, 6, 6), (1031, 3, 3), [1, 2], "any"),  # a row of the corner: rows
    ((4099, 3, 7), (4099, 3, 4), [1], "slabs"),  # 18 of 21: close
    ((4099, 5, 9), (4099, 3, 3), [1], "columns"),  # 21 of 45, 24 between (48 bytes)
    ((4099, 5, 5), (4099, 3, 3), [1], "slabs"),  # 13 of 25, 12 between: under a sector
    ((4099, 3, 20), (4099, 3, 4), [1], "slabs"),  # 44 of 60, 16 between: a sector
]


def corner_of(stored, corner, dtype, device):
    return random_tensor(stored, dtype, device)[prefix(corner)]


@pytest.mark.parametrize("stored,corner,dims,kind", FAR_SLAB_CASES, ids=str)
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.int16], ids=str)
def test_far_slabs_of_2_byte_elements_take_columns(stored, corner, dims, kind, dtype):
    x = unfilled(stored, dtype, "cpu")[prefix(corner)]
    p = wr._C.plan(x, dims, as_cuda=True)["passes"][0]
    assert kind == "any" or p["launch"].split()[0] == kind, p["launch"]
    # wider elements far apart stay tiled (or read whole vectors)
    for wider in (torch.float32, torch.int32, torch.float64):
        x = unfilled(stored, wider, "cpu")[prefix(corner)]
        p = wr._C.plan(x, dims, as_cuda=True)["passes"][0]
        assert kind != "columns" or not p["launch"].startswith("columns vector=1 "), p["launch"]


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("stored,corner,dims,kind", FAR_SLAB_CASES, ids=str)
def test_far_slabs_sum_like_torch_sum(device, dtype, stored, corner, dims, kind):
    x = corner_of(stored, corner, dtype, device)
    assert_kernels_sum_like_torch_sum(x, dims)
    # the data one element past an aligned address
    flat = random_tensor((math.prod(stored) + 1,), dtype, device)[1:]
    y = flat.view(stored)[prefix(corner)]
    assert_sum_matches(wr.sum(y, dims), y, dims)


# Short rows far apart (a prefix of much wider rows): rows_vectors reads each as the
# aligned 16-byte vectors that cover it ("covering"), where 3 in 4 of a group's lanes have
# a vector; else tiles. (dtype, rows' length, the stride between rows, the data's offset
# in elements, whether covering.)
COVERING_ROW_CASES = [
    (torch.float32, 15, 36, 0, True),  # 4 vectors, rows 144 bytes apart: alike
    (torch.float32, 15, 36, 1, True),  # the rows one element into their first vector
    (torch.float32, 15, 36, 2, False),  # 5 vectors of 8 lanes: tiles
    (torch.float32, 118, 242, 0, True),  # rows 968 bytes apart, not alike: up to 31
    (torch.float32, 126, 242, 0, False),  # up to 33 vectors: tiles
    (torch.float32, 15, 20, 0, False),  # 20 bytes between rows: close, tiles
    (torch.int32, 13, 32, 0, True),
    (torch.bfloat16, 17, 40, 0, True),  # 3 vectors of 4 lanes
    (torch.bfloat16, 119, 244, 3, True),  # not alike: up to 16
    (torch.float64, 15, 40, 0, True),  # 8 vectors
    (torch.float64, 9, 40, 0, False),  # 5 of 8
    (torch.bool, 49, 104, 0, True),  # not alike: up to 4 vectors of 16
    (torch.int8, 35, 76, 5, True),
]


def far_rows(rows, length, row, dtype, device, offset=0, fill=None):
    return gapped_view((rows, length), dtype, device, gap=row - length, offset=offset, fill=fill)


@pytest.mark.parametrize("case", COVERING_ROW_CASES, ids=str)
def test_far_rows_take_covering_vectors(case):
    dtype, length, row, offset, covering = case
    x = far_rows(4099, length, row, dtype, "cpu", offset=offset)
    (p,) = wr._C.plan(x, [1], as_cuda=True)["passes"]
    assert p["launch"].endswith(" covering") == covering, p["launch"]
    assert p["launch"].split()[0] == ("rows_vectors" if covering else "slabs"), p["launch"]
    # rows under two outer dims that do not merge (every other slice of the first): tiles
    y = far_rows(4 * 64, length, row, dtype, "cpu", offset=offset).view(4, 64, length)[::2]
    (p,) = wr._C.plan(y, [2], as_cuda=True)["passes"]
    assert not p["launch"].endswith(" covering"), p["launch"]


@requires_cuda
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("case", COVERING_ROW_CASES, ids=str)
def test_covering_rows_sum_like_torch_sum(dtype, case):
    """NaN around every row: read with the row's vectors, never added."""
    _, length, row, offset, _ = case
    fill = float("nan") if dtype.is_floating_point else None
    for rows in (2, 31, 4099, 70001):
        for shift in (offset, offset + 1, offset + 7):  # the rows at other alignments
            x = far_rows(rows, length, row, dtype, "cuda", offset=shift, fill=fill)
            for kernel in fast_kernels("cuda"):
                if kernel == "exact" and not dtype.is_floating_point:
                    continue
                got = wr.sum(x, [1], kernel=kernel)
                assert not (got.is_floating_point() and got.isnan().any())
                assert_sum_matches(got, x, [1], kernel=kernel)
            assert_sum_matches(wr.sum(x, [1], keepdim=True), x, [1], keepdim=True)
        # a storage that ends at the last row's last element: its last vector by elements
        x = in_tight_storage(far_rows(rows, length, row, dtype, "cuda", offset=offset))
        assert_sum_matches(wr.sum(x, [1]), x, [1])


# Tiles of slabs one segment a tile, a lane an output (slabs.cuh's lean loop): rows read
# in order, or from a rotated start (row slab % length on) where lanes reading row for row
# would meet on the same shared-memory banks, slabs a multiple of 128 bytes apart.
# (dtype of the plan, shape, layout, launch)
SLAB_LANE_CASES = [
    # 64-byte slabs: in order, two lanes an output met 4 to a bank (45.3 us on an H200 for
    # 1048576 x 8 x 2), rotated none (27.1 us)
    (torch.float32, (4099, 8, 2), "contiguous", "slabs segments=1 per_segment=255 group=1 rotated"),
    (torch.float32, (4099, 8, 2), "offset", "slabs segments=1 per_segment=170 group=2"),
    (torch.float32, (4099, 16, 1), "offset", "slabs segments=1 per_segment=127 group=1 rotated"),
    (torch.float32, (4099, 2, 3), "contiguous", "slabs segments=1 per_segment=682 group=1"),
    (torch.bfloat16, (4099, 2, 4), "contiguous", "slabs segments=1 per_segment=1023 group=1"),
    # 4 to a bank in order, 8 rows: rotating costs more than it saves
    (torch.bfloat16, (4099, 8, 4), "contiguous", "slabs segments=1 per_segment=255 group=1"),
    (
        torch.bfloat16,
        (4099, 16, 4),
        "contiguous",
        "slabs segments=1 per_segment=127 group=1 rotated",
    ),
    (torch.float64, (999, 8, 3), "offset", "slabs segments=1 per_segment=63 group=1 rotated"),
    (torch.float64, (4099, 8, 2), "offset", "slabs segments=1 per_segment=85 group=2"),
    (torch.int8, (4099, 16, 2), "stepped", "slabs segments=1 per_segment=255 group=1 rotated"),
]


@pytest.mark.parametrize("plan_dtype,shape,layout,launch", SLAB_LANE_CASES, ids=str)
def test_slab_lanes_rotate_rows_where_banks_meet(plan_dtype, shape, layout, launch):
    x = make(shape, layout, plan_dtype, "cpu", data=unfilled)
    (p,) = wr._C.plan(x, [1], as_cuda=True)["passes"]
    assert p["launch"] == launch, p


def test_slab_lanes_are_remembered_by_what_they_depend_on():
    # The launch model remembers the last 16 passes' slab lanes a thread: planned in turn,
    # more of them than it holds, then again in the other order, each takes the launch it
    # takes alone (the table above), whatever was asked before it.
    cases = [(s[0], s[1], s[2], s[3]) for s in SLAB_LANE_CASES]
    cases += [(torch.float32, (4099, n, 2), "contiguous", None) for n in range(3, 12)]
    first = {}
    for plan_dtype, shape, layout, launch in cases + cases[::-1]:
        x = make(shape, layout, plan_dtype, "cpu", data=unfilled)
        (p,) = wr._C.plan(x, [1], as_cuda=True)["passes"]
        key = (plan_dtype, shape, layout)
        assert p["launch"] == first.setdefault(key, p["launch"]), (key, p)
        assert launch is None or p["launch"] == launch, (key, p)


@requires_cuda
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("plan_dtype,shape,layout,launch", SLAB_LANE_CASES, ids=str)
def test_slab_lanes_sum_like_torch_sum(dtype, plan_dtype, shape, layout, launch):
    # 4099 outer indices: a partial last tile; 300007: more tiles than blocks, so that a
    # block's lanes step through several
    for outer in (shape[0], 300007):
        x = make((outer,) + shape[1:], layout, dtype, "cuda")
        for kernel in fast_kernels("cuda"):
            assert_sum_matches(wr.sum(x, 1, kernel=kernel), x, [1], kernel=kernel)
        assert_sum_matches(wr.sum(x, 1, keepdim=True), x, [1], keepdim=True)


# 2-byte elements in rows aligned alike to 4 bytes but not 16: shifted vectors up to 8
# rows, 4-byte pairs after; rows an odd number of elements apart (or data not aligned to
# 4 bytes) stay shifted up to 64 rows where their slabs are too long to tile.
SHIFTED_OR_PAIRS = [
    ((8, 4098), "contiguous", "vector=8 shifted "),
    ((9, 4098), "contiguous", "vector=2 "),
    ((16, 4098), "contiguous", "vector=2 "),
    ((32, 4098), "contiguous", "vector=2 "),
    ((300, 4098), "contiguous", "vector=2 "),
    ((9, 4097), "contiguous", "vector=8 shifted "),
    ((32, 4097), "contiguous", "vector=8 shifted "),
    ((33, 4097), "contiguous", "vector=8 shifted "),
    ((64, 4097), "contiguous", "vector=8 shifted "),
    ((65, 4097), "contiguous", "vector=1 "),  # longer: an element a lane
    ((1025, 265), "contiguous", "vector=1 "),
    ((9, 4098), "offset", "vector=8 shifted "),  # data not aligned to 4 bytes
    ((64, 4098), "offset", "vector=8 shifted "),
    ((77, 4098), "offset", "vector=1 "),
    ((64, 33), "contiguous", "vector=8 shifted "),  # 4 vectors a row: the fewest
    ((60, 37), "offset", "vector=8 shifted "),
    # rows an even number apart, an odd inner extent under more than 32 rows and fewer
    # outputs than resident threads (ODD_PAIRS_BY_OUTPUTS: more): pairs from 4096
    # elements, an element a lane under
    ((40, 339), "sliced", "vector=1 "),
    ((33, 339), "sliced", "vector=1 "),
    ((32, 339), "sliced", "vector=2 "),
    ((9, 339), "sliced", "vector=2 "),
    ((40, 340), "sliced", "vector=2 "),
    ((40, 4095), "sliced", "vector=1 "),
    ((40, 4099), "sliced", "vector=2 "),
]


@pytest.mark.parametrize("shape,layout,launch", SHIFTED_OR_PAIRS, ids=str)
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16, torch.int16], ids=str)
def test_shifted_or_pair_columns(shape, layout, launch, dtype):
    x = make(shape, layout, dtype, "cpu")
    (p,) = wr._C.plan(x, [0], as_cuda=True)["passes"]
    assert p["launch"].startswith(f"columns {launch}"), p["launch"]


@requires_cuda
@pytest.mark.parametrize("shape,layout,launch", SHIFTED_OR_PAIRS, ids=str)
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16, torch.int16], ids=str)
def test_shifted_or_pair_columns_sum_like_torch_sum(shape, layout, launch, dtype):
    x = make(shape, layout, dtype, "cuda")
    assert_sum_matches(wr.sum(x, [0]), x, [0])


# 2-byte elements in rows aligned alike to 8 bytes but not 16 (rows 4 elements past a
# multiple of 8 apart) under 4-8 rows: 8-byte quads where shifted vectors would read them;
# fewer rows stay shifted, more take pairs, data off by an element shifted vectors.
QUADS = [
    ((8, 4100), "contiguous", [0], "vector=4 "),
    ((4, 4100), "contiguous", [0], "vector=4 "),
    ((3, 4100), "contiguous", [0], "vector=8 shifted "),
    ((9, 4100), "contiguous", [0], "vector=2 "),
    ((6, 5, 4100), "contiguous", [1], "vector=4 "),  # outer slices
    ((3, 5, 7, 4100), "contiguous", [0, 2], "vector=4 "),  # (the first pass: 7 rows)
    ((8, 339), "sliced", [0], "vector=4 "),  # rows 684 apart, each last quad partial
    ((6, 4099), "sliced", [0], "vector=4 "),
    ((9, 4100), "offset", [0], "vector=8 shifted "),  # data not aligned to 4 bytes
    ((8, 4102), "contiguous", [0], "vector=8 shifted "),  # rows aligned alike to 4 only
]


@pytest.mark.parametrize("shape,layout,dims,launch", QUADS, ids=str)
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16, torch.int16], ids=str)
def test_quad_columns(shape, layout, dims, launch, dtype):
    x = make(shape, layout, dtype, "cpu", data=unfilled)
    p = wr._C.plan(x, dims, as_cuda=True)["passes"][0]  # (two passes over dims apart)
    assert p["launch"].startswith(f"columns {launch}"), p["launch"]


@requires_cuda
@pytest.mark.parametrize("shape,layout,dims,launch", QUADS, ids=str)
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16, torch.int16], ids=str)
def test_quad_columns_sum_like_torch_sum(shape, layout, dims, launch, dtype):
    x = make(shape, layout, dtype, "cuda")
    assert_kernels_sum_like_torch_sum(x, dims)
    # nothing past the last row: the partial quads of its last columns read within it
    assert_sum_matches(wr.sum(in_tight_storage(x), dims), x, dims)


# Odd inner extents of pairs under more than 32 rows (sliced, over dim 1): pairs where the
# outputs are at least the GPU's resident threads (132 x 2048 = 270336 in the plan's
# default device), each slice's partial last pair read whole (columns.cuh); an element a
# lane under that, for the lanes.
ODD_PAIRS_BY_OUTPUTS = [
    ((798, 40, 339), "vector=2 "),  # 270522 outputs
    ((797, 40, 339), "vector=1 "),  # 270183
    ((2, 40, 4099), "vector=2 "),  # 4096 elements and more: pairs
]


@pytest.mark.parametrize("shape,launch", ODD_PAIRS_BY_OUTPUTS, ids=str)
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16, torch.int16], ids=str)
def test_odd_pairs_by_outputs(shape, launch, dtype):
    x = make(shape, "sliced", dtype, "cpu", data=unfilled)
    (p,) = wr._C.plan(x, [1], as_cuda=True)["passes"]
    assert p["launch"].startswith(f"columns {launch}"), p["launch"]


@requires_cuda
@pytest.mark.parametrize("shape,launch", ODD_PAIRS_BY_OUTPUTS, ids=str)
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16, torch.int16], ids=str)
def test_odd_pairs_by_outputs_sum_like_torch_sum(shape, launch, dtype):
    x = make(shape, "sliced", dtype, "cuda")
    assert_sum_matches(wr.sum(x, 1), x, [1])


# Rows not aligned alike (an odd row stride, a sliced or offset view) under reduced dims
# of 33 rows and more: phased columns, whole aligned vectors, each lane's rows a whole
# number of the rows' shifts' period apart (16 / gcd(row bytes, 16) rows), its sums
# rotated into place at the end and the part that belongs to the column before handed
# over (columns.cuh, place_phased); for 8-byte elements, and 2-byte ones that pairs cannot
# read (rows an odd number apart, or data off 4 bytes) under inner dims of 2048 vectors
# and more; where a lane keeps 12 rows with a lane down a column for each phase. (shape,
# layout, dims, the element sizes that take them.)
PHASED_CASES = [
    ((193, 16385), "contiguous", [0], {2, 8}),  # an odd stride: 8 and 2 phases
    ((40, 16386), "contiguous", [0], set()),  # 2-byte pairs; 8-byte rows aligned alike
    ((200, 16386), "offset", [0], {2, 8}),  # rows 16387 apart, data an element off
    ((251, 16390), "wide", [0], {2, 8}),  # rows 16395 apart, a partial last vector
    ((4099, 129), "contiguous", [0], {8}),  # 2-byte: narrow; few columns, split over blocks
    ((3, 77, 515), "offset", [1], {8}),  # outer slices; rows aligned alike: 1 phase
    ((2, 100, 3, 17001), "offset", [1], {2, 8}),  # rows 3 x 17002 apart (4 phases), outer dims
    ((65, 16385), "stepped", [0], set()),  # a strided last dim, rows not aligned alike
    ((300, 1, 20000), "aligned_rows", [0], {2, 8}),  # aligned alike, the data off: 1 phase
]
PHASED_DTYPES = [
    torch.bfloat16,
    torch.float16,
    torch.int16,
    torch.float32,
    torch.int32,
    torch.float64,
    torch.int64,
    torch.complex64,
]


def make_phased(shape, layout, dtype, device, data=random_tensor):
    """make(), and "aligned_rows": contiguous rows whose data starts an element past a
    16-byte boundary (every row shifted alike)."""
    if layout != "aligned_rows":
        return make(shape, layout, dtype, device, data)
    return data((math.prod(shape) + 1,), dtype, device)[1:].view(shape)


@pytest.mark.parametrize("shape,layout,dims,sizes", PHASED_CASES, ids=str)
@pytest.mark.parametrize("dtype", PHASED_DTYPES, ids=str)
def test_rows_not_aligned_alike_take_phased_columns(shape, layout, dims, sizes, dtype):
    x = make_phased(shape, layout, dtype, "cpu", unfilled)
    launch = wr._C.plan(x, dims, as_cuda=True)["passes"][0]["launch"]
    if x.element_size() not in sizes:
        assert " phased " not in launch
        return
    assert launch.startswith(f"columns vector={16 // x.element_size()} phased "), launch
    assert " flat" in launch
    # a whole number of periods down the reduced dim (and two lanes at least)
    x_stride = x.stride(dims[0]) * x.element_size()
    phases = 16 // math.gcd(x_stride, 16)
    ty = int(launch.split(" ty=")[1].split()[0])
    assert ty % phases == 0 and ty >= 2, launch


def test_phased_columns_from_12_rows_a_phase_and_2048_vectors():
    for dtype, shape, layout, phased in [
        (torch.bfloat16, (95, 16385), "contiguous", False),  # 8 phases: 96 rows
        (torch.bfloat16, (96, 16385), "contiguous", True),
        (torch.bfloat16, (192, 16383), "contiguous", False),  # 2047 vectors and a part
        (torch.float64, (32, 16385), "contiguous", False),  # by elements up to 32 rows
        (torch.float64, (33, 16385), "contiguous", True),
        (torch.float64, (32, 1000), "aligned_rows", False),  # 1 phase: past 32 rows
        (torch.float64, (33, 1000), "aligned_rows", True),
    ]:
        x = make_phased(shape, layout, dtype, "cpu", unfilled)
        launch = wr._C.plan(x, [0])["passes"][0]["launch"]
        assert (" phased " in launch) == phased, (dtype, shape, launch)
    # not 1- and 4-byte elements, nor rows that overlap
    for dtype in (torch.int8, torch.float32, torch.int32):
        x = make((65, 16385), "contiguous", dtype, "cpu", unfilled)
        assert " phased " not in wr._C.plan(x, [0])["passes"][0]["launch"]
    base = random_tensor((70 * 33 + 4097,), torch.float64, "cpu")
    x = base.as_strided((70, 4097), (33, 1), 1)  # rows 33 apart, 4097 long
    assert all(" phased " not in p["launch"] for p in wr._C.plan(x, [0])["passes"])
    # gapped spans too (rows a gap apart read as one span, 21007 doubles apart)
    x = gapped_view((100, 7, 3000), torch.float64, "cpu", gap=1, offset=1)
    (p,) = wr._C.plan(x, [0], as_cuda=True)["passes"]
    assert p["gaps"] == (3001, 3000) and " phased " in p["launch"], p["launch"]


@requires_cuda
@pytest.mark.parametrize("shape,layout,dims,sizes", PHASED_CASES, ids=str)
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_phased_columns_sum_like_torch_sum(shape, layout, dims, sizes, dtype):
    x = make_phased(shape, layout, dtype, "cuda")
    assert_kernels_sum_like_torch_sum(x, dims)
    # the same bits again
    assert torch.equal(
        wr.sum(x, dims).view(-1).view(torch.uint8), wr.sum(x, dims).view(-1).view(torch.uint8)
    )


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float64], ids=str)
@pytest.mark.parametrize("gap,offset", [(4, 0), (4, 1), (2, 3), (0, 7)], ids=str)
def test_phased_columns_leave_what_lies_around_the_rows_out(device, dtype, gap, offset):
    # NaN before, between and after the rows (an odd number of elements apart): a lane's
    # aligned vectors read it (the column before's part, past a partial last vector) but
    # no output adds it.
    for shape in [(200, 16385), (192, 3, 16385)]:
        x = gapped_view(shape, dtype, device, gap=gap, offset=offset, fill=float("nan"))
        launch = wr._C.plan(x, [0], as_cuda=True)["passes"][0]["launch"]
        assert " phased " in launch, (shape, gap, offset, launch)
        result = wr.sum(x, [0])
        assert not result.isnan().any(), (shape, gap, offset, launch)
        assert_sum_matches(result, x, [0])


def test_gapped_column_elements():
    # Rows 7 x 3001 floats apart, each a span of 7 rows of 3000 with a gap of one: the
    # span in elements (float32 7 x 7 x 347750 of an offset view ran at 0.49x torch.sum
    # on an H100 an element a lane).
    for offset in (0, 1):
        x = gapped_view((7, 7, 3000), torch.float32, "cpu", gap=1, offset=offset)
        (p,) = wr._C.plan(x, [0], as_cuda=True)["passes"]
        assert p["gaps"] == (3001, 3000)
        assert p["launch"].startswith("columns vector=4 elements ")


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("shape,layout,dims", SHIFTED_CASES + ELEMENT_CASES, ids=str)
def test_shifted_columns_sum_like_torch_sum(device, dtype, shape, layout, dims):
    x = make(shape, layout, dtype, device)
    for kernel in fast_kernels(device):
        assert_sum_matches(wr.sum(x, dims, kernel=kernel), x, dims)
    # Past the reduced extent where shifted vectors end (and 4-byte elements' at 64 rows).
    for rows in (33, 64, 65):
        x = make((rows,) + tuple(shape[1:]), layout, dtype, device)
        assert_sum_matches(wr.sum(x, dims), x, dims)


# Columns whose last vector is partial (an inner extent of no whole number of vectors), in
# rows far apart with NaN between them: auto's partial columns of shifted vectors read
# whole vectors, the sums past their outputs never stored (aligned ones, and exact's,
# their elements one by one). (shape, the gap after each row, the data's offset in
# elements.)
PARTIAL_COLUMN_CASES = [
    ((5, 1003), 40, 0),
    ((5, 1003), 40, 1),
    ((3, 102), 62, 0),  # aligned rows (float32, float64), a partial last vector
    ((3, 100), 64, 3),
    ((8, 37), 40, 0),
    ((100, 1003), 40, 0),
    ((33, 259), 77, 2),
]


@requires_cuda
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16, torch.float64])
@pytest.mark.parametrize("shape,gap,offset", PARTIAL_COLUMN_CASES, ids=str)
def test_partial_columns_leave_what_follows_them_out(dtype, shape, gap, offset):
    x = gapped_view(shape, dtype, "cuda", gap=gap, offset=offset, fill=float("nan"))
    for kernel in fast_kernels("cuda"):
        got = wr.sum(x, [0], kernel=kernel)
        assert not got.isnan().any()
        assert_sum_matches(got, x, [0], kernel=kernel)


# The passes after the first in the first pass's launch (launch_model.h, choose_tail;
# cuda/tail.cuh): where the first kernel's last blocks can sum them in a few rounds of
# loads, and the input is small enough for the launches it saves to matter. (dtype of the
# plan, shape, layout, dims, the first pass's kernel, the tail's description: "" where
# the passes run on their own.)
# Every kernel a first pass takes, each group of the tail, both sides of its limits: one
# block, then up to 32 for the last pass of two; passes after it one after another.
TAIL_CASES = [
    (torch.float32, (7, 5, 63, 33), "contiguous", (0, 2), "columns", "tail group=1 rounds=2"),
    (torch.float32, (1000, 2, 7, 9), "contiguous", (0, 2), "columns", "tail group=2 rounds=1"),
    (torch.float32, (64, 12, 20), "contiguous", (0, 2), "slabs", "tail group=16 rounds=1"),
    (torch.float32, (64, 128, 20), "contiguous", (0, 2), "slabs", "tail group=2 rounds=8"),
    # 512 outputs of 64: 32 rounds on one block, 2 on 16
    (
        torch.float32,
        (64, 512, 20),
        "contiguous",
        (0, 2),
        "slabs",
        "tail group=8 rounds=2 blocks=16",
    ),
    (torch.float32, (3, 3072, 200), "stepped", (0, 2), "rows_grouped", "tail group=1 rounds=12"),
    # 13 rounds on one block, 2 on 7
    (
        torch.float32,
        (3, 3100, 200),
        "stepped",
        (0, 2),
        "rows_grouped",
        "tail group=1 rounds=2 blocks=7",
    ),
    (torch.float32, (2, 3, 2, 100000), "contiguous", (1, 3), "rows_split", "tail group=1 rounds=1"),
    (torch.float32, (12, 3, 800), "contiguous", (0, 2), "rows_split", "tail group=4 rounds=1"),
    (torch.float32, (200, 4, 1000), "contiguous", (0, 2), "rows_split", "tail group=32 rounds=2"),
    (torch.float32, (3, 500, 5), "contiguous", (0, 2), "rows_short", "tail group=1 rounds=2"),
    (torch.float32, (3, 500, 8), "contiguous", (0, 2), "rows_vectors", "tail group=1 rounds=2"),
    # 16384 outputs of 3: 2 rounds on 32 blocks; one more output, 3
    (
        torch.float32,
        (3, 16384, 5),
        "contiguous",
        (0, 2),
        "rows_short",
        "tail group=1 rounds=2 blocks=32",
    ),
    (torch.float32, (3, 16385, 5), "contiguous", (0, 2), "rows_short", ""),
    (torch.float32, (256, 3, 12), "sliced", (0, 1, 2), "slabs", "tail group=block rounds=2"),
    # 49152 carries into one output: 49 rounds on however many blocks
    (torch.float32, (16384, 3, 12), "sliced", (0, 1, 2), "slabs", ""),
    # column tiles (stepped 16-bit columns under a short reduced dim)
    (
        torch.bfloat16,
        (2, 25, 7, 74, 5),
        "stepped",
        (-1, 1),
        "column_tiles",
        "tail group=2 rounds=9",
    ),
    (
        torch.bfloat16,
        (3, 25, 7, 74, 5),
        "stepped",
        (-1, 1),
        "column_tiles",
        "tail group=1 rounds=2 blocks=7",
    ),
    # three, four passes: the ones after the first by one block, one after another
    (
        torch.float32,
        (3, 23, 2, 8, 251),
        "contiguous",
        (0, 2, 4),
        "slabs",
        "tail group=1,1 rounds=3",
    ),
    (
        torch.float32,
        (2, 3, 2, 3, 2, 3, 500),
        "contiguous",
        (0, 2, 4, 6),
        "rows_split",
        "tail group=1,1,1 rounds=3",
    ),
    # five passes: four after the first, one more than a tail takes
    (torch.float32, (2, 3, 2, 3, 2, 3, 2, 3, 500), "contiguous", (0, 2, 4, 6, 8), "rows_split", ""),
    # four passes of 8 + 3 + 2 rounds: 13
    (torch.float32, (3, 5, 2, 7, 3, 9, 500), "contiguous", (0, 2, 4, 6), "rows_grouped", ""),
]


@pytest.mark.parametrize("plan_dtype,shape,layout,dims,first,tail", TAIL_CASES, ids=str)
def test_short_last_passes_run_in_the_first_launch(plan_dtype, shape, layout, dims, first, tail):
    x = make(shape, layout, plan_dtype, "cpu", data=unfilled)
    plan = wr._C.plan(x, list(dims), as_cuda=True)
    assert len(plan["passes"]) >= 2
    assert plan["passes"][0]["launch"].split()[0] == first
    assert plan["tail"] == tail


def test_tails_only_for_inputs_the_host_bounds():
    # 192 MiB of float32 rows, four outputs of 3: a tail of one round, but a launch is
    # nothing beside reading the input
    x = torch.empty((2, 3, 2, 4 << 20))
    plan = wr._C.plan(x, [1, 3], as_cuda=True)
    assert len(plan["passes"]) == 2 and plan["tail"] == ""
    plan = wr._C.plan(x[..., : 1 << 20], [1, 3], as_cuda=True)  # 48 MiB
    assert plan["tail"] != ""


def test_tail_blocks_fewer_than_half_the_sms():
    # the tail's blocks wait for the rest of the grid in their SMs' slots: 32 blocks on
    # 132 SMs, at most 20 on 40
    x = torch.empty((3, 16384, 5))
    assert wr._C.plan(x, [0, 2], sms=132, as_cuda=True)["tail"].endswith("blocks=32")
    assert wr._C.plan(x, [0, 2], sms=40, as_cuda=True)["tail"] == ""
    assert wr._C.plan(x[:, :10240], [0, 2], sms=40, as_cuda=True)["tail"].endswith("blocks=20")


@requires_cuda
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("plan_dtype,shape,layout,dims,first,tail", TAIL_CASES, ids=str)
def test_tails_sum_like_torch_sum(dtype, plan_dtype, shape, layout, dims, first, tail):
    x = make(shape, layout, dtype, "cuda")
    got = wr.sum(x, dims)
    assert_sum_matches(got, x, dims)
    assert torch.equal(got, wr.sum(x, dims))  # the same bits, whichever block is last
    assert_sum_matches(wr.sum(x, dims, keepdim=True), x, dims, keepdim=True)
    if dtype.is_floating_point:  # a NaN reaches its output through the tail
        x[(0,) * x.dim()] = float("nan")
        got = wr.sum(x, dims)
        assert got.isnan().sum() == 1
        assert_sum_matches(got, x, dims)


@requires_cuda
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.int32], ids=str)
def test_tails_write_the_result_in_its_order_and_repeat(dtype):
    # kept dims out of memory order: the tail writes the result in place, in its order
    base = random_tensor((33, 63, 5, 7), dtype, "cuda")
    x = base.permute(3, 2, 1, 0)  # 7 x 5 x 63 x 33, the 33 outermost in memory
    assert wr._C.plan(x, [0, 2])["tail"] != ""
    assert_sum_matches(wr.sum(x, (0, 2)), x, (0, 2))
    assert wr.sum(x, (0, 2)).is_contiguous()
    # an expanded reduced dim: each output times its extent, in the tail
    y = random_tensor((1, 7, 5, 63, 33), dtype, "cuda").expand(4, -1, -1, -1, -1)
    assert wr._C.plan(y, [0, 1, 3])["tail"] != ""
    assert_sum_matches(wr.sum(y, (0, 1, 3)), y, (0, 1, 3))


def test_every_kind_is_covered():
    kinds = {kind for *_, ks in CASES for kind in ks}
    assert kinds == {
        "rows_split",
        "rows_vectors",
        "rows_short",
        "slabs",
        "column_tiles",
        "rows_grouped",
        "columns",
    }
    # every kernel that leads a plan of two passes runs a tail in TAIL_CASES
    assert {first for *_, first, tail in TAIL_CASES if tail} == kinds


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("shape,layout,dims,kinds", CASES, ids=str)
def test_every_branch_sums_like_torch_sum(device, dtype, shape, layout, dims, kinds):
    x = make(shape, layout, dtype, device)
    for kernel in fast_kernels(device):
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


def gapped_view(shape, dtype, device, *, gap=0, step=1, offset=0, fill=None):
    """A view of `shape` whose last dim is every step-th element of rows `gap` elements
    longer than they need to be, its data `offset` elements into its storage; the
    elements outside the view are `fill` where given (NaN: a gap must not be added)."""
    shape = tuple(shape)
    row = shape[-1] * step + gap
    count = math.prod(shape[:-1]) * row + offset
    base = random_tensor((count,), dtype, device, seed=3)
    if fill is not None:
        base.fill_(fill)
    strides = [row] if len(shape) > 1 else []
    for size in reversed(shape[1:-1]):
        strides.insert(0, strides[0] * size)
    x = base.as_strided(shape, tuple(strides) + (step,), offset)
    if fill is not None:
        x.copy_(random_tensor(shape, dtype, device, seed=4))
    return x


def assert_gapped_plan(x, dims, kinds, gaps):
    """CUDA auto's plan of the sum: the launches of its passes, the first pass's (period,
    width); the CPU's own plan has no gaps."""
    described = wr._C.plan(x, dims, as_cuda=True)
    assert [p["launch"].split()[0] for p in described["passes"]] == kinds
    assert described["passes"][0]["gaps"] == gaps
    assert all(p["gaps"] == (1, 1) for p in wr._C.plan(x, dims)["passes"])
    return described


def assert_gaps_left_out(x, dims):
    """x holds NaN in every gap: read with the elements, never added."""
    got = wr.sum(x, dims)
    assert not got.isnan().any()
    assert_sum_matches(got, x, dims)


# Gapped rows (CUDA auto, geometry.h's RowGaps): (dtype, shape, gap, step, dims, the
# launches of the passes, the first pass's (period, width)), with each limit from both
# sides: the gap (under a 32-byte sector: 7 float32s, 15 bfloat16s; or, rows a gap apart,
# wider where 75% of the span's sectors hold elements), the span of a strided last dim
# (over the 1 KiB of the tiles of short rows).
GAPPED_CASES = [
    # strided last dims: x[..., ::step]
    (torch.float32, (4096, 1024), 0, 2, [1], ["rows_grouped"], (2, 1)),
    (torch.float32, (64, 1 << 16), 0, 2, [1], ["rows_split"], (2, 1)),
    (torch.float32, (8, 1 << 16), 0, 8, [1], ["rows_split"], (8, 1)),
    (torch.float32, (8, 1 << 16), 0, 9, [1], ["rows_split"], (1, 1)),  # a gap of 8
    (torch.float32, (4096, 129), 0, 2, [1], ["rows_grouped"], (2, 1)),  # a span of 257
    (torch.float32, (4096, 128), 0, 2, [1], ["slabs"], (1, 1)),  # 255: tiles
    (torch.float32, (1 << 16,), 0, 2, [0], ["rows_split"], (2, 1)),  # the full sum
    # rows a gap apart under another reduced dim: x[..., :27] of rows of 32, over both
    (torch.float32, (8192, 64, 27), 5, 1, [1, 2], ["rows_grouped"], (32, 27)),
    (torch.float32, (512, 64, 27), 5, 1, [1, 2], ["rows_split"], (32, 27)),
    (torch.float32, (64, 2, 27), 5, 1, [0, 1, 2], ["rows_split"], (32, 27)),
    (torch.float32, (8192, 64, 27), 7, 1, [1, 2], ["rows_grouped"], (34, 27)),
    # ... gaps of a sector and more where 75% of the sectors hold elements, periods up
    # to 1 KiB
    (torch.float32, (8192, 64, 27), 8, 1, [1, 2], ["rows_grouped"], (35, 27)),  # 97%
    (torch.float32, (8192, 64, 4), 8, 1, [1, 2], ["rows_short", "rows_vectors"], (1, 1)),  # 66%
    (torch.float32, (2858128, 2), 8, 1, [0, 1], ["rows_split"], (10, 2)),  # 80%
    (torch.float32, (512, 64, 248), 8, 1, [1, 2], ["rows_split"], (256, 248)),  # 1024 bytes
    (torch.float32, (512, 64, 249), 8, 1, [1, 2], ["slabs", "rows_vectors"], (1, 1)),  # 1028
    (torch.float32, (8192, 9, 27), 5, 1, [1, 2], ["rows_grouped"], (32, 27)),  # 283 long
    (torch.float32, (8192, 8, 27), 5, 1, [1, 2], ["slabs", "rows_vectors"], (1, 1)),  # 251
    (torch.float32, (8192, 4, 27), 5, 1, [1, 2], ["slabs", "rows_vectors"], (1, 1)),
    # ... and shorter spans where a row of 4-byte elements or wider holds at most 3/2 of
    # a partial sum's bytes (LaunchTuning::kShortGappedRowCarryNumerator): 3 float32s or
    # int32s; narrower elements keep two passes
    (torch.float32, (65536, 18, 2), 3, 1, [1, 2], ["rows_grouped"], (5, 2)),  # 87 long
    (torch.float32, (8192, 3, 3), 1, 1, [1, 2], ["rows_grouped"], (4, 3)),  # 11 long
    (torch.float32, (8192, 3, 4), 1, 1, [1, 2], ["rows_short", "rows_short"], (1, 1)),
    (torch.float32, (64, 5, 2), 3, 1, [1, 2], ["rows_grouped"], (5, 2)),  # few rows
    (torch.int32, (8192, 5, 3), 1, 1, [1, 2], ["rows_grouped"], (4, 3)),
    (torch.bfloat16, (8192, 5, 3), 2, 1, [1, 2], ["rows_short", "rows_short"], (1, 1)),
    (torch.float64, (8192, 7, 3), 1, 1, [0, 1, 2], ["rows_split"], (4, 3)),  # the full sum
    (torch.float32, (8192, 64, 27), 5, 1, [2], ["slabs"], (1, 1)),  # one reduced dim
    (torch.float32, (16, 64, 48, 27), 5, 1, [0, 2, 3], ["rows_split", "columns"], (32, 27)),
    (torch.bfloat16, (4096, 64, 40), 15, 1, [1, 2], ["rows_grouped"], (55, 40)),
    (torch.bfloat16, (4096, 64, 40), 16, 1, [1, 2], ["rows_grouped"], (56, 40)),  # 85%
    (torch.float64, (4096, 64, 40), 3, 1, [1, 2], ["rows_grouped"], (43, 40)),
    (torch.float64, (4096, 64, 40), 4, 1, [1, 2], ["rows_grouped"], (44, 40)),  # 90%
    (torch.int8, (4096, 64, 40), 31, 1, [1, 2], ["rows_grouped"], (71, 40)),
    (torch.int8, (8, 64, 990), 33, 1, [1, 2], ["rows_split"], (1023, 990)),  # an odd period
    (torch.int8, (512, 64, 8), 40, 1, [1, 2], ["rows_short", "rows_vectors"], (1, 1)),  # 33%
]


@pytest.mark.parametrize("case", GAPPED_CASES, ids=str)
def test_gapped_rows_plan(case):
    dtype, shape, gap, step, dims, kinds, gaps = case
    assert_gapped_plan(gapped_view(shape, dtype, "cpu", gap=gap, step=step), dims, kinds, gaps)


@requires_cuda
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("case", GAPPED_CASES, ids=str)
def test_gapped_rows_sum_like_torch_sum(dtype, case):
    _, shape, gap, step, dims, _, gaps = case
    for offset in (0, 1, 3):  # the rows' first vector at every alignment
        x = gapped_view(shape, dtype, "cuda", gap=gap, step=step, offset=offset)
        for kernel in fast_kernels("cuda"):
            if kernel == "exact" and not dtype.is_floating_point:
                continue
            assert_sum_matches(wr.sum(x, dims, kernel=kernel), x, dims, kernel=kernel)


@requires_cuda
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float64], ids=str)
@pytest.mark.parametrize("case", [c for c in GAPPED_CASES if c[-1] != (1, 1)], ids=str)
def test_gapped_rows_leave_the_gaps_out(dtype, case):
    """NaN in every gap: read with the elements, never added."""
    _, shape, gap, step, dims, _, _ = case
    x = gapped_view(shape, dtype, "cuda", gap=gap, step=step, offset=1, fill=float("nan"))
    assert_gaps_left_out(x, dims)


# Gapped inner dims (CUDA auto, geometry.h's Gaps): columns whose kept dims under the
# reduced dim leave gaps under a 32-byte sector, read as one span, the gaps' sums left
# unstored. (dtype, shape, gap, step, dims, the launches of the passes, the first pass's
# (period, width)), each limit from both sides: the gap (7 float32s, 15 bfloat16s), the
# slab (over the 4 KiB of the tiles of slabs), the kept dims the span takes.
GAPPED_COLUMN_CASES = [
    # strided last dims: x[..., ::step], summed over a dim above
    (torch.float32, (2, 32, 5000), 0, 2, [1], ["columns"], (2, 1)),
    (torch.float32, (64, 4096), 0, 2, [0], ["columns"], (2, 1)),
    (torch.float32, (64, 4096), 0, 8, [0], ["columns"], (8, 1)),
    (torch.float32, (64, 4096), 0, 9, [0], ["columns"], (1, 1)),  # a gap of 8
    (torch.bfloat16, (64, 4096), 0, 16, [0], ["columns"], (16, 1)),
    (torch.float32, (64, 4097), 0, 2, [0], ["columns"], (1, 1)),  # rows not aligned alike
    (torch.float32, (8, 4097), 0, 2, [0], ["column_tiles"], (1, 1)),
    # short rows a little apart: x[..., :w] of rows a gap longer, summed over a dim above
    # (rows an odd number of floats apart: a vector's elements a lane, one by one)
    (torch.float32, (7, 7, 3000), 1, 1, [0], ["columns"], (3001, 3000)),
    (torch.float32, (31, 3, 332), 1, 1, [0], ["columns"], (333, 332)),
    (torch.float32, (64, 300, 5), 1, 1, [0], ["columns"], (6, 5)),
    (torch.float32, (3, 300, 5), 1, 1, [0], ["columns"], (6, 5)),
    (torch.float32, (64, 300, 5), 7, 1, [0], ["columns"], (12, 5)),
    (torch.float32, (64, 300, 5), 8, 1, [0], ["columns"], (1, 1)),
    (torch.bfloat16, (64, 300, 5), 15, 1, [0], ["columns"], (20, 5)),
    (torch.bfloat16, (64, 300, 5), 16, 1, [0], ["columns"], (1, 1)),
    (torch.float32, (4, 56, 5), 1, 1, [0], ["slabs"], (1, 1)),  # 4052-byte slabs: tiles
    (torch.float32, (4, 57, 5), 1, 1, [0], ["columns"], (6, 5)),  # 4124 bytes
    (torch.float32, (512, 2, 5), 1, 1, [0], ["columns"], (1, 1)),  # a span of 11: too
    (torch.float32, (512, 3, 5), 1, 1, [0], ["columns"], (6, 5)),  # narrow; 17
    (torch.float32, (16, 7, 100, 5), 3, 1, [1], ["columns"], (8, 5)),  # under kept dims
    # a short reduced dim between kept ones, under a long one: the long one first, over
    # the gapped block (bfloat16 12028 x 4 x 6 x 16 x 4 x 5 of a sliced tensor, over
    # dims (0, 2), took two column passes at 0.38x torch.sum on an H200)
    (torch.bfloat16, (512, 4, 6, 64, 5), 3, 1, [0, 2], ["columns", "columns"], (8, 5)),
    (torch.float32, (512, 4, 6, 64, 5), 3, 1, [0, 2], ["columns", "columns"], (8, 5)),
    (torch.float32, (512, 4, 6, 64, 5), 3, 2, [0, 2], ["columns", "columns"], (1, 1)),
    # ... whose bottom dim is a short reduced one: its rows summed after, a lane a row
    (torch.float32, (512, 6, 64, 5), 3, 1, [0, 3], ["columns", "rows_short"], (8, 5)),
    (torch.bfloat16, (512, 6, 64, 5), 3, 1, [0, 3], ["columns", "rows_short"], (8, 5)),
    # padded inner dims: the innermost dim alone under the reduced dim, rows a gap apart
    # that holds its last vector's rest (x[..., :85] of rows of 88), read padded to whole
    # vectors, in rows aligned alike, where the storage holds the last row's padding
    (torch.bfloat16, (300, 85), 3, 1, [0], ["columns"], (88, 85)),
    (torch.float32, (300, 85), 3, 1, [0], ["columns"], (88, 85)),
    (torch.float32, (300, 85), 7, 1, [0], ["columns"], (88, 85)),
    (torch.float64, (500, 3), 1, 1, [0], ["columns"], (4, 3)),
    (torch.int8, (300, 85), 11, 1, [0], ["columns"], (96, 85)),
    (torch.bfloat16, (3, 9719, 5), 3, 1, [1], ["columns"], (8, 5)),
    (torch.bfloat16, (3, 4, 382, 85), 3, 1, [2], ["columns"], (88, 85)),
    (torch.bfloat16, (300, 85), 2, 1, [0], ["columns"], (1, 1)),  # rows not aligned alike
    (torch.float32, (8, 85), 3, 1, [0], ["columns"], (1, 1)),  # slabs too short to pad
    # more rows than partial vectors take, over a span whose padding the storage holds
    (torch.bfloat16, (3, 40, 252), 0, 2, [1], ["columns"], (2, 1)),
    (torch.float32, (3, 40, 126), 0, 2, [1], ["columns"], (2, 1)),
]


@pytest.mark.parametrize("case", GAPPED_COLUMN_CASES, ids=str)
def test_gapped_columns_plan(case):
    dtype, shape, gap, step, dims, kinds, gaps = case
    x = gapped_view(shape, dtype, "cpu", gap=gap, step=step)
    described = assert_gapped_plan(x, dims, kinds, gaps)
    assert all(p["gaps"] == (1, 1) for p in described["passes"][1:])


def test_gapped_spans_read_whole_vectors_where_the_storage_goes_on():
    """A gapped span whose last vector is partial (x[..., ::2]: 2n - 1 elements) is read
    in whole vectors where the storage has the elements past it (plan: the first pass's
    slack), and element by element where it ends there."""
    x = gapped_view((64, 89, 16), torch.float32, "cpu", step=2)
    (p,) = wr._C.plan(x, [0, 1], as_cuda=True)["passes"]
    assert p["inner"] == 31 and p["gaps"] == (2, 1) and p["slack"] == 1
    (p,) = wr._C.plan(in_tight_storage(x), [0, 1], as_cuda=True)["passes"]
    assert p["inner"] == 31 and p["slack"] == 0
    # The CPU's plan: not gapped, but stepped, with the same slack (cpu/sum_kernels.h).
    assert wr._C.plan(x, [0, 1])["passes"][0]["slack"] == 1


@pytest.mark.parametrize(
    "dtype, step, kept, launch",
    [
        (torch.bfloat16, 2, 252, "columns vector=8"),  # a span of 503
        (torch.bfloat16, 3, 168, "columns vector=8"),  # 502, 2 past it
        (torch.float32, 2, 126, "columns vector=4"),  # 251
        (torch.float64, 2, 126, "columns vector=2"),
    ],
    ids=str,
)
def test_gapped_spans_take_the_launch_of_their_padded_span(dtype, step, kept, launch):
    """The launch model decides on the span as it is read (ReductionPass::read_span):
    over more rows than partial vectors take (40), a span whose padding the storage holds
    (x[..., ::step] of rows a whole number of vectors long) takes whole vectors, one that
    ends the storage narrower loads (an element or a 2-byte pair a lane)."""
    x = gapped_view((3, 40, kept), dtype, "cpu", step=step)
    (p,) = wr._C.plan(x, [1], as_cuda=True)["passes"]
    assert p["inner"] == (kept - 1) * step + 1 and p["gaps"] == (step, 1)
    assert p["slack"] == step - 1 and p["launch"].startswith(launch + " ")
    (p,) = wr._C.plan(in_tight_storage(x), [1], as_cuda=True)["passes"]
    assert p["slack"] == 0 and not p["launch"].startswith(launch + " ")


@requires_cuda
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("case", GAPPED_COLUMN_CASES, ids=str)
def test_gapped_columns_sum_like_torch_sum(dtype, case):
    _, shape, gap, step, dims, _, _ = case
    for offset in (0, 1, 3):  # the rows' first vector at every alignment
        x = gapped_view(shape, dtype, "cuda", gap=gap, step=step, offset=offset)
        if offset == 1:
            x = in_tight_storage(x)  # nothing to read past the last element
        for kernel in fast_kernels("cuda"):
            if kernel == "exact" and not dtype.is_floating_point:
                continue
            assert_sum_matches(wr.sum(x, dims, kernel=kernel), x, dims, kernel=kernel)
        result = wr.sum(x, dims, keepdim=True)
        assert result.is_contiguous()
        assert_sum_matches(result, x, dims, keepdim=True)


@requires_cuda
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float64], ids=str)
@pytest.mark.parametrize("case", [c for c in GAPPED_COLUMN_CASES if c[-1] != (1, 1)], ids=str)
def test_gapped_columns_leave_the_gaps_out(dtype, case):
    """NaN in every gap: read with the elements, never stored."""
    _, shape, gap, step, dims, _, _ = case
    x = gapped_view(shape, dtype, "cuda", gap=gap, step=step, offset=1, fill=float("nan"))
    assert_gaps_left_out(x, dims)


# Short rows a gap apart in slabs that a tile holds (CUDA auto, geometry.h's
# Gaps::tiled_gaps): x[..., :w] of rows of p over a dim above a kept one, read as slabs of
# one gapped span an outer index (the gaps copied into the tile, never added), not runs
# of short rows.
# (dtype, shape, gap, dims, the launches of the passes, the first pass's (period, width)),
# each limit from both sides: the gap (7 float32s, 3 float64s), the gapped slab (4 KiB).
TILED_GAP_CASES = [
    (torch.float32, (4096, 6, 7, 5), 1, [1], ["slabs"], (6, 5)),
    (torch.float32, (4096, 4, 8, 5), 3, [1], ["slabs"], (8, 5)),
    (torch.float32, (4096, 3, 10, 2), 3, [1], ["slabs"], (5, 2)),
    (torch.float32, (4096, 3, 10, 2), 7, [1], ["slabs"], (9, 2)),
    (torch.float32, (4096, 3, 10, 2), 8, [1], ["slabs"], (1, 1)),  # a gap of a sector
    (torch.bfloat16, (4096, 6, 7, 5), 1, [1], ["slabs"], (6, 5)),
    (torch.float64, (4096, 6, 7, 3), 1, [1], ["slabs"], (4, 3)),
    (torch.float64, (4096, 6, 7, 3), 3, [1], ["slabs"], (6, 3)),
    (torch.float64, (4096, 6, 7, 3), 4, [1], ["slabs"], (1, 1)),
    (torch.int8, (4096, 5, 9, 3), 13, [1], ["slabs"], (16, 3)),
    (torch.float32, (1024, 4, 32, 7), 1, [1], ["slabs"], (8, 7)),  # a slab of 1023 floats
    (torch.float32, (1024, 4, 33, 7), 1, [1], ["slabs"], (1, 1)),  # 1055: rows apart
    (torch.float32, (6, 7, 5), 1, [0], ["slabs"], (6, 5)),  # one slab
    (torch.float32, (4096, 6, 3, 7, 5), 1, [1], ["slabs"], (6, 5)),  # two kept dims in the span
    (torch.float32, (4, 1024, 6, 7, 5), 1, [0, 2], ["slabs", "columns"], (6, 5)),  # a pass after
    (torch.float32, (4096, 6, 7, 5), 1, [2], ["slabs"], (1, 1)),  # the dim above the rows
]


@pytest.mark.parametrize("case", TILED_GAP_CASES, ids=str)
def test_tiled_gaps_plan(case):
    dtype, shape, gap, dims, kinds, gaps = case
    assert_gapped_plan(gapped_view(shape, dtype, "cpu", gap=gap), dims, kinds, gaps)


@requires_cuda
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("case", TILED_GAP_CASES, ids=str)
def test_tiled_gaps_sum_like_torch_sum(dtype, case):
    _, shape, gap, dims, _, _ = case
    for offset in (0, 1, 3):  # the slabs at every alignment
        x = gapped_view(shape, dtype, "cuda", gap=gap, offset=offset)
        if offset == 1:
            x = in_tight_storage(x)  # nothing past the last element
        assert_kernels_sum_like_torch_sum(x, dims)
        assert wr.sum(x, dims, keepdim=True).is_contiguous()
    # the kept dims out of the pass's order: the result written in place, permuted
    x = gapped_view(shape, dtype, "cuda", gap=gap)
    order = list(range(x.dim()))[::-1]
    assert_kernels_sum_like_torch_sum(x.permute(order), [order.index(d) for d in dims])


@requires_cuda
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float64], ids=str)
@pytest.mark.parametrize("case", [c for c in TILED_GAP_CASES if c[-1] != (1, 1)], ids=str)
def test_tiled_gaps_leave_the_gaps_out(dtype, case):
    """NaN in every gap: copied into the tile with the elements, never added."""
    _, shape, gap, dims, _, _ = case
    x = gapped_view(shape, dtype, "cuda", gap=gap, offset=1, fill=float("nan"))
    assert_gaps_left_out(x, dims)


def folded_view(shape, dtype, device, layout, gap_fill=None):
    """`shape` contiguous ("contiguous"), or its rows one element past an aligned address
    ("unaligned": still one after another), or a prefix of wider rows ("wide"); or, for
    a 3-D shape, a contiguous tensor with its last two dims swapped ("transposed") or its
    first dim last ("permuted"): the kept dims one dense block, in another order. Or
    ("prefix12", "prefix8x6") the leading corner of rows of that shape, the rest gaps
    (gap_fill in them where given)."""
    if layout.startswith("prefix"):
        wide = tuple(int(n) for n in layout[len("prefix") :].split("x"))
        base = random_tensor((shape[0],) + wide, dtype, device, seed=6)
        corner = (slice(None),) + tuple(slice(0, n) for n in shape[1:])
        if gap_fill is not None:
            kept = base[corner].clone()
            base.fill_(gap_fill)
            base[corner] = kept
        return base[corner]
    if layout == "contiguous":
        return random_tensor(shape, dtype, device, seed=6)
    if layout == "unaligned":
        return random_tensor((math.prod(shape) + 1,), dtype, device, seed=6)[1:].view(shape)
    if layout == "transposed":
        a, b, c = shape
        return random_tensor((a, c, b), dtype, device, seed=6).transpose(1, 2)
    if layout == "permuted":
        a, b, c = shape
        return random_tensor((b, c, a), dtype, device, seed=6).permute(2, 0, 1)
    assert layout == "wide"
    return random_tensor(shape[:-1] + (shape[-1] + 2,), dtype, device, seed=6)[..., : shape[-1]]


# Folded columns (launch_model.h, Launch::fold): a long reduced dim over a few outputs in
# one dense block of memory, the rows one after another, read as folded rows of whole
# vectors (the fewest that hold a whole number of the block's rows, times the count that
# best fills a power of two of lanes): (dtype, shape, layout, dims, the fold and the
# vectors of a folded row, or None where the columns are not folded).
FOLDED_CASES = [
    (torch.float32, (65537, 2), "contiguous", [0], (2, 1)),  # a partial last vector
    (torch.float32, ((1 << 20) + 3, 2), "contiguous", [0], (2, 1)),  # split over blocks
    (torch.float32, (4099, 2, 2), "contiguous", [0, 1], (2, 1)),  # merged reduced dims
    (torch.float32, (3, 1025, 2), "contiguous", [0, 1], (2, 1)),
    (torch.bfloat16, (65537, 4), "contiguous", [0], (4, 1)),
    (torch.bfloat16, (65537, 2), "contiguous", [0], (2, 1)),
    (torch.float16, (65536, 4), "contiguous", [0], (4, 1)),
    # blocks that are no divisor of a vector: 3 vectors hold 4 rows of 3 floats, and 15
    # vectors (of 16 lanes) 20 rows; the last folded row partial, several lanes' worth
    (torch.float32, (65537, 3), "contiguous", [0], (3, 15)),
    (torch.float32, ((1 << 20) + 3, 3), "contiguous", [0], (3, 15)),
    (torch.bfloat16, (100003, 3), "contiguous", [0], (3, 15)),
    (torch.float16, (50001, 5), "contiguous", [0], (5, 15)),
    (torch.float32, (40001, 6), "contiguous", [0], (6, 15)),
    (torch.float32, (40001, 7), "contiguous", [0], (7, 7)),  # 7 of 8 lanes
    (torch.bfloat16, (30011, 20), "contiguous", [0], (20, 15)),
    (torch.bfloat16, (30011, 31), "contiguous", [0], (31, 31)),  # a warp, one lane idle
    (torch.float64, (30011, 3), "contiguous", [0], (3, 15)),
    (torch.int32, (30011, 5), "contiguous", [0], (5, 15)),
    # the kept dims one dense block in another order (an outer dim right above the inner
    # one, merged): x.sum(1) of 5 x N x 4 from N x 4 x 5; whole vectors fold only where
    # that fills more lanes (5 vectors, 15 of 16 lanes folded), else are a stream already
    # (x.sum(0) of N x 6 x 8 transposed: 12 vectors; 2 x 2 floats: one vector)
    (torch.bfloat16, (5, 30011, 4), "permuted", [1], (20, 15)),
    (torch.float32, (5, 30011, 4), "permuted", [1], (20, 15)),
    (torch.float32, (20011, 8, 6), "transposed", [0], None),
    (torch.float32, (2, 30011, 2), "permuted", [1], None),
    (torch.bfloat16, (2, 30011, 2), "permuted", [1], (4, 1)),
    (torch.int8, (65537, 8), "contiguous", [0], None),  # 1-byte elements: not folded
    (torch.int8, (65537, 2), "contiguous", [0], None),
    (torch.bfloat16, (65537, 8), "contiguous", [0], None),  # whole vectors already
    (torch.float64, (65537, 2), "contiguous", [0], None),
    (torch.float32, (20011, 48), "contiguous", [0], None),
    (torch.bfloat16, (30011, 33), "contiguous", [0], None),  # 33 vectors hold the fewest rows
    (torch.float32, (65536, 2), "unaligned", [0], None),
    (torch.float32, (65536, 3), "unaligned", [0], None),
    (torch.float32, (65536, 2), "wide", [0], None),  # rows apart
    (torch.float32, (2, 65536, 2), "contiguous", [1], None),  # two outer slices
    (torch.float32, (100, 2), "contiguous", [0], None),  # short: a slab
    # blocks with gaps (launch_model.h, FoldBlock): the stream holds them, read and left
    # unstored, where it costs at most twice what reading the block alone does: rows of
    # 3 of 12 bfloat16s (24 bytes, every sector read anyway), 4 rows of 3 of 6 in rows of
    # 48, 3 of 5 floats or doubles, rows of 13 (no row aligned matters: one stream), 5 of
    # 20; not 3 of 64 (128 bytes for 38), nor rows wider than 5 (their columns fill lanes
    # enough), nor 2 of 4 floats (padded: whole vectors already), nor periods within a vector
    (torch.bfloat16, (100003, 3), "prefix12", [0], (12, 15)),
    (torch.bfloat16, ((1 << 20) + 3, 3), "prefix12", [0], (12, 15)),  # split over blocks
    (torch.float16, (30011, 4, 3), "prefix8x6", [0], (48, 30)),
    (torch.float32, (65537, 3), "prefix5", [0], (5, 15)),
    (torch.float64, (40001, 3), "prefix5", [0], (5, 15)),
    (torch.int32, (40001, 2, 3), "prefix3x4", [0], (12, 15)),
    (torch.bfloat16, (65537, 3), "prefix13", [0], (13, 13)),  # rows of 26 bytes: one stream
    (torch.bfloat16, (65537, 5), "prefix20", [0], (20, 15)),
    (torch.bfloat16, (65537, 3), "prefix64", [0], None),
    (torch.bfloat16, (65537, 6), "prefix20", [0], None),  # rows 6 wide: lanes enough
    (torch.float32, (65537, 9), "prefix31", [0], None),
    (torch.float32, (65537, 2), "prefix4", [0], None),
    (torch.bfloat16, (65537, 3), "prefix4", [0], None),  # rows within a vector: not folded
]


@pytest.mark.parametrize("case", FOLDED_CASES, ids=str)
def test_folded_columns_plan(case):
    dtype, shape, layout, dims, fold = case
    (p,) = wr._C.plan(folded_view(shape, dtype, "cpu", layout), dims, as_cuda=True)["passes"]
    if fold is None:
        assert "fold=" not in p["launch"]
    else:
        outputs, vectors = fold
        lanes, tx = 16 // dtype.itemsize, 1 << (vectors - 1).bit_length()
        described = f"columns vector={lanes} tx={tx} ty={512 // tx} fold={outputs}"
        assert p["launch"] == described + (f" fold_vectors={vectors}" if vectors > 1 else "")


@requires_cuda
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("case", FOLDED_CASES, ids=str)
def test_folded_columns_sum_like_torch_sum(dtype, case):
    _, shape, layout, dims, _ = case
    x = folded_view(shape, dtype, "cuda", layout)
    for kernel in fast_kernels("cuda"):
        if kernel == "exact" and not dtype.is_floating_point:
            continue
        assert_sum_matches(wr.sum(x, dims, kernel=kernel), x, dims, kernel=kernel)
        got = wr.sum(x, dims, keepdim=True, kernel=kernel)
        assert_sum_matches(got, x, dims, keepdim=True, kernel=kernel)
    # Every count of rows in the last folded row (up to 32 of them), and a NaN row after
    # the data (the partial last row is read element by element, never past the data).
    for rows in range(shape[0] - 32, shape[0]) if x.dim() == 2 else ():
        assert_sum_matches(wr.sum(x[:rows], dims), x[:rows], dims)
    if dtype.is_floating_point and x.dim() == 2:
        z = x.clone()
        z[-1] = float("nan")
        assert_sum_matches(wr.sum(z[:-1], dims), z[:-1], dims)


@requires_cuda
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float64], ids=str)
@pytest.mark.parametrize("case", [c for c in FOLDED_CASES if c[2].startswith("prefix")], ids=str)
def test_folded_gaps_are_left_out(dtype, case):
    """NaN in every gap of a folded stream: read with the block, never stored."""
    _, shape, layout, dims, _ = case
    x = folded_view(shape, dtype, "cuda", layout, gap_fill=float("nan"))
    for kernel in fast_kernels("cuda"):
        got = wr.sum(x, dims, kernel=kernel)
        assert not got.isnan().any()
        assert_sum_matches(got, x, dims, kernel=kernel)


def reversed_view(shape, dtype, device, offset=0):
    """A contiguous tensor of `shape` (its data `offset` elements into its storage), its
    dims reversed: the sum's result holds the first memory dim innermost."""
    count = math.prod(shape) + offset
    base = random_tensor((count,), dtype, device, seed=7)[offset:].view(shape)
    return base.permute(*reversed(range(len(shape))))


# Outer-first columns (Launch::outer_first): flat columns whose result holds consecutive
# outer indices side by side. (dtype, contiguous shape A x B x C reversed, so that the
# sum over dim 1 has outer A, reduced B, inner C; the outer indices a warp takes of each
# column, 0 where the launch is not outer-first.)
OUTER_FIRST_CASES = [
    # a lane's outputs in at most 32 bytes: at most 4 outer indices a warp
    (torch.float32, (100, 4, 64), 4),
    (torch.float32, (64, 4, 64), 4),
    (torch.float32, (63, 4, 64), 4),
    (torch.float32, (33, 4, 64), 4),
    (torch.float32, (32, 4, 64), 4),
    (torch.float32, (17, 3, 1000), 4),
    (torch.float32, (9, 3, 1000), 4),
    (torch.float32, (3, 3, 1000), 4),
    (torch.float32, (2, 3, 1000), 2),
    (torch.int8, (4, 2, 4099), 4),  # shifted vectors, 8 columns a warp
    (torch.float16, (3, 5, 1031), 4),
    (torch.float64, (2, 2, 999), 2),
    (torch.float32, (1025, 7, 1000), 4),
    (torch.float32, (1025, 7, 17), 0),  # short slabs: tiles
    (torch.float32, (4099, 2, 36), 4),
    (torch.bfloat16, (333, 5, 96), 4),
    (torch.float64, (257, 2, 130), 4),
    # wider: 32 outer indices a warp
    (torch.bool, (806, 7, 70), 32),  # shifted 16-byte vectors: 16 int64 outputs a lane
    (torch.int8, (129, 6, 400), 32),  # 16-byte vectors
    (torch.int8, (65, 3, 4099), 32),
    (torch.bool, (33, 3, 4099), 32),  # a second warp of 32 for one outer index
    (torch.bool, (9, 3, 4099), 16),
    # only where the stores matter: a column at most 8 times its output's bytes
    (torch.float32, (65, 8, 64), 4),
    (torch.float32, (65, 9, 64), 0),
    (torch.bfloat16, (40, 8, 96), 4),
    (torch.bfloat16, (40, 9, 96), 0),
    (torch.int8, (40, 64, 400), 4),  # int64 outputs: 64 rows of bytes; 4-byte words
    (torch.int8, (40, 65, 400), 0),
    (torch.float32, (65, 4096, 8), 0),  # a long reduced dim
    (torch.float32, (5, 4096, 8), 0),
    # fewer columns a slice than a warp takes at that span: the span widens to fill it
    (torch.float64, (1000, 4, 4), 16),  # 2 columns of 2
    (torch.float16, (1000, 6, 32), 8),  # 4 columns of 8
    (torch.float32, (1000, 3, 12), 8),  # 3 columns of 4
    (torch.float32, (1000, 3, 4), 32),  # 1 column
    (torch.float64, (13, 3, 4), 16),  # the outer extent to a power of two
]


@pytest.mark.parametrize("case", OUTER_FIRST_CASES, ids=str)
def test_outer_first_columns_plan(case):
    dtype, shape, span = case
    x = reversed_view(shape, dtype, "cpu")
    (p,) = wr._C.plan(x, [1], as_cuda=True)["passes"]
    assert p["outer"] == [(shape[0], shape[1] * shape[2])] and p["inner"] == shape[2]
    assert p["outer_outputs_adjacent"]
    assert (" outer_first" in p["launch"]) == (span > 0), p["launch"]
    assert (" span=" in p["launch"]) == (0 < span < 32), p["launch"]
    if 0 < span < 32:
        assert p["launch"].removesuffix(" lean").endswith(f" span={span}"), p["launch"]
    # The same sum of the tensor in its own order: its result is in memory order.
    (p,) = wr._C.plan(random_tensor(shape, dtype, "cpu"), [1], as_cuda=True)["passes"]
    assert not p["outer_outputs_adjacent"] and " outer_first" not in p["launch"]
    # The CPU's plan writes no result in place.
    assert not wr._C.plan(x, [1])["passes"][0]["outer_outputs_adjacent"]


# rows_grouped: lanes a row as wide as its loads, up to a warp, but each lane keeping at
# least kGroupedLoadsPerLane (4) of them. (shape, layout, dtype, the group.)
ROW_GROUP_CASES = [
    ((16384, 257), "contiguous", torch.float32, 16),  # 65 loads: 16 lanes of 4
    ((4096, 264), "contiguous", torch.float32, 16),  # 66 loads
    ((4096, 508), "contiguous", torch.float32, 16),  # 127 loads: just under 32 lanes of 4
    ((4096, 512), "contiguous", torch.float32, 32),  # 128 loads
    ((4096, 512), "offset", torch.float32, 32),  # a head and a tail
    ((65536, 1024), "contiguous", torch.float32, 32),
    ((8192, 600), "contiguous", torch.bfloat16, 16),  # 75 loads of 8
    ((8192, 1100), "contiguous", torch.int8, 16),  # 69 loads of 16
    ((4096, 1024), "stepped", torch.float32, 32),  # a gapped span of 1023: 256 loads
    ((8192, 300), "stepped", torch.float32, 32),  # a span of 599: 150 loads
    ((8192, 200), "stepped", torch.float32, 16),  # a span of 399: 100 loads
]


@pytest.mark.parametrize("shape,layout,dtype,group", ROW_GROUP_CASES, ids=str)
def test_row_groups_keep_loads_per_lane(shape, layout, dtype, group):
    x = make(shape, layout, dtype, "cpu")
    (p,) = wr._C.plan(x, [1], as_cuda=True)["passes"]
    assert p["launch"] == f"rows_grouped group={group}", p


@requires_cuda
@pytest.mark.parametrize("shape,layout,dtype,group", ROW_GROUP_CASES, ids=str)
def test_row_groups_sum_like_torch_sum(shape, layout, dtype, group):
    x = make(shape, layout, dtype, "cuda")
    assert_sum_matches(wr.sum(x, [1]), x, [1])
    x = x[:-1, 1:]  # another alignment, a last group of the warp partial
    assert_sum_matches(wr.sum(x, [1]), x, [1])


# Rows of 2-8 elements that rows_vectors does not take (not whole aligned vectors): a
# lane a row, the row's length to a power of two its slots (2, 4 or 8); 9 elements and
# more, tiles (or, far apart, the vectors that cover them). Rows one after the other, a
# step apart, a gap apart (a prefix of wider rows), out of the result's order (a permuted
# input's), in counts that leave the last rounds partial. (length, slots)
SHORT_ROW_LENGTHS = [(2, 2), (3, 4), (4, 4), (5, 8), (7, 8), (8, 8)]


def short_rows(rows, length, layout, dtype, device):
    if layout == "permuted":  # rows x 17 rows, stored 17 x rows: the result out of order
        return random_tensor((17, rows, length), dtype, device).permute(1, 0, 2)
    return make((rows, length), layout, dtype, device)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("length,slots", SHORT_ROW_LENGTHS, ids=str)
@pytest.mark.parametrize("layout", ["offset", "stepped", "sliced"])
def test_short_rows_take_a_lane_a_row(dtype, length, slots, layout):
    x = make((4099, length), layout, dtype, "cpu")
    (p,) = wr._C.plan(x, [1], as_cuda=True)["passes"]
    assert p["launch"] == f"rows_short slots={slots}", p
    x = make((4099, 9), layout, dtype, "cpu")
    (p,) = wr._C.plan(x, [1], as_cuda=True)["passes"]
    # (rows of 9 four-byte elements 24 apart are far apart: the vectors that cover them)
    far = layout == "sliced" and dtype.itemsize == 4
    assert p["launch"].startswith("rows_vectors group=4 vectors=3 covering" if far else "slabs "), p


@requires_cuda
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("length,slots", SHORT_ROW_LENGTHS, ids=str)
@pytest.mark.parametrize("layout", ["contiguous", "offset", "stepped", "sliced", "permuted"])
def test_short_rows_sum_like_torch_sum(dtype, length, slots, layout):
    for rows in (1, 31, 4099, 70001):
        x = short_rows(rows, length, layout, dtype, "cuda")
        dims = [2] if layout == "permuted" else [1]
        launch = wr._C.plan(x, dims)["passes"][0]["launch"]
        if rows == 1 and layout != "permuted":  # the full reduction (permuted: 17 rows)
            assert launch.startswith("rows_split"), launch
        elif layout in ("contiguous", "permuted"):  # whole aligned vectors, or short rows
            assert launch.split()[0] in ("rows_vectors", "rows_short"), launch
        else:
            assert launch == f"rows_short slots={slots}", launch
        assert_kernels_sum_like_torch_sum(x, dims)


# Kept dims one dim in memory whose result order differs (a transposed pair under the
# reduced dim): on CUDA auto the result's innermost dim stays apart from the dims below
# it, the outer dim whose outputs sit side by side. (dtype, shape, strides, dims, the
# pass's outer and inner, its launch's start.)
UNMERGED_CASES = [
    # bool 8 x 201 x 150795 transposed, over dim 0 (smaller)
    (torch.bool, (8, 201, 1507), (302907, 1, 201), [0], [(1507, 201)], 201, "columns"),
    (
        torch.bfloat16,
        (2, 2, 323, 1942),
        (1254532, 627266, 1, 323),
        [0],
        [(3884, 323)],
        323,
        "columns",
    ),
    (torch.int32, (2, 1070, 198), (211860, 1, 1070), [0], [(198, 1070)], 1070, "columns"),
    # the kept pair of 33 x 6 transposed under a reduced dim of 5 (132 bytes below):
    # tiles of whole slabs
    (
        torch.float32,
        (32, 114, 5, 33, 6),
        (990, 31680, 198, 1, 33),
        [2],
        [(3648, 990), (6, 33)],
        33,
        "slabs",
    ),
]


@pytest.mark.parametrize("case", UNMERGED_CASES, ids=str)
def test_result_innermost_dim_stays_apart(case):
    dtype, shape, strides, dims, outer, inner, launch = case
    x = random_tensor((math.prod(shape),), dtype, "cpu").as_strided(shape, strides)
    (p,) = wr._C.plan(x, dims, as_cuda=True)["passes"]
    assert (p["outer"], p["inner"]) == (outer, inner) and p["outer_outputs_adjacent"], p
    assert p["launch"].startswith(launch), p["launch"]
    # Where the kernels do not write the result in place (the CPU), the dims merge.
    q = wr._C.plan(x, dims)["passes"][0]
    assert q["inner"] > inner and not q["outer_outputs_adjacent"], q


@requires_cuda
@pytest.mark.parametrize("case", UNMERGED_CASES, ids=str)
def test_result_innermost_dim_apart_sums_like_torch_sum(case):
    dtype, shape, strides, dims, _, _, _ = case
    for offset in (0, 1):
        flat = random_tensor((math.prod(shape) + offset,), dtype, "cuda")[offset:]
        x = flat.as_strided(shape, strides)
        for keepdim in (False, True):
            result = wr.sum(x, dims, keepdim=keepdim)
            assert result.is_contiguous()
            assert_sum_matches(result, x, dims, keepdim=keepdim)


@requires_cuda
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("case", OUTER_FIRST_CASES, ids=str)
def test_outer_first_columns_sum_like_torch_sum(dtype, case):
    _, shape, _ = case
    for offset in (0, 1):
        x = reversed_view(shape, dtype, "cuda", offset)
        for keepdim in (False, True):
            result = wr.sum(x, [1], keepdim=keepdim)
            assert result.is_contiguous()
            assert_sum_matches(result, x, [1], keepdim=keepdim)
        # Over more dims: the sum of both kept dims' neighbours, and with a kept dim
        # expanded.
        assert_sum_matches(wr.sum(x[:, :, :-1], [1]), x[:, :, :-1], [1])
        y = x[:, :, :1].expand(*x.shape[:2], 3)
        assert_sum_matches(wr.sum(y, [1]), y, [1])


# A permuted result whose innermost dim lies above narrow kept dims (under 64 bytes) that
# are one wide block with it (over 4 KiB): on CUDA auto they merge, the block is read in
# vectors, and the columns store across (Launch::store_across: a tile's outputs staged,
# then stored in result order). (dtype, shape, strides, dims, the pass's outer, inner,
# length and result_apart.) The float32 case has a long reduced dim over few tiles: its
# tiles are split over blocks, the last of which stores across.
NARROW_MERGED_CASES = [
    # float16 2 x 5 x 3 x 171730 permuted (2, 0, 3, 1) over dims (2, 0), smaller
    (torch.float16, (2, 5, 3, 4099), (20495, 1, 40990, 5), [2, 0], [], 20495, 6, 5),
    # float32 2 x 1067 x 2 x 5 x 1910 transposed over dims (1, 0), smaller
    (torch.float32, (2, 67, 2, 5, 410), (274700, 4100, 2050, 1, 5), [1, 0], [], 4100, 134, 5),
    # bfloat16 3 x 3 x 84 x 5 x 25 x 100 transposed over dim 3: outer dims too
    (
        torch.bfloat16,
        (3, 7, 5, 25, 100),
        (87500, 12500, 2500, 1, 25),
        [2],
        [(21, 12500)],
        2500,
        5,
        25,
    ),
    # a long reduced dim, few outputs: N x 5 x 212 stored N x 212 x 5, over dim 0
    (torch.float32, (3001, 5, 212), (1060, 1, 5), [0], [], 1060, 3001, 5),
    (torch.int32, (6, 7, 1031), (7217, 1, 7), [0], [], 7217, 6, 7),
]


def narrow_merged_view(shape, strides, dtype, device, offset=0):
    count = math.prod(shape) + offset
    return random_tensor((count,), dtype, device, seed=11)[offset:].as_strided(shape, strides)


@pytest.mark.parametrize("case", NARROW_MERGED_CASES, ids=str)
def test_narrow_kept_dims_merge_and_store_across(case):
    dtype, shape, strides, dims, outer, inner, length, apart = case
    x = narrow_merged_view(shape, strides, dtype, "cpu")
    (p,) = wr._C.plan(x, dims, as_cuda=True)["passes"]
    assert (p["outer"], p["inner"], p["length"]) == (outer, inner, length), p
    assert p["result_apart"] == apart and not p["outer_outputs_adjacent"], p
    assert p["launch"].startswith("columns ") and p["launch"].endswith(" store_across"), p
    # The CPU writes its result in order, then puts it in place.
    assert wr._C.plan(x, dims)["passes"][0]["result_apart"] == 1


def test_narrow_kept_dims_stay_apart_only_when_they_are_wide():
    # 64 bytes below (16 floats): apart, outer-first (8 rows: the stores matter)
    x = narrow_merged_view((8, 16, 300), (4800, 1, 16), torch.float32, "cpu")
    (p,) = wr._C.plan(x, [0], as_cuda=True)["passes"]
    assert (p["inner"], p["outer_outputs_adjacent"]) == (16, True), p
    assert " outer_first" in p["launch"] and "store_across" not in p["launch"], p
    # 15 floats below: merged
    x = narrow_merged_view((64, 15, 300), (4500, 1, 15), torch.float32, "cpu")
    (p,) = wr._C.plan(x, [0], as_cuda=True)["passes"]
    assert (p["inner"], p["result_apart"]) == (4500, 15) and "store_across" in p["launch"], p
    # 16 floats below (64 bytes) in a block of 128 bytes: apart
    x = narrow_merged_view((64, 16, 2), (32, 1, 16), torch.float32, "cpu")
    (p,) = wr._C.plan(x, [0], as_cuda=True)["passes"]
    assert (p["inner"], p["outer_outputs_adjacent"]) == (16, True), p


# Narrow kept dims under the result's innermost dim that make a block of at most 4 KiB
# with it merge too (the block a slab of tiles, or columns of vectors, rather than tiles
# of several short segments, or columns an element a lane): (dtype, shape, strides, dims,
# the pass's outer, inner, length and result_apart, its launch's start).
SHORT_MERGED_CASES = [
    # bfloat16 804 x 164 x 13 x 7 x 5 transposed over dim 2, smaller: a 7 x 5 block
    *[
        (dtype, (40, 10, 13, 7, 5), (4550, 455, 35, 1, 7), [2], [(400, 455)], 35, 13, 7, launch)
        for dtype, launch in [
            (torch.bfloat16, "columns vector=8 shifted"),
            (torch.float32, "slabs segments=1"),
        ]
    ],
    # int8 7 x 2597 x 6 x 32 x 5 permuted, over dim -2, smaller: a 7 x 5 block, merged
    # with the kept dims above it
    (
        torch.int8,
        (7, 97, 6, 32, 5),
        (1, 210, 35, 20370, 7),
        [-2],
        [],
        20370,
        32,
        7,
        "columns vector=16 shifted",
    ),
    # bfloat16 45875 x 2 x 886 transposed over dim 0, smaller: a 2 x 886 block
    (
        torch.bfloat16,
        (4587, 2, 886),
        (1772, 1, 2),
        [0],
        [],
        1772,
        4587,
        2,
        "columns vector=2 tx=32 ty=16 flat store_across",
    ),
    # a block of exactly 4 KiB
    (torch.float32, (64, 4, 256), (1024, 1, 4), [0], [], 1024, 64, 4, "columns vector=4"),
]


@pytest.mark.parametrize("case", SHORT_MERGED_CASES, ids=str)
def test_narrow_kept_dims_merge_into_short_blocks(case):
    dtype, shape, strides, dims, outer, inner, length, apart, launch = case
    x = narrow_merged_view(shape, strides, dtype, "cpu")
    (p,) = wr._C.plan(x, dims, as_cuda=True)["passes"]
    assert (p["outer"], p["inner"], p["length"]) == (outer, inner, length), p
    assert p["result_apart"] == apart and not p["outer_outputs_adjacent"], p
    assert p["launch"].startswith(launch), p


@requires_cuda
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("case", NARROW_MERGED_CASES + SHORT_MERGED_CASES, ids=str)
def test_narrow_merged_sums_like_torch_sum(dtype, case):
    _, shape, strides, dims, *_ = case
    # aligned, and rows read shifted or element by element
    assert_placed_sums_match(shape, strides, dims, dtype, offsets=(0, 1, 3), expanded=-1)


def assert_placed_sums_match(shape, strides, dims, dtype, offsets, expanded):
    """Sums of a view written in place in the result's layout: torch.sum's values and
    strides, keepdim or not, and with the kept dim `expanded` broadcast too (its sum
    copied out along it by the store)."""
    for offset in offsets:
        x = narrow_merged_view(shape, strides, dtype, "cuda", offset)
        for keepdim in (False, True):
            result = wr.sum(x, dims, keepdim=keepdim)
            assert result.stride() == torch.sum(x, dims, keepdim=keepdim).stride()
            assert_sum_matches(result, x, dims, keepdim=keepdim)
        y = x.narrow(expanded, 0, 1).expand(x.shape)
        assert_sum_matches(wr.sum(y, dims), y, dims)


# Slices (geometry.h, ReductionPass::slices): a columns pass of whole aligned vectors adds
# the innermost reduced dim among its outer dims too, where that lies above its rows,
# rather than leaving it to a pass of its own: (shape, dims, the pass's length, reduced
# stride, slices and inner), contiguous.
SLICED_CASES = [
    ((38, 2, 541, 2, 16), [1, 3], 2, 16, (2, 17312), 16),
    ((64, 3, 100, 32), [0, 2], 100, 32, (64, 9600), 32),
    ((5, 7, 200, 48), [2, 0], 200, 48, (5, 67200), 48),
    ((3, 5, 70, 2, 16), [0, 2, 3], 140, 16, (3, 11200), 16),  # 70 x 2 merged
    ((2, 3, 5, 7, 50, 16), [0, 2, 4], 50, 16, (5, 5600), 16),  # and a pass after
    # over dim 2 and the short dim 4 under it, dim 0 as slices
    ((3, 5, 110, 4, 4), [0, 2, 4], 110, 16, (3, 8800), 16),
]


@pytest.mark.parametrize("case", SLICED_CASES, ids=str)
def test_columns_take_a_second_reduced_dim_as_slices(case):
    shape, dims, length, stride, slices, inner = case
    for dtype in (torch.float32, torch.bfloat16, torch.int8):
        x = make(shape, "contiguous", dtype, "cpu")
        p = wr._C.plan(x, dims, as_cuda=True)["passes"][0]
        assert (p["length"], p["reduced_stride"], p["slices"], p["inner"]) == (
            length,
            stride,
            slices,
            inner,
        ), p
        assert p["launch"].startswith("columns vector="), p  # no tiles, folded rows or at once
        assert "fold" not in p["launch"] and "tiles_at_once" not in p["launch"], p
        # The CPU's kernels plan a pass for each reduced dim, and so do columns that are
        # not whole aligned vectors (an element or a pair a lane lost with slices; a later
        # pass reads aligned partial sums).
        assert all(q["slices"] == (1, 0) for q in wr._C.plan(x, dims)["passes"])
        for layout in ("offset", "sliced"):
            x = make(shape, layout, dtype, "cpu")
            p = wr._C.plan(x, dims, as_cuda=True)["passes"][0]
            assert p["slices"] == (1, 0), (layout, p)


def interleaved(dtype, device):
    """Reduced dims 12 and 8 elements apart, 2 and 1200 of them, over rows of 4: the
    outer one's step is under the other's span."""
    base = random_tensor((9608,), dtype, device)
    return base.as_strided((2, 1200, 4), (12, 8, 1))


# Whole aligned vectors (a lane's loads down a short reduced dim in flight together):
# float32 38 x 2 x 54191 x 2 x 4 over dims (1, 3), smaller.
WHOLE_VECTOR_SLICES = ((38, 2, 541, 2, 4), [1, 3])


def test_slices_only_over_whole_vectors_whose_rows_run_up():
    shape, dims = WHOLE_VECTOR_SLICES
    (p,) = wr._C.plan(make(shape, "contiguous", torch.float32, "cpu"), dims, as_cuda=True)["passes"]
    assert (p["length"], p["slices"], p["launch"]) == (
        2,
        (2, 4328),
        "columns vector=4 cached tx=512 ty=1 flat",  # rows 16 bytes apart
    )
    # Rows of 4 bfloat16s are half a vector: no slices, two passes.
    passes = wr._C.plan(make(shape, "contiguous", torch.bfloat16, "cpu"), dims, as_cuda=True)[
        "passes"
    ]
    assert [q["slices"] for q in passes] == [(1, 0), (1, 0)]
    # Rows that would interleave: two passes.
    passes = wr._C.plan(interleaved(torch.float32, "cpu"), [0, 1], as_cuda=True)["passes"]
    assert [q["slices"] for q in passes] == [(1, 0), (1, 0)]


@requires_cuda
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("case", SLICED_CASES + [WHOLE_VECTOR_SLICES], ids=str)
def test_sliced_columns_sum_like_torch_sum(dtype, case):
    shape, dims = case[:2]
    for layout in ("contiguous", "offset", "sliced"):  # sliced, and two passes unaligned
        x = make(shape, layout, dtype, "cuda")
        for keepdim in (False, True):
            assert_sum_matches(wr.sum(x, dims, keepdim=keepdim), x, dims, keepdim=keepdim)
    # The same bits from run to run, and a transposed view (its result permuted).
    x = make(shape, "contiguous", dtype, "cuda")
    assert torch.equal(wr.sum(x, dims), wr.sum(x, dims))
    y = x.transpose(0, -1)
    flipped = [y.dim() - 1 - (d % y.dim()) for d in dims]
    assert_sum_matches(wr.sum(y, flipped), y, flipped)
    z = interleaved(dtype, "cuda")
    assert_sum_matches(wr.sum(z, [0, 1]), z, [0, 1])


# 1-byte elements in rows aligned alike to 4 bytes: 4-byte words, four outputs a lane,
# but for whole 16-byte vectors under short reduced dims; shifted vectors where the rows
# are not aligned alike to 4 bytes.
BYTE_WORD_CASES = [
    ((32, 4096), "contiguous", [0], "columns vector=16 "),  # whole vectors, short columns
    ((33, 4096), "contiguous", [0], "columns vector=4 "),
    # rows 4-byte aligned only: words from 8 rows (kColumnMinWordRows), shifted below
    ((8, 4100), "contiguous", [0], "columns vector=4 "),
    ((7, 4100), "contiguous", [0], "columns vector=16 shifted "),
    ((2, 4100), "contiguous", [0], "columns vector=16 shifted "),
    ((6, 4098), "contiguous", [0], "columns vector=16 shifted "),  # 2-byte aligned
    ((6, 4096), "offset", [0], "columns vector=16 shifted "),
    ((700, 4100), "contiguous", [0], "columns vector=4 "),  # long columns
    ((700, 4098), "contiguous", [0], "columns vector=1 "),
    ((4096, 3, 64), "contiguous", [1], "columns vector=16 "),
    ((4096, 3, 66), "contiguous", [1], "columns vector=16 shifted "),
    ((4096, 3, 68), "contiguous", [1], "columns vector=16 shifted "),  # 3 rows: shifted
    ((4096, 9, 68), "contiguous", [1], "columns vector=4 "),
    ((64, 4096), "stepped", [0], "columns vector=4 "),  # a gapped span
]


def one_byte_columns_plan(shape, layout, dims, launch):
    for dtype in (torch.int8, torch.uint8, torch.bool):
        (p,) = wr._C.plan(make(shape, layout, dtype, "cpu"), dims, as_cuda=True)["passes"]
        assert p["launch"].startswith(launch), (dtype, p["launch"])


@pytest.mark.parametrize("shape,layout,dims,launch", BYTE_WORD_CASES, ids=str)
def test_byte_word_columns_plan(shape, layout, dims, launch):
    one_byte_columns_plan(shape, layout, dims, launch)


@requires_cuda
@pytest.mark.parametrize("dtype", [torch.int8, torch.uint8, torch.bool], ids=str)
@pytest.mark.parametrize("shape,layout,dims,launch", BYTE_WORD_CASES, ids=str)
def test_byte_word_columns_sum_like_torch_sum(dtype, shape, layout, dims, launch):
    x = make(shape, layout, dtype, "cuda")
    assert_sum_matches(wr.sum(x, dims), x, dims)
    x = x[..., 1:]  # the rows' first word at another alignment
    assert_sum_matches(wr.sum(x, dims), x, dims)


# 1-byte elements summed into 8-byte integers, 16 a lane (128 bytes): where a warp's 32
# lanes hold consecutive whole columns, in the pass's order, the warp stores them through
# shared memory (columns.cuh, store_by_warp); lane by lane elsewhere (a slice's partial
# last column, outputs in another order). (shape, layout, dims, the launch's start.)
WARP_STORE_CASES = [
    ((24, 4096), "contiguous", [0], "columns vector=16 tx=128 ty=4 "),  # ty 4: lane by lane
    ((5, 65536), "contiguous", [0], "columns vector=16 tx=512 ty=1 flat"),
    ((3, 6, 4000), "contiguous", [1], "columns vector=16 tx=512 ty=1 flat"),  # warps across slices
    ((3000, 5, 48), "contiguous", [1], "columns vector=16 cached tx=512 ty=1 flat"),  # 3 a slice
    # a partial last column in each slice
    ((3, 6, 4008), "contiguous", [1], "columns vector=16 shifted tx=512 ty=1 flat"),
    ((7, 20000), "offset", [0], "columns vector=16 shifted tx=512 ty=1 flat"),
    ((2, 7, 9001), "sliced", [1], "columns vector=16 shifted tx=512 ty=1 flat"),
]


@pytest.mark.parametrize("shape,layout,dims,launch", WARP_STORE_CASES, ids=str)
def test_wide_output_columns_plan(shape, layout, dims, launch):
    one_byte_columns_plan(shape, layout, dims, launch)


@requires_cuda
@pytest.mark.parametrize("dtype", [torch.int8, torch.uint8, torch.bool], ids=str)
@pytest.mark.parametrize("shape,layout,dims,launch", WARP_STORE_CASES, ids=str)
def test_wide_output_columns_sum_like_torch_sum(dtype, shape, layout, dims, launch):
    x = make(shape, layout, dtype, "cuda")
    for keepdim in (False, True):
        assert_sum_matches(wr.sum(x, dims, keepdim=keepdim), x, dims, keepdim=keepdim)
    # dtype=int64 asked for (read at their own width, as without it) and int32 (cast
    # first, as torch.sum does: 4-byte columns, stored lane by lane)
    for dtype in (torch.int64, torch.int32):
        assert_sum_matches(wr.sum(x, dims, dtype=dtype), x, dims, dtype=dtype)
    y = x.transpose(0, -1)  # a permuted result: outputs in another order
    assert_sum_matches(
        wr.sum(y, [y.dim() - 1 - d for d in dims]), y, [y.dim() - 1 - d for d in dims]
    )


# Flat columns of 2-byte elements under a short reduced dim, one lane down it, in result
# order: a block takes 2 or 4 tiles at once (Launch::tiles_at_once), as many as keep a
# lane's loads within the rows it has in flight (8 rows of 16-byte vectors, 4 shifted),
# while its blocks make 3 rounds of the resident ones (two an SM: 264 on 132 SMs).
# bfloat16 (outer, reduced, 32) over dim 1: 4 columns an outer index, 512 a tile. (shape,
# tiles at once)
AT_ONCE_CASES = [
    ((1 << 19, 2, 32), 4),  # 4096 tiles, 2 rows: 4 tiles' rows a lane
    ((1 << 19, 3, 32), 2),
    ((1 << 19, 4, 32), 2),
    ((1 << 19, 5, 32), 1),  # 5 rows: one tile
    ((405504, 2, 32), 4),  # 3168 tiles: 792 blocks, 3 rounds of 264
    ((405376, 2, 32), 2),  # 3167 tiles
    ((202752, 2, 32), 2),  # 1584 tiles
    ((202624, 2, 32), 1),  # 1583 tiles
]


@pytest.mark.parametrize("shape,at_once", AT_ONCE_CASES, ids=str)
def test_short_columns_take_tiles_at_once(shape, at_once):
    for dtype in (torch.bfloat16, torch.float16, torch.int16):
        x = make(shape, "contiguous", dtype, "cpu")
        (p,) = wr._C.plan(x, [1], as_cuda=True)["passes"]
        assert p["launch"].startswith("columns vector=8 tx=512 ty=1 flat"), p["launch"]
        assert p["launch"].endswith(f" tiles_at_once={at_once}") == (at_once > 1), p["launch"]
    # Outer-first tiles (the result's order differs) take one at a time, and so do
    # elements of other sizes.
    (p,) = wr._C.plan(reversed_view(shape, torch.bfloat16, "cpu"), [1], as_cuda=True)["passes"]
    assert " outer_first" in p["launch"] and "tiles_at_once" not in p["launch"], p["launch"]
    for dtype in (torch.float32, torch.int8, torch.float64):
        (p,) = wr._C.plan(make(shape, "contiguous", dtype, "cpu"), [1], as_cuda=True)["passes"]
        assert "tiles_at_once" not in p["launch"], p["launch"]


def at_once_input(dtype, rows, layout, device):
    """A sum over dim 1 of `rows` rows with enough tiles to take them at once (2-byte
    elements): narrow columns (4 vectors an outer index) contiguous or stored in reverse
    (outer-first: one at a time), or 2051 of them (a partial last vector) aligned or offset
    (shifted vectors; other sizes: elements one by one) or a prefix of wider rows (aligned
    alike, whole vectors but the last)."""
    lanes = max(1, 16 // dtype.itemsize)
    if layout in ("contiguous", "reversed"):
        shape = ((1 << 19) + 77, rows, 4 * lanes)  # the last group of tiles partial
        return (
            reversed_view(shape, dtype, device)
            if layout == "reversed"
            else make(shape, layout, dtype, device)
        )
    return make((4400, rows, 2051), "contiguous" if layout == "aligned" else layout, dtype, device)


AT_ONCE_LAYOUTS = ["contiguous", "reversed", "aligned", "offset", "wide"]


@pytest.mark.parametrize("layout", AT_ONCE_LAYOUTS)
def test_tiles_at_once_cover_every_load(layout):
    # Whole vectors, shifted vectors, partial vectors; outer-first tiles one at a time.
    for dtype in (torch.bfloat16, torch.float16, torch.int16, torch.uint16):
        (p,) = wr._C.plan(at_once_input(dtype, 2, layout, "cpu"), [1], as_cuda=True)["passes"]
        assert ("tiles_at_once=" in p["launch"]) == (layout != "reversed"), (dtype, p["launch"])
        assert (" shifted " in p["launch"]) == (layout in ("aligned", "offset")), p["launch"]


@requires_cuda
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("rows", [2, 3, 4])
@pytest.mark.parametrize("layout", AT_ONCE_LAYOUTS)
def test_tiles_at_once_sum_like_torch_sum(dtype, rows, layout):
    x = at_once_input(dtype, rows, layout, "cuda")
    assert_kernels_sum_like_torch_sum(x, [1])


# Columns read through L1 (ColumnLoad::kCached): whole 16-byte vectors whose rows lie
# under kColumnCachedMaxRowBytes (64) apart and share sectors (16 or 48 bytes apart).
# (dtype, shape, layout, dims, cached or not.)
CACHED_CASES = [
    (torch.float32, (4099, 8, 4), "contiguous", [1], True),  # rows 16 bytes apart
    (torch.float32, (4099, 5, 12), "contiguous", [1], True),  # 48
    (torch.float32, (4099, 3, 20), "contiguous", [1], False),  # 80: past the limit
    (torch.float32, (4099, 8, 8), "contiguous", [1], False),  # 32: a sector each
    (torch.float32, (4099, 4, 16), "contiguous", [1], False),  # 64: two each
    (torch.float32, (4099, 4, 16), "offset", [1], False),  # not whole vectors: slabs
    (torch.float32, (65, 4099, 4), "contiguous", [1], True),  # a long reduced dim
    (torch.float32, (7, 257, 16, 4), "contiguous", [2, 0], True),  # slices of rows
    (torch.float32, (1025, 3, 4), "contiguous", [1], True),  # lean
    (torch.bfloat16, (4099, 16, 8), "contiguous", [1], True),
    (torch.bfloat16, (4099, 6, 24), "contiguous", [1], True),
    (torch.float64, (4099, 8, 2), "contiguous", [1], True),
    (torch.int8, (4099, 9, 16), "contiguous", [1], True),
    (torch.int8, (4099, 12, 4), "contiguous", [1], False),  # 4-byte words: slabs
    (torch.int8, (64, 3000, 4), "contiguous", [1], False),  # 4-byte words: not cached
    (torch.float32, (4099, 8, 5), "contiguous", [1], False),  # rows not aligned alike
]


@pytest.mark.parametrize("dtype,shape,layout,dims,cached", CACHED_CASES, ids=str)
def test_columns_whose_rows_share_sectors_load_through_l1(dtype, shape, layout, dims, cached):
    x = make(shape, layout, dtype, "cpu", data=unfilled)
    (p,) = wr._C.plan(x, dims, as_cuda=True)["passes"]
    assert p["launch"].startswith("columns ") or not cached, p["launch"]
    assert (" cached " in p["launch"]) == cached, p["launch"]


@requires_cuda
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("case", CACHED_CASES, ids=str)
def test_cached_columns_sum_like_torch_sum(dtype, case):
    _, shape, layout, dims, _ = case
    x = make(shape, layout, dtype, "cuda")
    assert_kernels_sum_like_torch_sum(x, dims)
    y = x[1:]  # another alignment of the outer slices
    assert_kernels_sum_like_torch_sum(y, dims)


# Narrow partial columns: an inner dim of fewer than 4 vectors, the last partial, in rows
# aligned alike, 4- and 8-byte elements, under a reduced dim of at most 4 rows (the lean
# kernel's) whose slabs lie far apart (x[:, :2, :5] of an N x 4 x 8 tensor): vector
# columns, the partial vector read whole, rather than slabs a segment each. Slabs close
# together keep their tiles. (dtype, base shape, view, dims, the launch's start.)
LEAN_4_BYTE, LEAN_8_BYTE = (f"columns vector={n} tx=512 ty=1 flat lean" for n in (4, 2))
NARROW_PARTIAL_CASES = [
    (torch.float32, (4099, 4, 8), prefix((4099, 2, 5)), [1], LEAN_4_BYTE),
    (torch.float32, (4099, 8, 8), prefix((4099, 3, 6)), [1], LEAN_4_BYTE),
    (torch.float32, (4099, 12, 8), prefix((4099, 4, 7)), [1], LEAN_4_BYTE),
    (torch.float32, (4099, 8, 4), prefix((4099, 3, 2)), [1], "columns vector=4 cached tx=512"),
    (torch.float32, (4099, 6, 16), prefix((4099, 2, 13)), [1], LEAN_4_BYTE),
    (torch.float64, (4099, 4, 4), prefix((4099, 2, 3)), [1], LEAN_8_BYTE),
    (torch.int32, (4099, 4, 8), prefix((4099, 2, 5)), [1], LEAN_4_BYTE),
    (torch.float32, (4099, 12, 8), prefix((4099, 5, 7)), [1], "slabs "),  # 5 rows
    (torch.float32, (4099, 3, 8), prefix((4099, 3, 5)), [1], "slabs "),  # slabs close
    (torch.float32, (4099, 4, 9), prefix((4099, 2, 5)), [1], "slabs "),  # rows not aligned
    (torch.bfloat16, (4099, 4, 16), prefix((4099, 2, 13)), [1], "columns vector=2 "),  # 2-byte
    # two reduced dims: a pass each (partial vectors take no slices), the first narrow
    (torch.float32, (3, 4099, 4, 8), prefix((3, 4099, 2, 5)), [0, 2], LEAN_4_BYTE),
]


@pytest.mark.parametrize("dtype,base,view,dims,launch", NARROW_PARTIAL_CASES, ids=str)
def test_narrow_partial_columns_far_apart_take_vectors(dtype, base, view, dims, launch):
    x = unfilled(base, dtype, "cpu")[view]
    p = wr._C.plan(x, dims, as_cuda=True)["passes"][0]
    assert p["launch"].startswith(launch), p["launch"]


@requires_cuda
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("case", NARROW_PARTIAL_CASES, ids=str)
def test_narrow_partial_columns_sum_like_torch_sum(dtype, case):
    _, base, view, dims, _ = case
    x = random_tensor(base, dtype, "cuda")[view]
    assert_kernels_sum_like_torch_sum(x, dims)
    assert_kernels_sum_like_torch_sum(x[1:], dims)  # another alignment of the outer slices
    assert_kernels_sum_like_torch_sum(in_tight_storage(x), dims)  # nothing past the last row


# Lean columns (Launch::lean): flat columns with one lane down a reduced dim of at most
# half the rows a lane has in flight (4 rows of 16- or 8-byte loads, 2 shifted), a lane's
# sums in at most 32 bytes (kColumnLeanMaxSumBytes), its loads of several elements and 8
# bytes or more, elements one by one at most 2 a lane; a tile a block (not at once).
# (dtype, shape, layout, dims, lean or not.)
LEAN_CASES = [
    (torch.float32, (4099, 4, 32), "contiguous", [1], True),  # 4 rows of whole vectors
    (torch.float32, (4099, 5, 32), "contiguous", [1], False),  # 5 rows: the general kernel
    (torch.float32, (4099, 4, 2051), "wide", [1], True),  # a partial last vector
    (torch.float32, (3, 123456), "contiguous", [0], True),
    (torch.float32, (3, 123457), "contiguous", [0], False),  # rows apart by an odd count
    (torch.float32, (4, 40960), "stepped", [0], True),  # a gapped inner dim
    (torch.float64, (4099, 4, 32), "contiguous", [1], True),
    (torch.float64, (4099, 3, 2051), "offset", [1], True),  # 2 elements a lane, one by one
    (torch.float32, (4099, 3, 2051), "offset", [1], False),  # 4 a lane: the general kernel
    (torch.float16, (2, 3149287), "contiguous", [0], True),  # whole 16-byte vectors
    (torch.bfloat16, (2, 1049), "offset", [0], True),  # shifted, 2 rows
    (torch.bfloat16, (3, 1049), "offset", [0], False),  # 3 shifted rows
    (torch.bfloat16, (1 << 19, 2, 32), "contiguous", [1], False),  # 4 tiles at once instead
    (torch.int32, (4099, 4, 32), "contiguous", [1], True),  # 4 int64 sums: 32 bytes
    (torch.int16, (4099, 4, 32), "contiguous", [1], False),  # 8 int64 sums
    (torch.int8, (4099, 4, 64), "contiguous", [1], False),  # 4-byte words
    (torch.float32, (2, 3, 4099, 32), "contiguous", [0, 2], False),  # slices: two dims
]


@pytest.mark.parametrize("dtype,shape,layout,dims,lean", LEAN_CASES, ids=str)
def test_short_columns_take_the_lean_kernel(dtype, shape, layout, dims, lean):
    x = make(shape, layout, dtype, "cpu", data=unfilled)
    p = wr._C.plan(x, dims, as_cuda=True)["passes"][0]
    assert p["launch"].startswith("columns "), p["launch"]
    assert p["launch"].endswith(" lean") == lean, p["launch"]


def test_outer_first_columns_take_the_lean_kernel():
    (p,) = wr._C.plan(reversed_view((100, 4, 64), torch.float32, "cpu"), [1], as_cuda=True)[
        "passes"
    ]
    assert " outer_first" in p["launch"] and p["launch"].endswith(" lean"), p["launch"]


@requires_cuda
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("case", LEAN_CASES, ids=str)
def test_lean_columns_sum_like_torch_sum(dtype, case):
    _, shape, layout, dims, _ = case
    x = make(shape, layout, dtype, "cuda")
    assert_kernels_sum_like_torch_sum(x, dims)
    y = reversed_view(shape, dtype, "cuda", offset=1)  # outer-first, not aligned
    assert_kernels_sum_like_torch_sum(y, [y.dim() - 1 - d for d in dims])


# Lean columns over more tiles than the grid's blocks (a block takes several in turn),
# the last partial.
@requires_cuda
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.int32], ids=str)
def test_lean_columns_loop_over_tiles(dtype):
    x = make(((1 << 21) + 77, 3, 16 // dtype.itemsize), "contiguous", dtype, "cuda")
    (p,) = wr._C.plan(x, [1])["passes"]
    assert p["launch"].endswith(" lean"), p["launch"]
    assert_kernels_sum_like_torch_sum(x, [1])


# A pass of short rows whose result lies across them (a permuted input whose result
# keeps a kept dim above the rows as its innermost): on CUDA auto its rows are taken in
# the result's order where the rows that share a sector come back within a block's round
# (plan.cpp, rows_in_result_order), so that a warp's stores are adjacent. (dtype, shape,
# strides, dims, the pass's outer in the result's order, or None where the rows stay in
# memory order.)
RESULT_ORDER_ROWS_CASES = [
    # float32 254140 x 2 x 121 x 1 permuted (2, 3, 0, 1) over dim 1 (seed 319), smaller
    (torch.float32, (4099, 2, 121, 1), (2, 1, 8198, 8198), [1], [(4099, 2), (121, 8198)]),
    # int32 7 x 3963 x 1 x 372 permuted over dim 0 (rows of 7; int64 outputs)
    (torch.int32, (7, 397, 1, 37), (1, 7, 1, 2779), [0], [(397, 7), (37, 2779)]),
    # rows of 3 under two kept dims, the result's innermost the outermost in memory
    (torch.bfloat16, (3, 33, 5, 31), (1, 3, 99, 495), [0], [(33, 3), (5, 99), (31, 495)]),
    # the rows that share a sector 1031 rows apart taken so: in memory order
    (torch.float32, (1031, 2, 600), (2, 1, 2062), [1], None),
    # rows not adjacent in memory (rows of 5 in steps of 35): in memory order
    (torch.int32, (7, 4099, 5), (5, 35, 1), [2], None),
]


@pytest.mark.parametrize("case", RESULT_ORDER_ROWS_CASES, ids=str)
def test_short_rows_in_result_order(case):
    dtype, shape, strides, dims, outer = case
    x = narrow_merged_view(shape, strides, dtype, "cpu")
    plan = wr._C.plan(x, dims, as_cuda=True)
    (p,) = plan["passes"]
    assert p["launch"].startswith("rows_short"), p
    if outer is None:
        assert p["result_apart"] > 1, p
    else:
        assert p["outer"] == outer and p["result_apart"] == 1, p
        assert plan["output_order"] == [(math.prod(s for s, _ in outer), 1)], plan


@requires_cuda
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("case", RESULT_ORDER_ROWS_CASES, ids=str)
def test_short_rows_in_result_order_sum_like_torch_sum(dtype, case):
    _, shape, strides, dims, _ = case
    assert_placed_sums_match(shape, strides, dims, dtype, offsets=(0, 1), expanded=-2)
