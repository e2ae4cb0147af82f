"""Every CUDA kernel by name (the eight stages, auto, cub) against torch.sum: every dtype,
awkward sizes up to 2^26, dims, layouts; bitwise repeatability; streams and graphs."""

import functools

import pytest
import torch

import warpreduce_torch as wr
from warpreduce_torch.testing import assert_sum_matches, layouts, random_tensor

from .support import DTYPES, HAS_CUDA, LAYOUTS, requires_cuda

pytestmark = requires_cuda

KERNELS = wr.kernels("cuda") if HAS_CUDA else []

# 0, 1, around a warp, a block (256) and a two-element block (512), 2^k +- 1, primes,
# and sizes that need two, three and four launches in the early stages.
CUDA_SIZES = [
    0,
    1,
    2,
    31,
    33,
    255,
    257,
    511,
    513,
    1025,
    4099,
    65535,
    65537,
    1_000_003,
    (1 << 24) + 1,
    1 << 26,
]


# Every kernel sums the same inputs (kernel is the fastest-varying parameter), so a few
# recent ones suffice; the cache is emptied after this module, inputs of up to 2^26
# elements (512 MiB in float64) not held for the rest of the session.
@functools.lru_cache(maxsize=4)
def cached_input(shape, dtype):
    return random_tensor(shape, dtype, "cuda", seed=len(shape) + sum(shape))


@pytest.fixture(scope="module", autouse=True)
def free_cached_inputs():
    yield
    cached_input.cache_clear()


@pytest.mark.parametrize("kernel", KERNELS)
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("n", CUDA_SIZES)
def test_full_reduction(kernel, dtype, n):
    x = cached_input((n,), dtype)
    assert_sum_matches(wr.sum(x, kernel=kernel), x)


SHAPE_DIMS = [
    ((3, 33, 17), 0),
    ((3, 33, 17), 1),
    ((3, 33, 17), -1),
    ((3, 33, 17), (0, 2)),
    ((1025, 6), 0),
    ((6, 100_003), 1),  # few long rows: several blocks a row
    ((70_001, 3), 1),  # many short rows
    ((2, (1 << 20) + 1), -1),
    ((0, 5), 1),
    ((5, 0), 1),
]


@pytest.mark.parametrize("kernel", KERNELS)
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("shape,dim", SHAPE_DIMS, ids=str)
@pytest.mark.parametrize("keepdim", [False, True])
def test_dims(kernel, dtype, shape, dim, keepdim):
    x = cached_input(shape, dtype)
    assert_sum_matches(wr.sum(x, dim, keepdim, kernel=kernel), x, dim, keepdim)


@pytest.mark.parametrize("kernel", KERNELS)
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("dim", [None, 0, -1])
def test_layouts(kernel, dtype, layout, dim):
    x = layouts(cached_input((130, 258), dtype))[layout]
    assert_sum_matches(wr.sum(x, dim, kernel=kernel), x, dim)


@pytest.mark.parametrize(
    "dtype", [torch.int8, torch.float16, torch.float32, torch.float64], ids=str
)
def test_auto_head_and_tail(dtype):
    """Every alignment of the data pointer and every short length: the fast path's
    scalar head, 16-byte body and scalar tail."""
    base = cached_input((4096,), dtype)
    for offset in range(16):
        for n in list(range(0, 80)) + [1000, 4000]:
            x = base[offset : offset + n]
            assert_sum_matches(wr.sum(x), x)


@pytest.mark.parametrize("kernel", KERNELS)
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float64], ids=str)
@pytest.mark.parametrize("shape,dim", [(((1 << 24) + 7,), None), ((64, 1 << 18), 1)], ids=str)
def test_repeated_runs_are_bitwise_equal(kernel, dtype, shape, dim):
    x = cached_input(shape, dtype)
    first = wr.sum(x, dim, kernel=kernel)
    for _ in range(3):
        assert torch.equal(wr.sum(x, dim, kernel=kernel), first)


def test_streams():
    """Calls on several streams at once (each stream keeps its own scratch)."""
    xs = [cached_input((1 << 22,), torch.float32)[i:] for i in range(4)]
    streams = [torch.cuda.Stream() for _ in xs]
    results = []
    for x, s in zip(xs, streams):
        s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s):
            results.append([wr.sum(x) for _ in range(5)])
    torch.cuda.synchronize()
    for x, rs in zip(xs, results):
        for r in rs:
            assert_sum_matches(r, x)


@pytest.mark.parametrize("kernel", ["auto", "warp_shuffle", "first_add_during_load"])
def test_cuda_graph_replay(kernel):
    """Captured into a CUDA graph and replayed on new data."""
    static_in = cached_input((1 << 21,), torch.float32).clone()
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        wr.sum(static_in, kernel=kernel)  # warm-up outside the capture
    torch.cuda.current_stream().wait_stream(s)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        static_out = wr.sum(static_in, kernel=kernel)
    for seed in range(3):
        static_in.copy_(random_tensor(static_in.shape, torch.float32, "cuda", seed))
        graph.replay()
        assert_sum_matches(static_out, static_in)
        assert torch.equal(static_out, wr.sum(static_in, kernel=kernel))


def test_on_the_tensors_device():
    """With several GPUs, the op runs on the input's device, not the current one."""
    if torch.cuda.device_count() < 2:
        pytest.skip("one GPU visible")
    x = random_tensor((1000,), torch.float32, "cuda:1")
    assert_sum_matches(wr.sum(x), x)
