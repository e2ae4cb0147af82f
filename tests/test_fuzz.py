"""Property-based tests (hypothesis): warpreduce_torch.sum against torch.sum on drawn
inputs: shapes of rank 0 to 5 (sizes 0 and 1 often), views of them (permutes,
transposes, slices with steps and offsets, broadcasts, diagonals, overlapping windows),
dims (None, (), one, negative, tuples in any order, out of range, repeated), keepdim,
every dtype and dtype=; on CUDA also every kernel. Results must match as
assert_sum_matches says; an error must be of the type torch.sum raises.

In CI each test draws a few hundred examples, the same ones every run (derandomized).
WARPREDUCE_FUZZ_EXAMPLES=N draws N a test, fresh ones each run (the GPU machine's
reliability step). A failing example prints as a Case: it goes into REGRESSIONS below,
which runs on every device from then on.
"""

import dataclasses
import os

import pytest
import torch

import warpreduce_torch as wr
from warpreduce_torch.testing import assert_sum_matches, random_tensor

from .support import DEVICES, DTYPES, HAS_CUDA, requires_cuda

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

EXAMPLES = int(os.environ.get("WARPREDUCE_FUZZ_EXAMPLES", "0"))
FUZZ = settings(
    max_examples=EXAMPLES or 150,
    derandomize=not EXAMPLES,  # CI: the same examples every run, so a red CI is reproducible
    deadline=None,  # a first CUDA call, or a large example, is slow; that is not a failure
    database=None,  # nothing written into the checkout
    suppress_health_check=list(HealthCheck),  # tensors are large, data draws many
    print_blob=True,
)

# The views a Case applies to its base tensor, in order: name -> fn(x, *args).
VIEWS = {
    "permute": lambda x, perm: x.permute(*perm),
    "transpose": lambda x, a, b: x.transpose(a, b),
    "slice": lambda x, d, start, stop, step: x[(slice(None),) * d + (slice(start, stop, step),)],
    "broadcast": lambda x, d, n: x.unsqueeze(d).expand(*x.shape[:d], n, *x.shape[d:]),
    "diagonal": lambda x, offset, a, b: x.diagonal(offset, a, b),
    "unfold": lambda x, d, size, step: x.unfold(d, size, step),  # windows may overlap
}
MAX_RANK = 6  # after the views (the base has at most 5 dims)


@dataclasses.dataclass(frozen=True)
class Case:
    """One call, as data: its repr is the code that makes it again."""

    shape: tuple
    dtype: torch.dtype
    views: tuple = ()  # ((name, args), ...), names of VIEWS
    dim: object = None
    keepdim: bool = False
    out_dtype: object = None  # dtype=
    seed: int = 0
    kernel: str = "auto"

    def input(self, device):
        x = random_tensor(self.shape, self.dtype, device, self.seed)
        for name, args in self.views:
            x = VIEWS[name](x, *args)
        return x


def check(case, device):
    x = case.input(device)
    try:
        torch.sum(x, case.dim, case.keepdim, dtype=case.out_dtype)
    except Exception as theirs:  # noqa: BLE001  (torch.sum's error is the expected one)
        with pytest.raises(type(theirs)):
            wr.sum(x, case.dim, case.keepdim, dtype=case.out_dtype, kernel=case.kernel)
        return
    got = wr.sum(x, case.dim, case.keepdim, dtype=case.out_dtype, kernel=case.kernel)
    assert_sum_matches(got, x, case.dim, case.keepdim, case.out_dtype, case.kernel)


# --- strategies -------------------------------------------------------------------------------


def draw_shape(draw, max_elements):
    rank = draw(st.integers(0, 5))
    shape, budget = [], max_elements
    for _ in range(rank):
        if draw(st.integers(0, 15)) == 0:
            size = 0  # rarely: one 0 empties the whole tensor
        else:  # 1 to 3 often, else log-uniform up to what is left of the budget
            scale = draw(st.integers(0, max(budget, 1).bit_length() - 1))
            size = draw(st.one_of(st.integers(1, 3), st.integers(1, 2**scale)))
        size = min(size, budget)
        shape.append(size)
        budget = max(1, budget // max(size, 1))
    return tuple(shape)


def draw_view(draw, x):
    """A view that applies to the meta tensor x, as (name, args), or None."""
    name = draw(st.sampled_from(sorted(VIEWS)))
    r = x.dim()
    if name == "permute" and r >= 2:
        return name, (tuple(draw(st.permutations(range(r)))),)
    if name == "transpose" and r >= 2:
        return name, (draw(st.integers(0, r - 1)), draw(st.integers(0, r - 1)))
    if name == "slice" and r >= 1:
        d = draw(st.integers(0, r - 1))
        n = x.shape[d]
        start = draw(st.integers(0, n))  # > 0: a storage offset
        stop = draw(st.integers(min(start + 1, n), n))  # empty only where n is 0 or start n
        return name, (d, start, stop, draw(st.integers(1, 3)))
    if name == "broadcast" and r < MAX_RANK:
        return name, (draw(st.integers(0, r)), draw(st.sampled_from([2, 3, 1, 5, 0])))
    if name == "diagonal" and r >= 2:
        a, b = draw(st.permutations(range(r)))[:2]
        return name, (draw(st.integers(-2, 2)), a, b)
    if name == "unfold" and 1 <= r < MAX_RANK:
        d = draw(st.integers(0, r - 1))
        if x.shape[d] >= 1:
            return name, (d, draw(st.integers(1, min(x.shape[d], 4))), draw(st.integers(1, 3)))
    return None


def draw_dim(draw, r):
    kind = draw(
        st.sampled_from(
            [
                "none",
                "empty",
                "one",
                "one",
                "several",
                "several",
                "list",
                "out_of_range",
                "repeated",
            ]
        )
    )
    if kind == "none":
        return None
    if kind == "empty":
        return ()
    span = max(r, 1)  # a 0-d tensor takes dim 0 and -1
    if kind == "one":
        return draw(st.integers(-span, span - 1))
    if kind in ("several", "list"):
        dims = draw(st.lists(st.integers(0, span - 1), min_size=1, max_size=span, unique=True))
        dims = [d - span if draw(st.booleans()) else d for d in dims]
        return dims if kind == "list" else tuple(dims)
    if kind == "out_of_range":
        return draw(st.sampled_from([span, -span - 1, span + 3, (0, span)]))
    d = draw(st.integers(0, span - 1))
    return draw(st.sampled_from([(d, d), (d, d - span)]))


@st.composite
def cases(draw, kernels=("auto",), max_elements=2048, large_elements=1 << 16):
    # Now and then a large input: several chunks, blocks or passes.
    shape = draw_shape(draw, draw(st.sampled_from([max_elements] * 4 + [large_elements])))
    meta = torch.empty(shape, device="meta")
    views = []
    for _ in range(draw(st.integers(0, 3))):
        view = draw_view(draw, meta)
        if view is None:
            continue
        viewed = VIEWS[view[0]](meta, *view[1])
        if viewed.numel() <= 4 * large_elements:  # broadcasts and windows multiply elements
            meta = viewed
            views.append(view)
    return Case(
        shape=shape,
        dtype=draw(st.sampled_from(DTYPES)),
        views=tuple(views),
        dim=draw_dim(draw, meta.dim()),
        keepdim=draw(st.booleans()),
        out_dtype=draw(st.sampled_from([None] * len(DTYPES) + DTYPES)),
        seed=draw(st.integers(0, 2**16)),
        kernel=draw(st.sampled_from(kernels)),
    )


# --- the properties ---------------------------------------------------------------------------


@FUZZ
@given(case=cases())
def test_matches_torch_sum_cpu(case):
    check(case, "cpu")


CUDA_KERNELS = (tuple(wr.kernels("cuda")) if HAS_CUDA else ()) or ("auto",)


@requires_cuda
@FUZZ
@given(case=cases(kernels=CUDA_KERNELS, max_elements=1 << 14, large_elements=1 << 21))
def test_matches_torch_sum_cuda(case):
    check(case, "cuda")


# --- regressions: inputs that once failed, and corner cases worth keeping ---------------------

REGRESSIONS = [
    # Overlapping windows of a slice: the same element summed twice.
    Case((10, 7), torch.float32, (("slice", (1, 1, 7, 2)), ("unfold", (0, 4, 1))), dim=(0, 2)),
    # A diagonal (strides added) of a broadcast (stride 0), over every dim.
    Case((5, 6), torch.int16, (("broadcast", (1, 3)), ("diagonal", (1, 0, 2))), dim=None),
    # A broadcast to size 0 among kept dims; dtype= to a float.
    Case(
        (4, 3), torch.uint8, (("broadcast", (0, 0)),), dim=2, keepdim=True, out_dtype=torch.float16
    ),
    # Rank 6 after an unfold, summed over a non-adjacent negative tuple.
    Case((3, 2, 4, 2, 5), torch.bfloat16, (("unfold", (4, 2, 1)),), dim=(-1, 1, -4)),
]


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("case", REGRESSIONS, ids=repr)
def test_regressions(device, case):
    kernels = wr.kernels(device)
    for kernel in kernels:
        check(dataclasses.replace(case, kernel=kernel), device)
