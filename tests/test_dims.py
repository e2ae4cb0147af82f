"""Dim reductions through the reduction geometry, against torch.sum: how the planner
describes each layout (passes of [outer..., reduced, inner], which layouts are copied),
then results for every kind of pass (rows one after the other, strided rows, long rows,
columns, several passes, the copy) on every layout, rank 0 to 5, awkward lengths on the
reduced and the kept side, every dtype, and bitwise repeatability."""

import itertools

import pytest
import torch

import warpreduce_torch as wr
from warpreduce_torch import _C
from warpreduce_torch.testing import VIEW_LAYOUTS, assert_sum_matches, random_tensor, random_view

from .support import DEVICES, DTYPES, FLOAT_DTYPES, HAS_CUDA, INT_DTYPES, requires_cuda


def passes(x, dim=None):
    dims = None if dim is None else [dim] if isinstance(dim, int) else list(dim)
    return _C.plan(x, dims)


# --- the planner: one picture for every layout ----------------------------------------


def test_row_sum_of_a_contiguous_tensor_is_one_pass_of_packed_rows():
    p = passes(torch.empty(33, 1025), -1)
    assert not p["copied"]
    assert [q["kind"] for q in p["passes"]] == ["rows"]
    assert p["passes"][0]["packed_rows"] and p["passes"][0]["outer"] == [(33, 1025)]


def test_first_dim_sum_is_one_pass_of_columns():
    (q,) = passes(torch.empty(33, 1025), 0)["passes"]
    assert q["kind"] == "columns"
    assert (q["length"], q["reduced_stride"], q["inner"], q["inner_stride"]) == (33, 1025, 1025, 1)


def test_transposed_input_is_read_in_place():
    x = torch.empty(33, 1025).t()  # sum(0) now reduces the contiguous dim
    (q,) = passes(x, 0)["passes"]
    assert q["kind"] == "rows" and q["packed_rows"]


def test_full_sum_of_a_dense_tensor_is_one_row():
    for x in [torch.empty(6, 7, 8), torch.empty(6, 7, 8).permute(2, 0, 1)]:
        (q,) = passes(x)["passes"]
        assert q["kind"] == "rows" and q["outer"] == [] and q["length"] == 6 * 7 * 8


def test_middle_dim_is_columns_under_an_outer_dim():
    (q,) = passes(torch.empty(4, 5, 6), 1)["passes"]
    assert q["kind"] == "columns" and q["outer"] == [(4, 30)] and q["inner"] == 6
    # Kept dims below that stay apart: the innermost is inner, the other outer.
    (q,) = passes(torch.empty(4, 10, 6)[:, ::2], 0)["passes"]
    assert q["kind"] == "columns" and q["outer"] == [(5, 12)] and q["inner"] == 6


def test_dims_that_stay_apart_take_a_pass_each_innermost_first():
    p = passes(torch.empty(8, 16, 7, 7), (0, 2, 3))  # N, H, W of NCHW
    assert not p["copied"]
    rows, cols = p["passes"]
    assert rows["kind"] == "rows" and rows["packed_rows"] and rows["length"] == 49
    assert cols["kind"] == "columns" and (cols["length"], cols["inner"]) == (8, 16)


def describe(q):
    return (q["kind"], q["outer"], q["length"], q["reduced_stride"], q["inner"], q["inner_stride"])


def test_a_short_innermost_dim_under_a_longer_one_goes_second():
    """[..., R_big, K, R_small], R_small innermost and at most 16 long, R_big longer, K
    one dim in memory with R_small: the first pass sums R_big as columns over K and
    R_small merged, the rows of R_small follow over its outputs."""
    # Memory order [K(2), R(2248), K(227), R(6)]: a permuted view, summed over 2248 and 6.
    x = torch.empty(2, 2248, 227, 6, dtype=torch.bfloat16).permute(0, 2, 1, 3)
    cols, rows = passes(x, (2, 3))["passes"]
    assert describe(cols) == ("columns", [(2, 2248 * 1362)], 2248, 1362, 1362, 1)
    assert describe(rows) == ("rows", [(2 * 227, 6)], 6, 1, 1, 1) and rows["packed_rows"]
    # The same layout summed as a contiguous tensor; rows of 16; the short dim strided.
    cols, rows = passes(torch.empty(3, 40, 5, 16), (1, 3))["passes"]
    assert describe(cols) == ("columns", [(3, 3200)], 40, 80, 80, 1)
    assert describe(rows) == ("rows", [(15, 16)], 16, 1, 1, 1)
    cols, rows = passes(torch.empty(3, 40, 5, 12)[..., ::2], (1, 3))["passes"]
    assert describe(cols) == ("columns", [(3, 2400)], 40, 60, 30, 2)
    assert describe(rows) == ("rows", [(15, 6)], 6, 1, 1, 1)
    # A reduced dim above R_big is outer to the first pass and has its own pass after;
    # where it is longer than the short rows, it goes before them too.
    p = passes(torch.empty(3, 2, 40, 5, 6), (0, 2, 4))["passes"]
    assert [describe(q) for q in p] == [
        ("columns", [(6, 1200)], 40, 30, 30, 1),
        ("rows", [(30, 6)], 6, 1, 1, 1),
        ("columns", [], 3, 10, 10, 1),
    ]
    p = passes(torch.empty(20, 2, 40, 5, 6), (0, 2, 4))["passes"]
    assert [describe(q) for q in p] == [
        ("columns", [(40, 1200)], 40, 30, 30, 1),
        ("columns", [], 20, 60, 60, 1),
        ("rows", [(10, 6)], 6, 1, 1, 1),
    ]


def test_short_reduced_dims_between_kept_ones_go_second():
    """[..., R_big, K, R_short, K2] (and deeper blocks), the dims under R_big one block of
    memory whose reduced dims hold at most 16 elements in all: R_big first, as columns
    over the whole block, then the short dims over its outputs."""
    # float32 313 x 3 x 4 x 3 x 827 x 5 over (0, 1, 3): [R(939), K(4), R(3), K(4135)].
    p = passes(torch.empty(313, 3, 4, 3, 827, 5), (-5, 0, 3))["passes"]
    assert [describe(q) for q in p] == [
        ("columns", [], 939, 49620, 49620, 1),
        ("columns", [(4, 12405)], 3, 4135, 4135, 1),
    ]
    # Two short dims in the block, 4 x 4 = 16 elements: both after R_big.
    p = passes(torch.empty(50, 3, 4, 5, 4, 7), (0, 2, 4))["passes"]
    assert [(q["kind"], q["length"]) for q in p][0] == ("columns", 50)
    assert sorted(q["length"] for q in p[1:]) == [4, 4]
    # 4 x 5 = 20 elements: more than 16, innermost first.
    p = passes(torch.empty(50, 3, 4, 5, 5, 7), (0, 2, 4))["passes"]
    assert p[0]["length"] == 5
    # A gap in the block (the kept dim sliced): innermost first.
    p = passes(torch.empty(50, 3, 3, 16)[:, :, :, :8], (0, 2))["passes"]
    assert p[0]["length"] == 3
    # R_big not longer than the short dims: innermost first.
    p = passes(torch.empty(3, 3, 4, 7), (0, 2))["passes"]
    assert p[0]["length"] == 4


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.int32])
@pytest.mark.parametrize(
    "shape, dim",
    [
        ((313, 3, 4, 3, 17, 5), (-5, 0, 3)),
        ((33, 3, 5, 4, 7), (0, 2)),
        ((31, 2, 4, 2, 3, 2), (0, 2, 4)),
    ],
)
def test_short_reduced_dims_second_sum_right(device, dtype, shape, dim):
    x = random_tensor(shape, dtype, device)
    for kernel in ("auto", "exact"):
        assert_sum_matches(wr.sum(x, dim, kernel=kernel), x, dim, kernel=kernel)
    offset = random_view(shape, "offset", dtype, device)
    assert_sum_matches(wr.sum(offset, dim), offset, dim)


def test_other_short_innermost_dims_go_first():
    def kinds(x, dim):
        return [(q["kind"], q["length"]) for q in passes(x, dim)["passes"]]

    # Rows of 17: longer than 16.
    assert kinds(torch.empty(3, 40, 5, 17), (1, 3)) == [("rows", 17), ("columns", 40)]
    # R_big not longer than R_small.
    assert kinds(torch.empty(3, 6, 5, 6), (1, 3)) == [("rows", 6), ("columns", 6)]
    assert kinds(torch.empty(3, 4, 5, 6), (1, 3)) == [("rows", 6), ("columns", 4)]
    # K not one dim in memory with R_small: rows of 6, 8 apart.
    x = torch.empty(3, 40, 5, 8)[..., :6]
    assert kinds(x, (1, 3)) == [("rows", 6), ("columns", 40)]
    # Two kept dims between them that do not merge.
    x = torch.empty(3, 40, 10, 3, 6)[:, :, ::2]
    assert kinds(x, (1, 4)) == [("rows", 6), ("columns", 40)]
    # R_big innermost but for a kept dim (one pass), or no kept dim between (they merge).
    assert kinds(torch.empty(3, 40, 5, 6), (1, 2)) == [("columns", 200)]
    assert kinds(torch.empty(3, 40, 5, 6), (1,)) == [("columns", 40)]


def test_sliced_and_expanded_inputs_are_described_by_their_strides():
    x = torch.empty(10, 300)[::2, :100]  # rows 100 long, 600 apart
    (q,) = passes(x, 1)["passes"]
    assert q["kind"] == "rows" and not q["packed_rows"] and q["outer"] == [(5, 600)]
    assert passes(x, 1)["broadcast"] == []
    e = torch.empty(1, 64).expand(9, 64)  # stride 0
    # A kept dim of stride 0: its outputs are all equal, so the passes sum one row, and
    # "broadcast" names the dim the result is copied out along.
    p = passes(e, 1)
    (q,) = p["passes"]
    assert q["kind"] == "rows" and q["outer"] == [] and q["length"] == 64 and q["repeat"] == 1
    assert p["broadcast"] == [0] and not p["copied"]
    # A reduced dim of stride 0 is left out and counted: summed once, times its size.
    p = passes(torch.empty(5, 1, 64).expand(5, 9, 64), [0, 1])
    (q,) = p["passes"]
    assert q["kind"] == "columns" and q["length"] == 5 and q["repeat"] == 9
    assert p["broadcast"] == []
    assert not passes(e, 0)["needs_kernel"]  # every reduced dim expanded: x[0] * 9
    # Both: one row of 64, times 9, copied out along dim 0.
    p = passes(torch.empty(1, 1, 64).expand(5, 9, 64), [1, 2])
    (q,) = p["passes"]
    assert q["kind"] == "rows" and q["outer"] == [] and q["length"] == 64 and q["repeat"] == 9
    assert p["broadcast"] == [0]
    # Nothing to sum once: a copy (one element each) or zeros are written directly.
    assert passes(torch.empty(1, 1, 64).expand(5, 1, 64), 1)["broadcast"] == []
    assert passes(torch.empty(1, 0, 64).expand(5, 0, 64), 1)["broadcast"] == []


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_expanded_reduced_dims(device, dtype):
    """auto sums the elements under reduced dims of stride 0 once and multiplies by the
    repeat, before the one rounding to the result (integers wrap as their sum does)."""
    base = random_tensor((4, 1, 33, 1), dtype, device, seed=3)
    x = base.expand(4, 7, 33, 1025)
    for dim in [(0, 1), 1, (1, 2), 3, (1, 3), (0, 1, 2, 3), None, (-1, 0)]:
        for keepdim in [False, True]:
            assert_sum_matches(wr.sum(x, dim, keepdim), x, dim, keepdim)
    for view in [x.transpose(1, 2), x[:, :, 1::2], x.permute(3, 1, 0, 2)]:
        assert_sum_matches(wr.sum(view, (0, 1)), view, (0, 1))
    one = base[:1, 0, :5, 0].expand(257, 5)  # every reduced dim expanded
    assert_sum_matches(wr.sum(one, 0), one, 0)
    assert_sum_matches(wr.sum(one, 0, keepdim=True), one, 0, keepdim=True)
    assert_sum_matches(wr.sum(one[0, 0].expand(1000)), one[0, 0].expand(1000))
    for out_dtype in [] if dtype.is_complex else [torch.bool, torch.uint8, torch.float16]:
        assert_sum_matches(wr.sum(one, 0, dtype=out_dtype), one, 0, dtype=out_dtype)
        assert_sum_matches(wr.sum(x, (0, 1), dtype=out_dtype), x, (0, 1), dtype=out_dtype)
    assert wr.sum(one.t(), 1).is_contiguous() and wr.sum(x.transpose(0, 2), (1, 2)).is_contiguous()
    if dtype.is_floating_point:
        wide = torch.float64 if dtype == torch.float64 else torch.float32
        assert_sum_matches(wr.sum(x, (0, 1), dtype=wide), x, (0, 1), dtype=wide)
        zeros = torch.full((1, 3), -0.0, dtype=dtype, device=device).expand(6, 3)
        assert not torch.signbit(wr.sum(zeros, 0)).any()  # as torch.sum: +0.0
        specials = torch.tensor([[1.0, float("inf"), float("nan")]], device=device).to(dtype)
        assert_sum_matches(wr.sum(specials.expand(4, 3), 0), specials.expand(4, 3), 0)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=str)
def test_size_one_or_expanded_reduced_dim_of_scattered_views(device, dtype):
    """A sum over a dim of size 1 or an expanded one, of a permuted, sliced or offset view
    (one element each, copied out): torch.sum's bits where nothing is added (-0.0 to +0.0,
    specials kept, dtype= converting first), its values where the element repeats, in a
    new contiguous tensor, keepdim or not."""
    g = torch.Generator().manual_seed(5)
    base = torch.randn(7, 1, 33, 5, generator=g).to(dtype)
    base[0, 0, 0, :3] = torch.tensor([-0.0, float("inf"), float("nan")]).to(dtype)
    base = base.to(device)
    views = [
        base.permute(2, 1, 3, 0),
        base[:, :, ::2].permute(3, 1, 0, 2),
        base[1:, :, 1:].transpose(0, 2),
    ]
    # One element each as a transposed 2-D view: a short side (copied as 3-D on the CPU:
    # plan.cpp), and both sides long.
    narrow = torch.randn(70, 1, 3, generator=g).to(dtype)
    narrow[0, 0, :3] = torch.tensor([-0.0, float("inf"), float("nan")]).to(dtype)
    wide = torch.randn(70, 1, 61, generator=g).to(dtype)
    views += [narrow.to(device).permute(2, 1, 0), wide.to(device).permute(2, 1, 0)]
    for v in views:
        for kwargs in [{}, {"keepdim": True}, {"dtype": torch.float64}]:
            got, expected = wr.sum(v, 1, **kwargs), torch.sum(v, 1, **kwargs)
            assert got.is_contiguous() and got.dtype == expected.dtype
            assert torch.equal(got.isnan(), expected.isnan())
            same = (got == expected) | got.isnan()
            assert bool(same.all()), (got, expected)
            numbers = ~got.isnan()  # (a NaN's sign and payload: neither keeps them)
            assert torch.equal(torch.signbit(got[numbers]), torch.signbit(expected[numbers]))
    repeated = base.expand(7, 6, 33, 5).permute(2, 1, 3, 0)  # each element 6 times
    for kwargs in [{}, {"keepdim": True}, {"dtype": torch.float64}]:
        got = wr.sum(repeated, 1, **kwargs)
        assert got.is_contiguous()
        assert_sum_matches(got, repeated, 1, **kwargs)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("kernel", ["auto", "exact"])
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_expanded_kept_dims(device, kernel, dtype):
    """auto and exact sum along kept dims of stride 0 once and copy the result out along
    them: torch.sum's values (exact: the bits of the same sum of the dense copy), in a new
    contiguous tensor, with reduced dims expanded too, keepdim and dtype=."""

    def check(x, dim, keepdim=False, out_dtype=None):
        got = wr.sum(x, dim, keepdim, dtype=out_dtype, kernel=kernel)
        assert_sum_matches(got, x, dim, keepdim, dtype=out_dtype, kernel=kernel)
        # A tensor of its own: contiguous, its storage just its elements.
        assert got.is_contiguous()
        assert got.untyped_storage().nbytes() == got.numel() * got.element_size()
        assert got.numel() == 0 or got.data_ptr() != x.data_ptr()
        if kernel == "exact":
            dense = wr.sum(x.contiguous(), dim, keepdim, dtype=out_dtype, kernel=kernel)
            assert torch.all((got == dense) | (got.isnan() & dense.isnan()))  # NaN: inf - inf

    base = random_tensor((1, 5, 1, 33), dtype, device, seed=4)
    x = base.expand(6, 5, 7, 33)  # dims 0 and 2 expanded
    assert passes(x, 3)["broadcast"] == [0, 2]
    # Kept expanded dims alone, and with expanded reduced dims: (0, 3), (0, 1, 2).
    for dim in [3, (1, 3), 1, (0, 3), (2, 3), (0, 1, 2), (-1, -3), None]:
        for keepdim in [False, True]:
            check(x, dim, keepdim)
    for view in [x.transpose(1, 2), x[:, :, 1::2], x.permute(3, 2, 0, 1), x[:, :, :1], x[:1]]:
        check(view, (1, 3))
    # Sizes 0 and 1, kept and reduced, and a 0-d tensor.
    check(random_tensor((1, 0, 1, 33), dtype, device).expand(6, 0, 7, 33), 3)
    check(base.expand(0, 5, 7, 33), 3)  # size 0, stride 0
    check(x[:, :, :0], (1, 3))
    check(random_tensor((1, 5, 1, 0), dtype, device).expand(6, 5, 7, 0), 3)
    check(random_tensor((1, 5, 1, 1), dtype, device).expand(6, 5, 1, 1), (1, 3), True)
    check(random_tensor((), dtype, device), 0)
    one = base[0, :, 0, :1].t().expand(9, 5)  # every dim expanded but the one reduced
    check(one, 1)
    check(one, 1, keepdim=True)
    for out_dtype in [] if dtype.is_complex else [torch.bool, torch.uint8, torch.float16]:
        check(x, 3, out_dtype=out_dtype)
        check(x, (0, 3), keepdim=True, out_dtype=out_dtype)
    if dtype.is_floating_point:
        wide = torch.float64 if dtype == torch.float64 else torch.float32
        check(x, (1, 3), out_dtype=wide)
    if dtype == torch.float32:  # the gradient is broadcast back as for a dense input
        leaf = base.clone().requires_grad_()
        wr.sum(leaf.expand(6, 5, 7, 33), 3, kernel=kernel).sum().backward()
        assert torch.equal(leaf.grad, torch.full_like(base, 6 * 7))


@requires_cuda
def test_one_broadcast_kept_dim_is_written_in_place_on_cuda():
    """With one kept dim broadcast, auto's last pass writes each output along it (copies
    times, the result's stride apart) instead of a copy after; with two, the copy."""
    base = random_tensor((1, 5, 1, 33), torch.float32, "cuda")
    one = base.expand(6, 5, 1, 33)
    described = _C.plan(one, [3])
    assert described["output_order"] and described["output_copies"] == (6, 5)
    assert _C.plan(one, [1])["output_copies"] == (6, 33)
    assert _C.plan(one.permute(3, 1, 0, 2), [1])["output_copies"] == (6, 1)
    assert _C.plan(base.expand(6, 5, 7, 33), [3])["output_order"] == []  # two broadcast dims
    for x, dim in [(one, 3), (one, 1), (one, (1, 3)), (one.permute(3, 1, 0, 2), 1)]:
        for kernel in ("auto", "exact"):
            got = wr.sum(x, dim, kernel=kernel)
            assert got.is_contiguous()
            assert_sum_matches(got, x, dim, kernel=kernel)
    # A full sum copied out: one row, and one long enough to split over blocks.
    for length in (33, (1 << 20) + 3):
        row = random_tensor((1, length), torch.float32, "cuda", seed=5).expand(3, length)
        for keepdim in (False, True):
            got = wr.sum(row, 1, keepdim)
            assert got.is_contiguous()
            assert_sum_matches(got, row, 1, keepdim)
            assert torch.equal(got, wr.sum(row[:1], 1, keepdim).expand_as(got))


def test_a_broadcast_full_sum_writes_its_copies():
    """A full sum under one broadcast kept dim (x.expand(3, n).sum(1)): the full
    reduction's store writes each copy, no copy after (CUDA auto's plan, on any machine);
    under two broadcast dims, the copy."""
    x = torch.empty(1, 1000).expand(3, 1000)
    for view, dim in [(x, 1), (x.t(), 0)]:
        p = _C.plan(view, [dim], as_cuda=True)
        assert p["broadcast"] == [1 - dim] and p["output_copies"] == (3, 1) and p["output_order"]
        assert _C.plan(view, [dim])["output_order"] == []  # the CPU's plan copies
    assert (
        _C.plan(torch.empty(1, 1, 1000).expand(3, 5, 1000), [2], as_cuda=True)["output_order"] == []
    )


def test_meta_tensors_with_expanded_dims_are_described():
    """_C.plan of a meta tensor (no kernel chosen) with expanded reduced and kept dims:
    described as they are, none folded or broadcast."""
    x = torch.empty(3, 1, 5, device="meta").expand(3, 4, 5)
    for dim in [1, (0, 1), 2]:
        p = passes(x, dim)
        assert p["broadcast"] == []
        assert all(q["repeat"] == 1 for q in p["passes"])


def test_only_layouts_beyond_the_geometrys_dims_are_copied():
    x = torch.empty(3, 4, 5, 6, 7, 8)[::2, ::2, ::2, ::2, ::2, ::2]  # nothing merges
    assert passes(x, 5)["copied"]  # five outer dims
    assert not passes(x, (0, 2, 4))["copied"]


def test_sums_without_work_need_no_kernel():
    assert not passes(torch.empty(3, 0, 4), 1)["needs_kernel"]  # zeros
    assert not passes(torch.empty(3, 1, 4), 1)["needs_kernel"]  # a copy
    assert not passes(torch.empty(0, 4), 1)["needs_kernel"]  # empty


# --- results against torch.sum ---------------------------------------------------------

LAYOUTS = VIEW_LAYOUTS


def dim_choices(ndim):
    """Single dims (negative too), pairs, all of them, and None."""
    if ndim == 0:
        return [None, 0, ()]
    singles = list(range(ndim)) + [-1]
    pairs = list(itertools.combinations(range(ndim), 2))[:3]
    return singles + pairs + [tuple(range(ndim)), None]


SHAPES = [
    (),
    (7,),
    (5, 7),
    (33, 1025),
    (1025, 33),
    (4099, 3),
    (3, 4099),
    (2, 1, 31, 4),
    (8, 17, 3),
    (3, 5, 7, 11),
    (2, 3, 4, 5, 6),
    (4, 0, 3),
    (1, 1, 5),
]


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_layouts_and_dims(device, layout, shape):
    for dtype in (torch.float32, torch.int8):
        x = random_view(shape, layout, dtype, device)
        assert x.shape == shape
        for i, dim in enumerate(dim_choices(len(shape))):
            keepdim = i % 2 == 1
            assert_sum_matches(wr.sum(x, dim, keepdim), x, dim, keepdim)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("layout", ["contiguous", "transposed", "sliced", "offset"])
def test_every_dtype(device, dtype, layout):
    for shape in [(33, 1025), (3, 5, 7, 11), (1025, 9)]:
        x = random_view(shape, layout, dtype, device)
        for dim in [0, -1, 1, (0, 2) if len(shape) > 2 else (0, 1)]:
            assert_sum_matches(wr.sum(x, dim), x, dim)


# Awkward lengths on the reduced and on the kept side (kept column counts that are not a
# multiple of a 16-byte vector too).
AWKWARD = [1, 3, 31, 33, 127, 129, 1025]


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.int16], ids=str)
def test_awkward_lengths(device, dtype):
    for rows, cols in itertools.product(AWKWARD, AWKWARD):
        x = random_tensor((rows, cols), dtype, device, seed=rows + cols)
        assert_sum_matches(wr.sum(x, 0), x, 0)
        assert_sum_matches(wr.sum(x, 1), x, 1)


def short_under_long(a, big, kept, short, layout, dtype, seed):
    """A tensor whose memory order is [K(a), R(big), K(kept), R(short)] (R summed), in
    `layout`, and the dims to sum."""
    shape = (a, big, kept, short)
    if layout == "contiguous":
        return random_tensor(shape, dtype, "cpu", seed), (1, 3)
    if layout == "permuted":  # the kept dims out of memory order: (kept, big, a, short)
        return random_tensor(shape, dtype, "cpu", seed).permute(2, 1, 0, 3), (1, 3)
    if layout == "strided":  # the short dim's elements 2 apart
        base = random_tensor((a, big, kept, 2 * short), dtype, "cpu", seed)
        return base[..., ::2], (1, 3)
    if layout == "offset":  # the data pointer one element past a 16-byte boundary
        flat = random_tensor((a * big * kept * short + 1,), dtype, "cpu", seed)
        return flat[1:].view(shape), (1, 3)
    if layout == "sliced":  # every other slice of the first dim; the short dim padded
        base = random_tensor((2 * a, big, kept, short + 2), dtype, "cpu", seed)
        return base[::2, ..., :short], (1, 3)
    if layout == "reduced_above":  # a reduced dim above, a pass of its own
        return random_tensor((3,) + shape, dtype, "cpu", seed), (0, 2, 4)
    raise ValueError(layout)


SHORT_UNDER_LONG = ["contiguous", "permuted", "strided", "offset", "sliced", "reduced_above"]


@pytest.mark.parametrize("dtype", FLOAT_DTYPES + INT_DTYPES, ids=str)
def test_a_short_innermost_dim_under_a_longer_one(dtype):
    """Values where the short innermost reduced dim may go second (its pass over the
    longer dim's outputs) and around the limits of that order: rows of 16 and 17, the
    longer dim not longer, the kept dim between not one dim in memory with the short one."""
    sizes = itertools.product([1, 3, 17, 33], [1, 3, 33], [1, 3, 6, 16, 17])
    for i, (big, kept, short) in enumerate(sizes):
        for j, layout in enumerate(SHORT_UNDER_LONG):
            a = (1, 3)[(i // 2 + j) % 2]
            x, dim = short_under_long(a, big, kept, short, layout, dtype, i)
            keepdim = (i + j) % 2 == 1
            assert_sum_matches(wr.sum(x, dim, keepdim), x, dim, keepdim)


# Shapes large enough for every CUDA kernel of auto and its launch shapes: short rows
# tiled, rows a group of lanes each (short and not one after the other, or longer), long
# rows split over blocks, one block a row, columns narrow and wide, split over blocks or
# not, vectorized or not, and several passes.
BIG_CASES = [
    ((70001, 8), -1),  # short packed rows
    ((2**16 + 1, 100), -1),
    ((4099, 257), -1),  # rows of 1028 bytes: just past the tiled limit
    ((20000, 1000), -1),  # medium rows, a group of lanes each
    ((20000, 300), (1, "sliced_rows")),  # rows of 100, not one after the other
    ((70001, 16), (1, "short_sliced_rows")),  # rows of 5, two lanes each
    ((6, 100003), -1),  # few long rows: split
    ((1000, 20000), -1),  # one block a row
    ((3, 2**20 + 1), -1),
    ((2**20 + 1,), 0),  # the full sum
    ((2**18 + 1, 8), 0),  # few columns: split, vectorized
    ((2**16 + 3, 130), 0),  # column count not a multiple of the vector
    ((4097, 4096), 0),
    ((8, 2**18), 0),  # many columns, few rows
    ((1024, 2**14 + 1), 0),  # not vectorized: odd row stride
    ((64, 33, 1000), 1),  # middle dim
    ((32, 64, 28, 28), (0, 2, 3)),  # N, H, W of NCHW: two passes
    ((16, 1000, 64), (0, 2)),
    ((1000, 64, 16), (0, 2)),
]


def big_case(shape, dim, dtype, seed=0):
    if isinstance(dim, tuple) and isinstance(dim[1], str):
        dim, kind = dim
        base = random_tensor(shape, dtype, "cuda", seed)
        x = base[:, :100] if kind == "sliced_rows" else base[:, :5]
        return x, dim
    return random_tensor(shape, dtype, "cuda", seed), dim


@requires_cuda
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("case", BIG_CASES, ids=str)
def test_every_cuda_path(dtype, case):
    x, dim = big_case(*case, dtype)
    for keepdim in (False, True):
        assert_sum_matches(wr.sum(x, dim, keepdim), x, dim, keepdim)
    # The same through a transposed and an unaligned view of the data.
    if x.dim() == 2 and x.is_contiguous():
        t = x.t()
        assert_sum_matches(wr.sum(t, 0), t, 0)
        u = x[:, 1:]
        assert_sum_matches(wr.sum(u, dim), u, dim)


# Kept dims out of the tensor's order: (permutation of a contiguous base, dims summed),
# the last pass of each kind of launch writing the result's layout at once.
PERMUTED_KEPT_CASES = [
    ((1, 0, 2), 2, (33, 1025, 3)),  # packed rows (rows_vectors / slabs), two kept dims swapped
    ((2, 0, 1), 1, (7, 5, 300)),  # columns
    ((0, 3, 2, 1), (2,), (11, 4, 2, 67)),  # short columns (slabs), three digits
    ((1, 0, 2), 2, (6, 4, 100003)),  # long rows (rows_split)
    ((2, 1, 0, 3), (1, 3), (40, 6, 5, 31)),  # two passes: the last one's order
    ((4, 3, 2, 1, 0), (1, 3), (3, 4, 5, 6, 7)),  # five kept-or-reduced dims, reversed
]


@requires_cuda
@pytest.mark.parametrize(
    "dtype", [torch.float32, torch.bfloat16, torch.float64, torch.int32], ids=str
)
@pytest.mark.parametrize("case", PERMUTED_KEPT_CASES, ids=str)
def test_kept_dims_out_of_order_are_written_in_place(dtype, case):
    """auto's last pass writes torch.sum's contiguous layout through the plan's output
    order (no copy afterwards); exact writes in order and copies. keepdim or not."""
    order, dim, stored = case
    base = random_tensor(stored, dtype, "cuda")
    x = base.permute(*order)
    assert _C.plan(x, [dim] if isinstance(dim, int) else list(dim))["output_order"]
    kernels = ("auto", "exact") if dtype.is_floating_point else ("auto",)
    for kernel in kernels:
        for keepdim in (False, True):
            got = wr.sum(x, dim, keepdim, kernel=kernel)
            assert got.is_contiguous()
            assert_sum_matches(got, x, dim, keepdim, kernel=kernel)
        if kernel == "exact":  # the same bits as the sum of a contiguous copy
            assert torch.equal(got, wr.sum(x.contiguous(), dim, True, kernel="exact"))
    # A result dtype other than the kernels' (int64 for integers): written in order, then
    # converted into place.
    if dtype == torch.int32:
        assert_sum_matches(wr.sum(x, dim, dtype=torch.int32), x, dim, dtype=torch.int32)


def test_kept_dims_out_of_order_on_the_cpu_are_copied_into_place():
    x = torch.empty(33, 1025, 3).permute(1, 0, 2)
    assert _C.plan(x, [2])["output_order"] == []


@requires_cuda
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float64], ids=str)
@pytest.mark.parametrize(
    "case",
    [
        c
        for c in BIG_CASES
        if c[0] in [(6, 100003), (2**18 + 1, 8), (2**16 + 3, 130), (32, 64, 28, 28)]
    ],
    ids=str,
)
def test_split_paths_are_bitwise_repeatable(dtype, case):
    x, dim = big_case(*case, dtype)
    first = wr.sum(x, dim)
    for _ in range(3):
        assert torch.equal(wr.sum(x, dim), first)


@requires_cuda
@pytest.mark.parametrize("kernel", wr.kernels("cuda") if HAS_CUDA else [])
def test_every_kernel_on_every_layout(kernel):
    """The staged kernels and CUB read rows: copied into row order where the geometry is
    not one pass of packed rows."""
    for layout, shape in itertools.product(LAYOUTS, [(33, 1025), (3, 5, 7, 11)]):
        x = random_view(shape, layout, torch.float32, "cuda")
        for dim in [0, -1, (0, 2) if len(shape) > 2 else (0, 1), None]:
            assert_sum_matches(wr.sum(x, dim, kernel=kernel), x, dim, kernel=kernel)


@requires_cuda
def test_more_than_2_to_the_31_elements():
    """Offsets past 2^31 (int8, so that it fits any GPU); torch.sum, which widens int8 to
    int64 first, checks it piece by piece."""
    n = 2**31 + 64
    x = torch.randint(-100, 100, (n,), dtype=torch.int8, device="cuda")
    expected = sum(torch.sum(x[i : i + 2**28]).item() for i in range(0, n, 2**28))
    assert wr.sum(x).item() == expected
    rows = x[: 2**31].view(2**16, 2**15)
    got = wr.sum(rows, 1)
    for i in range(0, 2**16, 2**12):
        assert torch.equal(got[i : i + 2**12], torch.sum(rows[i : i + 2**12], 1))
    got = wr.sum(rows, 0)
    for j in range(0, 2**15, 2**11):
        assert torch.equal(got[j : j + 2**11], torch.sum(rows[:, j : j + 2**11], 0))
    del x, rows, got
    torch.cuda.empty_cache()
