"""kernel="exact": every float sum is the exact sum of its inputs (after dtype=) rounded
once to the result's dtype, to nearest, ties to even, with IEEE's special values; so the
same bits whatever the batch, layout, thread count, split or device.

The reference is exact and written here: each input as a Python integer times a power of
two (every float16, bfloat16, float32 and float64 value is one), added exactly, and
rounded to the format by integer arithmetic (not through torch's conversions, which may
round twice). Results are compared bit for bit.

CUDA cases skip where the build has no CUDA kernel "exact" (or no GPU)."""

import math
import os
import subprocess
import sys
from fractions import Fraction

import numpy as np
import pytest
import torch

import warpreduce_torch as wr
from warpreduce_torch import _C
from warpreduce_torch.testing import VIEW_LAYOUTS, random_tensor, random_view

from .support import DEVICES, HAS_CUDA, INT_DTYPES

FLOATS = [torch.float16, torch.bfloat16, torch.float32, torch.float64]
# Significand bits (the hidden one counted) and the largest exponent of each format.
FORMATS = {
    torch.float16: (11, 15),
    torch.bfloat16: (8, 127),
    torch.float32: (24, 127),
    torch.float64: (53, 1023),
}
BITS = {2: torch.int16, 4: torch.int32, 8: torch.int64}


def exact_device(device):
    """Skips where `device` has no kernel "exact" yet."""
    if "exact" not in wr.kernels(device):
        pytest.skip(f"no kernel 'exact' for {device} in this build")


# --- the exact reference ----------------------------------------------------------------------


def round_to_format(value, dtype):
    """The Fraction `value` rounded to `dtype`, to nearest, ties to even, as a Python float
    (which holds every value of these formats exactly); +-inf past the largest value."""
    precision, max_exponent = FORMATS[dtype]
    if value == 0:
        return 0.0
    sign = -1.0 if value < 0 else 1.0
    a = abs(value)
    exponent = a.numerator.bit_length() - a.denominator.bit_length()  # 2^e <= a < 2^(e+1)
    if Fraction(2) ** exponent > a:
        exponent -= 1
    quantum = max(exponent, 1 - max_exponent) - (precision - 1)  # weight of the last bit
    scaled = a / Fraction(2) ** quantum
    kept, rest = divmod(scaled.numerator, scaled.denominator)
    twice_rest = 2 * rest
    if twice_rest > scaled.denominator or (twice_rest == scaled.denominator and kept % 2 == 1):
        kept += 1
    rounded = Fraction(kept) * Fraction(2) ** quantum
    largest = (2 - Fraction(2) ** (1 - precision)) * Fraction(2) ** max_exponent
    if rounded > largest:
        return sign * math.inf
    return sign * float(rounded)


def exact_row_sums(rows):
    """The exact sums of the rows of a float64 array [outputs, length] of finite values,
    as Fractions: each value is m * 2^e with m an integer of 53 bits; values of equal e
    are added in int64 (in two halves of m, so that nothing overflows), and those sums
    are shifted and added as Python integers."""
    outputs, length = rows.shape
    if length == 0:
        return [Fraction(0)] * outputs
    m, e = np.frexp(rows)
    mantissas = np.ldexp(m, 53).astype(np.int64)
    exponents = e.astype(np.int64) - 53
    lowest = int(exponents.min())
    totals = [0] * outputs
    for u in np.unique(exponents):
        chosen = np.where(exponents == u, mantissas, 0)
        high = (chosen >> 26).sum(axis=1)
        low = (chosen & ((1 << 26) - 1)).sum(axis=1)
        shift = int(u) - lowest
        for i in np.nonzero(high | low)[0]:
            totals[i] += ((int(high[i]) << 26) + int(low[i])) << shift
    scale = Fraction(2) ** lowest
    return [Fraction(t) * scale for t in totals]


def exact_sum(x, dim=None, keepdim=False, dtype=None):
    """torch.sum(x, dim, keepdim, dtype=dtype) as the exact sum rounded once: torch.sum's
    shape and dtype, IEEE's special values (NaN for any NaN or both infinities, else the
    infinity present), +0.0 for an exact 0."""
    shape_of = torch.sum(x.to("meta"), dim, keepdim, dtype=dtype)
    source = x if dtype is None else x.to(dtype)  # dtype= converts first, as torch.sum
    out_dtype = shape_of.dtype
    if source.dim() == 0:
        reduced = []
    elif dim is None or (not isinstance(dim, int) and len(dim) == 0):
        reduced = list(range(source.dim()))
    else:
        reduced = sorted({d % source.dim() for d in ([dim] if isinstance(dim, int) else dim)})
    kept = [d for d in range(source.dim()) if d not in reduced]
    outputs = math.prod(source.shape[d] for d in kept)
    length = math.prod(source.shape[d] for d in reduced)
    if outputs == 0:
        return torch.empty(shape_of.shape, dtype=out_dtype)
    ordered = source.permute(*kept, *reduced) if source.dim() else source
    rows = ordered.reshape(outputs, length).cpu().double().numpy()
    nan = np.isnan(rows).any(axis=1)
    positive_inf = (rows == np.inf).any(axis=1)
    negative_inf = (rows == -np.inf).any(axis=1)
    finite_rows = np.where(np.isfinite(rows), rows, 0.0)
    results = []
    for i, total in enumerate(exact_row_sums(finite_rows)):
        if nan[i] or (positive_inf[i] and negative_inf[i]):
            results.append(math.nan)
        elif positive_inf[i]:
            results.append(math.inf)
        elif negative_inf[i]:
            results.append(-math.inf)
        else:
            results.append(round_to_format(total, out_dtype))
    # Every value is one of out_dtype's, so this conversion is exact.
    return torch.tensor(results, dtype=torch.float64).to(out_dtype).reshape(shape_of.shape)


def assert_bits_equal(got, expected):
    assert got.shape == expected.shape, (got.shape, expected.shape)
    assert got.dtype == expected.dtype, (got.dtype, expected.dtype)
    got, expected = got.cpu(), expected.cpu()
    both_nan = got.isnan() & expected.isnan()
    int_dtype = BITS[got.element_size()]
    same = (got.view(int_dtype) == expected.view(int_dtype)) | both_nan
    if not bool(same.all()):
        i = int((~same).flatten().nonzero()[0])
        raise AssertionError(
            f"{int((~same).sum())} of {same.numel()} differ; first at {i}: "
            f"{got.flatten()[i].item()!r} != {expected.flatten()[i].item()!r} (exact)"
        )


def check(x, dim=None, keepdim=False, dtype=None):
    """warpreduce's exact sum on x's device is the exact reference, bit for bit."""
    got = wr.sum(x, dim, keepdim, dtype=dtype, kernel="exact")
    assert got.device == x.device
    assert_bits_equal(got, exact_sum(x, dim, keepdim, dtype))
    return got


def test_reference_rounding():
    """The reference's own rounding, on values whose answers are known."""
    f16, f32, f64 = torch.float16, torch.float32, torch.float64
    assert round_to_format(Fraction(2049), f16) == 2048  # a tie, to even
    assert round_to_format(Fraction(2051), f16) == 2052  # a tie, to even
    assert round_to_format(Fraction(65519), f16) == 65504
    assert round_to_format(Fraction(65520), f16) == math.inf  # max + ulp / 2: a tie to 2^16
    assert round_to_format(-Fraction(3, 2**26), f16) == -(2.0**-24)  # past half a subnormal
    assert round_to_format(Fraction(1, 2**25), f16) == 0.0  # half the smallest: a tie, to 0
    assert round_to_format(1 + Fraction(1, 2**24), f32) == 1.0
    assert round_to_format(1 + Fraction(3, 2**24), f32) == 1 + 2.0**-22
    assert round_to_format(Fraction(2**-1075), f64) == 0.0
    assert round_to_format(Fraction(3, 2**1076), f64) == 2.0**-1074
    rows = np.array([[1e308, 1e308, -1e308, 5e-324], [0.1, 0.2, -0.3, 0.0]])
    assert exact_row_sums(rows) == [Fraction(1e308) + Fraction(5e-324), sum(map(Fraction, rows[1]))]


# --- the kernel lists it ------------------------------------------------------------------------


def test_kernels_list_exact():
    assert wr.kernels("cpu") == ["auto", "exact"]
    assert wr.kernels("cpu", "exact") == ["exact"]
    assert wr.kernels("cpu", "fast") == ["auto"]


# --- random data: every dtype, layout and plan -------------------------------------------------


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", FLOATS, ids=str)
@pytest.mark.parametrize("layout", VIEW_LAYOUTS)
def test_random_views(device, dtype, layout):
    exact_device(device)
    for i, (shape, dims) in enumerate(
        [((33, 1025), [None, 0, 1]), ((31, 5, 67), [-1, (0, 2), 1]), ((2, 3, 17, 65), [(1, 3)])]
    ):
        x = random_view(shape, layout, dtype, device, seed=i)
        for dim in dims:
            check(x, dim)


# Rows around the CPU kernels' sizes (vectors, short rows batched 4 or 8 at a time, a
# task's 2^14-element chunk, several chunks) and columns around a block (16 rows), a
# chunk (256 rows) and a tile (512 or 1024 columns).
ROW_CASES = [(5, n) for n in [1, 2, 7, 31, 33, 64, 65, 129, 1021, 2**14 - 1, 2**14 + 1]] + [
    (2, 3 * 2**14 + 5)
]
COLUMN_CASES = [(15, 3), (17, 33), (257, 65), (513, 1031), (40, 2049)]


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_rows_and_columns(device, dtype):
    exact_device(device)
    for i, shape in enumerate(ROW_CASES):
        x = random_tensor(shape, dtype, device, seed=i, mean=0)
        check(x, -1)
        check(x[:, ::3], -1)  # strided rows
    for i, shape in enumerate(COLUMN_CASES):
        x = random_tensor(shape, dtype, device, seed=i, mean=0)
        check(x, 0)
        check(x[:, ::2], 0)  # columns 2 apart
    x = random_tensor((3, 100_003), dtype, device, mean=0)
    check(x)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_several_passes_and_the_copied_layout(device, dtype):
    exact_device(device)
    for shape, dim in [
        ((5, 33, 7, 9), (0, 2)),
        ((4, 17, 300, 3), (0, 2, 3)),
        ((300, 5, 70), (0, 2)),
        ((3, 40, 33, 6), (1, 3)),  # the columns of 40 first, then the rows of 6
    ]:
        x = random_tensor(shape, dtype, device, mean=0)
        assert device != "cpu" or len(_C.plan(x, list(dim))["passes"]) >= 2
        check(x, dim)
        check(x, dim, keepdim=True)
    x = random_tensor((3, 4, 5, 6, 7, 8), dtype, device)[::2, ::2, ::2, ::2, ::2, ::2]
    check(x, 5)
    check(x, (0, 5))


@pytest.mark.parametrize("device", DEVICES)
def test_dtype_converts_first(device):
    exact_device(device)
    x = random_tensor((7, 300), torch.float32, device, mean=0)
    check(x, 1, dtype=torch.float16)  # rounded to float16 first, as torch.sum converts
    check(x, 1, dtype=torch.float64)
    check(x.to(torch.int32), 1, dtype=torch.bfloat16)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", INT_DTYPES, ids=str)
def test_integers_take_the_auto_path(device, dtype):
    exact_device(device)
    x = random_tensor((33, 70, 5), dtype, device)
    for dim in [None, 1, (0, 2)]:
        assert torch.equal(wr.sum(x, dim, kernel="exact"), torch.sum(x, dim))


# --- adversarial inputs ---------------------------------------------------------------------------


def huge(dtype):
    """A value near the top of dtype's range, whose pairs cancel."""
    return {
        torch.float16: 60000.0,
        torch.bfloat16: 3.0e38,
        torch.float32: 1e30,
        torch.float64: 1e307,
    }[dtype]


def cancelling_rows(dtype, device, rows, length, seed):
    """Rows of pairs +-huge (all cancelling) and ordinary values, shuffled, and a few
    lone huge values: the exact sum is a small one that a rounded sum loses."""
    g = torch.Generator().manual_seed(seed)
    big = huge(dtype)
    x = torch.randn(rows, length, generator=g, dtype=torch.float64)
    pairs = length // 4
    x[:, :pairs] = big * torch.rand(rows, pairs, generator=g, dtype=torch.float64)
    x = x.to(dtype)
    x[:, pairs : 2 * pairs] = -x[:, :pairs]
    order = torch.argsort(torch.rand(rows, length, generator=g), dim=1)
    return torch.gather(x, 1, order).to(device)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_cancelling_huge_values(device, dtype):
    exact_device(device)
    for i, (rows, length) in enumerate([(64, 8), (40, 37), (16, 1000), (3, 40_000)]):
        x = cancelling_rows(dtype, device, rows, length, seed=i)
        check(x, 1)
        check(x.t(), 0)  # the same sums as columns
        check(x)


# Rows of a few whole 16-byte vectors (rows_vectors on a GPU): every group of lanes a row
# (1 to 32), each round's rows certified side by side by a group's first lanes, row counts
# that end within a round; ordinary rows, and cancelling ones, some of which fall back.
@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_rows_of_a_few_vectors(device, dtype):
    exact_device(device)
    lanes = 16 // dtype.itemsize
    for vectors in [1, 2, 3, 4, 6, 8, 13, 16, 25, 32]:
        for rows in [2, 3, 6, 67]:
            seed = vectors * 100 + rows
            x = cancelling_rows(dtype, device, rows, vectors * lanes, seed)
            assert _C.plan(x.cpu(), [-1], 132, True)["passes"][0]["launch"].startswith(
                "rows_vectors"
            )
            check(x, -1)
            check(random_tensor((rows, vectors * lanes), dtype, device, seed=seed), -1)


# Aligned columns whose tiles are too few to fill a GPU: on CUDA their rows split over
# blocks, the partials of every split meeting in the tile's last block (fewer splits for
# rounded sums than for certified ones); ordinary and cancelling columns (some fall back),
# whole vectors and a partial last one.
@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_columns_split_over_blocks(device, dtype):
    exact_device(device)
    for i, (rows, columns) in enumerate([(2**13 + 3, 128), (4096, 1024), (300, 64), (5000, 40)]):
        x = random_tensor((rows, columns), dtype, device, seed=i, mean=0)
        assert _C.plan(x.cpu(), [0], 132, True)["passes"][0]["launch"].startswith("columns vector")
        check(x, 0)
        check(x[:, : columns - 3], 0)  # rows still aligned alike, the last vector partial
        check(cancelling_rows(dtype, device, columns, rows, seed=i).t().contiguous(), 0)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_subnormals_only(device, dtype):
    exact_device(device)
    info = torch.finfo(dtype)
    g = torch.Generator().manual_seed(1)
    for rows, length in [(50, 20), (7, 3000)]:
        x = (torch.rand(rows, length, generator=g, dtype=torch.float64) - 0.5) * 1.9
        x = (x * info.smallest_normal).to(dtype).to(device)
        assert bool((x.abs() < info.smallest_normal).all())
        check(x, 1)
        check(x, 0)
        check(x)


def tie_rows(dtype):
    """Rows whose exact sums are ties between two neighbours of dtype (1 + ulp / 2), and
    the same broken either way by a third term far below: the smallest subnormal, or a
    huge value and its negation on either side of it (which a rounded sum loses)."""
    precision, _ = FORMATS[dtype]
    half_ulp = 2.0**-precision
    tiny = torch.finfo(dtype).smallest_normal * 2.0 ** -(precision - 1)  # smallest subnormal
    big = huge(dtype)
    rows = [
        [1.0, half_ulp],  # a tie: to even, 1
        [1.0 + 2 * half_ulp, half_ulp],  # a tie: to even, 1 + 2 ulp
        [1.0, half_ulp, tiny],  # above the tie
        [1.0, half_ulp, -tiny],  # below it
        [-1.0, -half_ulp, tiny],
        [big, 1.0, half_ulp, -big],  # a tie behind cancelling values
        [big, 1.0, half_ulp, tiny, -big],
        [1.0, big, half_ulp, -big, -tiny],
        [half_ulp, 1.0, half_ulp, -half_ulp],
    ]
    return padded_rows(rows, dtype)


def padded_rows(rows, dtype):
    """Lists of values as the rows of a tensor of dtype, padded with zeros."""
    width = max(map(len, rows))
    return torch.tensor([r + [0.0] * (width - len(r)) for r in rows], dtype=torch.float64).to(dtype)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_ties(device, dtype):
    exact_device(device)
    x = tie_rows(dtype).to(device)
    got = check(x, 1)
    ulp = 2.0 ** (1 - FORMATS[dtype][0])
    assert got[0].item() == 1.0 and got[1].item() == 1 + 2 * ulp  # ties to even
    assert got[2].item() == 1 + ulp and got[3].item() == 1.0  # broken either way
    check(x.t(), 0)
    check(x.t().contiguous(), 0)  # columns
    # In longer rows, and in rows of each length around the short rows' batches; as
    # columns too.
    for length in [6, 50, 1000, 20_000]:
        padded = torch.zeros(x.shape[0], length, dtype=dtype, device=device)
        padded[:, -x.shape[1] :] = x
        check(padded, 1)
        check(padded.flip(1), 1)
        check(padded.t().contiguous(), 0)


@pytest.mark.parametrize("device", DEVICES)
def test_float32_values_as_float64(device):
    """float32 values stored as float64 sum exactly in a TwoSum chain, and their sums land
    exactly on a float64 tie often (about one in 12 at 2^20 elements): such sums are
    rounded once, to even, like any other."""
    exact_device(device)
    for seed in range(12):
        generator = torch.Generator().manual_seed(seed)
        x = torch.randn(1 << 17, generator=generator).double()
        want = math.fsum(x.tolist())
        assert wr.sum(x.to(device), kernel="exact").item() == want
        rows = x.view(8, -1)
        got = wr.sum(rows.to(device), 1, kernel="exact").cpu()
        assert got.tolist() == [math.fsum(r) for r in rows.tolist()]


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_overflow_edge(device, dtype):
    """Sums just below, at and above max + ulp(max) / 2, the threshold past which the
    correctly rounded sum is infinite; and sums whose running total overflows although
    the exact sum does not."""
    exact_device(device)
    info = torch.finfo(dtype)
    largest = info.max
    precision, max_exponent = FORMATS[dtype]
    half_ulp = 2.0 ** (max_exponent - precision)  # ulp(max) / 2
    tiny_step = 2.0 ** (max_exponent - precision - 3)
    rows = [
        [largest, half_ulp],  # the tie at the threshold: to even, infinity
        [largest, half_ulp - tiny_step],  # below it: max
        [largest, half_ulp / 2, half_ulp / 2],
        [largest, largest, -largest],  # the running sum overflows, the exact one not
        [-largest, -largest, largest, -half_ulp],  # -max - ulp / 2: -infinity
        [largest, largest],  # infinity
    ]
    x = padded_rows(rows, dtype).to(device)
    got = check(x, 1)
    assert got[0].item() == math.inf and got[1].item() == largest
    assert got[3].item() == largest and got[4].item() == -math.inf
    check(x.repeat(1, 50), 1)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_long_tail_of_tiny_values_after_a_huge_one(device, dtype):
    exact_device(device)
    precision, _ = FORMATS[dtype]
    for length in [100, 5000, 70_000]:
        x = torch.full((2, length), 2.0 ** (-precision - 2), dtype=torch.float64)
        x[0, 0] = 1.0  # 1 + (length - 1) quarter ulps: lost one by one, not together
        x[1, 0], x[1, -1] = 2.0**precision, -(2.0**precision)
        check(x.to(dtype).to(device), 1)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=str)
def test_long_16bit_rows_of_mixed_stretches(device, dtype):
    """Long 16-bit rows of ordinary stretches and stretches that are not: exponents far
    apart, 32 values near the format's overflow (past float's range together), a tie
    behind cancelling pairs, specials; whole rows and offset ones."""
    exact_device(device)
    precision, max_exponent = FORMATS[dtype]
    g = torch.Generator().manual_seed(11)
    n = 4099
    base = torch.randn(6, n, generator=g, dtype=torch.float64)
    big = 2.0 ** (max_exponent - 1)
    base[1, 700:716], base[1, 1500:1516] = big, -big  # 32 of them: past float's range
    base[2, ::97] *= 2.0 ** -(precision + 10)  # tiny values among ordinary ones
    base[3, 3000] = math.inf
    base[4, 1:4096:2] = -base[4, 0:4096:2]  # pairs that cancel, then a tie: 1 + ulp / 2
    base[4, 4096:] = torch.tensor([1.0, 2.0**-precision, 0.0], dtype=torch.float64)
    base[5, 513] = math.nan
    x = base.to(dtype).to(device)
    for v in [x, x[:, 1:], x[:, :-3]]:
        check(v, 1)
    check(x[0])


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_special_values(device, dtype):
    exact_device(device)
    inf, nan = math.inf, math.nan
    rows = [
        [1.0, nan, 2.0],
        [inf, 1.0, 2.0],
        [-inf, 1.0, -inf],
        [inf, -inf, 1.0],  # both infinities: NaN
        [nan, inf, 0.0],
        [-0.0, -0.0, -0.0],  # a sum of -0.0s: +0.0, as torch.sum gives
        [1.0, -1.0, 0.0],  # an exact 0: +0.0
        [-0.0, 0.0, -0.0],
    ]
    x = torch.tensor(rows, dtype=torch.float64).to(dtype).to(device)
    got = check(x, 1)
    assert got[5].item() == 0.0 and math.copysign(1.0, got[5].item()) == 1.0
    assert torch.equal(got.isnan().cpu(), torch.tensor([1, 0, 0, 1, 1, 0, 0, 0], dtype=torch.bool))
    check(x.repeat(1, 40), 1)
    check(x.t().contiguous(), 0)
    check(torch.full((3, 5000), -0.0, dtype=dtype, device=device), 1)


# --- the same bits whatever the batch, layout, threads and split --------------------------------


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_same_bits_for_any_batch(device, dtype):
    exact_device(device)
    for length in [32, 100, 4099]:
        x = cancelling_rows(dtype, device, 64, length, seed=length)
        whole = wr.sum(x, -1, kernel="exact")
        for b in [1, 3, 17, 63]:
            assert_bits_equal(wr.sum(x[:b], -1, kernel="exact"), whole[:b])
        assert_bits_equal(whole, exact_sum(x, -1))


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_same_bits_for_any_layout_and_split(device, dtype):
    """The same values summed as rows, columns, permuted, sliced copies, in passes over
    reshaped dims, and one by one: one result."""
    exact_device(device)
    x = cancelling_rows(dtype, device, 48, 600, seed=7)
    whole = wr.sum(x, 1, kernel="exact")
    ways = {
        "columns": lambda: wr.sum(x.t().contiguous(), 0, kernel="exact"),
        "transposed view": lambda: wr.sum(x.t(), 0, kernel="exact"),
        "two passes": lambda: wr.sum(x.reshape(48, 20, 30).transpose(1, 2), (1, 2), kernel="exact"),
        "permuted": lambda: wr.sum(
            x.reshape(48, 20, 30).permute(2, 0, 1).contiguous(), (0, 2), kernel="exact"
        ),
        "sliced copy": lambda: wr.sum(
            torch.cat([x, x], 1).reshape(48, 2, 600)[:, 1], 1, kernel="exact"
        ),
        "one by one": lambda: torch.stack([wr.sum(row, kernel="exact") for row in x]),
        "in a long row": lambda: wr.sum(
            torch.cat([x, torch.zeros(48, 70_000, dtype=dtype, device=device)], 1),
            1,
            kernel="exact",
        ),
    }
    for name, way in ways.items():
        try:
            assert_bits_equal(way(), whole)
        except AssertionError as e:
            raise AssertionError(name) from e


@pytest.fixture
def restore_threads():
    saved = torch.get_num_threads()
    yield
    torch.set_num_threads(saved)


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
@pytest.mark.parametrize(
    "shape,dim",
    [
        ((2**20 + 3,), None),
        ((3, 100_003), -1),
        ((4099, 60), -1),
        ((70_001, 13), 0),
        ((64, 30, 28), (0, 2)),
    ],
    ids=str,
)
def test_same_bits_for_any_thread_count(restore_threads, dtype, shape, dim):
    x = random_tensor(shape, dtype, "cpu", mean=0)
    torch.set_num_threads(1)
    first = wr.sum(x, dim, kernel="exact")
    for threads in (2, 3):
        torch.set_num_threads(threads)
        assert_bits_equal(wr.sum(x, dim, kernel="exact"), first)


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_same_bits_on_cpu_and_cuda(dtype):
    if not HAS_CUDA:
        pytest.skip("no CUDA GPU visible")
    exact_device("cuda")
    x = cancelling_rows(dtype, "cpu", 100, 1000, seed=3)
    for dim in [None, 0, 1]:
        assert_bits_equal(wr.sum(x.cuda(), dim, kernel="exact"), wr.sum(x, dim, kernel="exact"))


def test_flush_denormal_mode_keeps_subnormals():
    """Under torch.set_flush_denormal(True) the vector unit reads subnormals as 0: the
    exact kernel sums them exactly all the same."""
    x = torch.full((4, 1000), torch.finfo(torch.float32).smallest_normal / 4)
    if not torch.set_flush_denormal(True):
        pytest.skip("this processor cannot flush denormals")
    try:
        got = wr.sum(x, 1, kernel="exact")
    finally:
        torch.set_flush_denormal(False)
    assert_bits_equal(got, exact_sum(x, 1))


# --- against the reference on drawn inputs (hypothesis) -------------------------------------------

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import given  # noqa: E402

from .test_fuzz import FUZZ, cases  # noqa: E402


@FUZZ
@given(case=cases(kernels=("exact",)))
def test_matches_the_exact_reference_on_drawn_inputs(case):
    x = case.input("cpu")
    try:
        expected = torch.sum(x, case.dim, case.keepdim, dtype=case.out_dtype)
    except Exception as theirs:  # noqa: BLE001  (torch.sum's error is the expected one)
        with pytest.raises(type(theirs)):
            wr.sum(x, case.dim, case.keepdim, dtype=case.out_dtype, kernel="exact")
        return
    got = wr.sum(x, case.dim, case.keepdim, dtype=case.out_dtype, kernel="exact")
    if expected.dtype.is_floating_point:
        assert_bits_equal(got, exact_sum(x, case.dim, case.keepdim, case.out_dtype))
    else:
        assert torch.equal(got, expected)


# --- autograd, fake tensors, torch.compile, opcheck ----------------------------------------------


@pytest.mark.parametrize("device", DEVICES)
def test_autograd_as_for_auto(device):
    exact_device(device)
    x = random_tensor((3, 4, 5), torch.float64, device).requires_grad_()
    for dim, keepdim in [(None, False), (1, True), ((0, 2), False)]:
        fn = lambda t: wr.sum(t, dim, keepdim, kernel="exact")  # noqa: E731, B023
        assert torch.autograd.gradcheck(fn, (x,))
        assert torch.autograd.gradgradcheck(fn, (x,))
    y = random_tensor((6, 7), torch.bfloat16, device).requires_grad_()
    wr.sum(y, 1, kernel="exact", dtype=torch.float32).sum().backward()
    assert y.grad.dtype == torch.bfloat16 and torch.equal(y.grad, torch.ones_like(y))


@pytest.mark.parametrize("device", DEVICES)
def test_torch_func_as_for_auto(device):
    exact_device(device)
    x = random_tensor((4, 5), torch.float32, device)
    grad = torch.func.grad(lambda t: wr.sum(t.sin(), kernel="exact"))(x)
    assert torch.allclose(grad, x.cos())
    batched = torch.vmap(lambda row: wr.sum(row, kernel="exact"))(x)
    assert_bits_equal(batched, exact_sum(x, 1))
    _, tangent = torch.func.jvp(lambda t: wr.sum(t, 0, kernel="exact"), (x,), (torch.ones_like(x),))
    assert torch.equal(tangent, torch.full((5,), 4.0, device=device))


@pytest.mark.parametrize("device", DEVICES)
def test_meta_and_fake_tensors(device):
    exact_device(device)
    from torch._subclasses.fake_tensor import FakeTensorMode

    x = torch.empty(4, 5, 6, device="meta", dtype=torch.bfloat16)
    out = wr.sum(x, (0, 2), keepdim=True, kernel="exact")
    assert out.device.type == "meta" and out.shape == (1, 5, 1) and out.dtype == torch.bfloat16
    digits = torch.ops.warpreduce._exact_digits(x, [1], False, torch.float32)
    assert digits.shape == (4, 6, torch.ops.warpreduce._exact_digits_width(torch.float32))
    with FakeTensorMode():
        y = torch.empty(4, 5, device=device)
        assert wr.sum(y, 1, kernel="exact").shape == (4,)
        with pytest.raises(IndexError):
            wr.sum(y, 2, kernel="exact")


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dynamic", [False, True])
def test_torch_compile(device, dynamic):
    exact_device(device)
    torch._dynamo.reset()  # f's code is the same in every case: its cache entries add up

    def f(t):
        return wr.sum(t * 2, dim=1, kernel="exact"), wr.sum(t, kernel="exact")

    compiled = torch.compile(f, fullgraph=True, dynamic=dynamic)
    for shape in [(8, 33), (5, 1000)]:
        x = cancelling_rows(torch.float32, device, *shape, seed=1)
        for got, expected in zip(compiled(x), f(x)):
            assert_bits_equal(got, expected)
    w = random_tensor((6, 7), torch.float32, device).requires_grad_()
    compiled(w)[0].sum().backward()
    assert torch.equal(w.grad, torch.full_like(w, 2.0))


OPCHECK_CASES = [
    ((17, 33), {}),
    ((17, 33), {"dim": [1]}),
    ((4, 5, 6), {"dim": [0, 2], "keepdim": True, "dtype": torch.float64}),
    ((1000,), {}),
]


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("shape,kwargs", OPCHECK_CASES, ids=str)
def test_opcheck(device, shape, kwargs):
    exact_device(device)
    x = random_tensor(shape, torch.float32, device)
    for requires_grad in (False, True):
        x.requires_grad_(requires_grad)
        torch.library.opcheck(torch.ops.warpreduce.sum.default, (x,), {**kwargs, "kernel": "exact"})
        args = (x, kwargs.get("dim"), kwargs.get("keepdim", False), kwargs.get("dtype"))
        torch.library.opcheck(torch.ops.warpreduce._exact_sum.default, args)
        torch.library.opcheck(torch.ops.warpreduce._sum.default, (*args, "exact"))
    x.requires_grad_(False)
    torch.library.opcheck(torch.ops.warpreduce._exact_digits.default, args)
    digits = torch.ops.warpreduce._exact_digits(*args)
    out_dtype = kwargs.get("dtype") or torch.float32
    torch.library.opcheck(torch.ops.warpreduce._exact_from_digits.default, (digits, out_dtype))


# --- the digits DTensor exchanges ------------------------------------------------------------------


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_digits_of_pieces_add_up_to_the_whole(device, dtype):
    """_exact_digits of pieces of a reduced dim, added as int64, give through
    _exact_from_digits the exact sum of the whole: what an all-reduce of them does."""
    exact_device(device)
    x = cancelling_rows(dtype, device, 30, 301, seed=5)
    pieces = torch.tensor_split(x, 4, dim=1)
    digits = sum(torch.ops.warpreduce._exact_digits(p, [1], False, None) for p in pieces)
    assert_bits_equal(torch.ops.warpreduce._exact_from_digits(digits, dtype), exact_sum(x, 1))
    whole = torch.ops.warpreduce._exact_digits(x, None, True, torch.float64)
    assert whole.shape == (1, 1, torch.ops.warpreduce._exact_digits_width(torch.float64))
    assert_bits_equal(
        torch.ops.warpreduce._exact_from_digits(whole, torch.float64),
        exact_sum(x, None, True, torch.float64),
    )
    specials = torch.tensor([[math.inf, 1.0], [math.nan, 0.0], [-0.0, -0.0]], dtype=dtype)
    d = torch.ops.warpreduce._exact_digits(specials.to(device), [1], False, None)
    assert_bits_equal(torch.ops.warpreduce._exact_from_digits(d, dtype), exact_sum(specials, 1))


def test_digits_argument_errors():
    x = torch.ones(3, 4)
    with pytest.raises(ValueError, match="exact digits are for"):
        torch.ops.warpreduce._exact_digits(x.long(), [1], False, None)
    digits = torch.ops.warpreduce._exact_digits(x, [1], False, None)
    with pytest.raises(ValueError, match="expected int64 digits"):
        torch.ops.warpreduce._exact_from_digits(digits, torch.float64)  # float32's width
    with pytest.raises(ValueError, match="expected int64 digits"):
        torch.ops.warpreduce._exact_from_digits(digits.double(), torch.float32)


# --- each instruction-set build -------------------------------------------------------------------

ISA_CHECK = r"""
import sys, torch, warpreduce_torch as wr
sys.path.insert(0, ".")
from tests.test_exact import cancelling_rows, exact_sum, assert_bits_equal, tie_rows
print(torch.backends.cpu.get_cpu_capability())
for dtype in [torch.float16, torch.bfloat16, torch.float32, torch.float64]:
    for rows, length in [(9, 7), (33, 40), (5, 3000), (2, 40_000)]:
        x = cancelling_rows(dtype, "cpu", rows, length, seed=length)
        for v, dim in [(x, 1), (x.t(), 0), (x.t(), 1), (x[:, ::2], 1), (x, None)]:
            assert_bits_equal(wr.sum(v, dim, kernel="exact"), exact_sum(v, dim))
    t = tie_rows(dtype)
    assert_bits_equal(wr.sum(t, 1, kernel="exact"), exact_sum(t, 1))
print("ok")
"""


@pytest.mark.parametrize("isa", ["default", "avx2", "avx512"])
def test_each_instruction_set_build(isa):
    from .test_cpu import ISA_FLAGS, cpu_flags

    if isa != "default" and not ISA_FLAGS[isa] <= cpu_flags():
        pytest.skip(f"this processor has no {isa}")
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env = dict(os.environ, ATEN_CPU_CAPABILITY=isa, PYTHONPATH=os.pathsep.join(sys.path))
    done = subprocess.run(
        [sys.executable, "-c", ISA_CHECK],
        env=env,
        cwd=root,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.split()[-2:] == [isa.upper(), "ok"]
