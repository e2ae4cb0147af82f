"""Reliability: sums that need no reduction (an empty reduced dim, size-1 reduced dims,
0-d inputs) against torch.sum; then the stress programs of benchmarks/stress/, short:
threads at once, streams created and destroyed, out of memory, memory that stays flat,
several GPUs. The GPU machine runs the same programs for longer (benchmarks/gpu_check.sh
reliability)."""

import ctypes
import os
import pathlib
import subprocess
import sys

import pytest
import torch

import warpreduce_torch as wr
from warpreduce_torch.testing import assert_sum_matches, random_tensor

from .support import DEVICES, DTYPES, HAS_CUDA, requires_cuda

ROOT = pathlib.Path(__file__).resolve().parent.parent
STRESS = ROOT / "benchmarks" / "stress"


# --- sums over an empty dim: a fill of zeros ----------------------------------------------

EMPTY_REDUCED = [  # (shape, dim): a reduced dim of size 0, kept dims not empty
    ((3, 0), 1),
    ((0, 5), 0),
    ((3, 5, 0, 7, 4), (0, 2)),
    ((3, 5, 0, 7, 4), (2,)),
    ((3, 5, 0, 7, 4), -3),
    ((3, 5, 0, 7, 4), (1, 2, 4)),
    ((2, 0, 3), None),  # everything: a 0-d zero
    ((2, 0, 3), ()),
]


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("shape,dim", EMPTY_REDUCED, ids=str)
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_sum_over_an_empty_dim_is_zeros(device, shape, dim, dtype):
    x = random_tensor(shape, dtype, device)
    for keepdim in (False, True):
        got = wr.sum(x, dim, keepdim)
        assert_sum_matches(got, x, dim, keepdim)
        assert got.numel() > 0 and not got.any()


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize(
    "source,dtype",
    [
        (torch.float16, torch.float32),
        (torch.int8, torch.float64),
        (torch.float32, torch.int16),
        (torch.bool, torch.bool),
        (torch.bfloat16, torch.bfloat16),
        (torch.int32, torch.int64),
    ],
    ids=str,
)
def test_sum_over_an_empty_dim_with_dtype(device, source, dtype):
    x = random_tensor((4, 0, 6), source, device)
    for dim in [1, (0, 1), None]:
        assert_sum_matches(wr.sum(x, dim, dtype=dtype), x, dim, dtype=dtype)


@pytest.mark.parametrize("device", DEVICES)
def test_large_kept_dims_over_an_empty_dim(device):
    """The shape of a float16 3 x 1025 x 0 x 293 x 1025 sum over (0, 2) (307M zeros),
    smaller: every output element written, as zero."""
    x = torch.empty(3, 257, 0, 73, 257, dtype=torch.float16, device=device)
    got = wr.sum(x, (0, 2), keepdim=True)
    expected = torch.sum(x, (0, 2), keepdim=True)
    assert got.shape == expected.shape == (1, 257, 1, 73, 257)
    assert got.dtype == torch.float16 and got.device == x.device
    assert torch.equal(got, expected)


@pytest.mark.parametrize("device", DEVICES)
def test_empty_reduced_dim_of_a_view(device):
    """A broadcast and a transposed view whose reduced dim is empty."""
    base = random_tensor((1, 0, 9), torch.float32, device)
    for x in [base.expand(6, 0, 9), random_tensor((9, 0, 6), torch.int16, device).transpose(0, 2)]:
        for dim, keepdim in [(1, False), ((0, 1), True), (-2, True)]:
            assert_sum_matches(wr.sum(x, dim, keepdim), x, dim, keepdim)


# --- size-1 reduced dims: a copy ----------------------------------------------------------


def size_one_views(dtype, device):
    """(name, tensor, dim): every reduced dim of size 1, in several layouts."""
    x = random_tensor((5, 1, 7), dtype, device)
    y = random_tensor((1, 6, 1, 4), dtype, device)
    t = random_tensor((7, 5), dtype, device).t().unsqueeze(1)  # (5, 1, 7), transposed
    s = random_tensor((8, 9), dtype, device)[::2, 3:4]  # (4, 1), strided, offset
    e = random_tensor((1, 5), dtype, device).expand(3, 5).unsqueeze(0)  # (1, 3, 5), stride 0
    return [
        ("middle", x, 1),
        ("middle_negative", x, -2),
        ("two", y, (0, 2)),
        ("all_of_a_single_element", random_tensor((1, 1, 1), dtype, device), None),
        ("transposed", t, 1),
        ("sliced", s, 1),
        ("expanded", e, 0),
    ]


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("keepdim", [False, True])
def test_size_one_reduced_dims_are_a_copy(device, dtype, keepdim):
    for name, x, dim in size_one_views(dtype, device):
        got = wr.sum(x, dim, keepdim)
        expected = torch.sum(x, dim, keepdim)
        # A sum of one element is that element (widened, for integers): exactly.
        assert got.shape == expected.shape and got.dtype == expected.dtype, name
        assert torch.equal(got, expected), name
        # A new tensor, never a view of the input.
        assert got.data_ptr() != x.data_ptr(), name
        before = x.clone()
        got.zero_()
        assert torch.equal(x, before), name


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", [torch.float64, torch.int32, torch.bool, torch.bfloat16], ids=str)
def test_size_one_reduced_dims_with_dtype(device, dtype):
    for source in [torch.float32, torch.uint8, torch.float16]:
        x = random_tensor((6, 1, 5), source, device)
        for dim in [1, (1,), (0, 1)]:
            assert_sum_matches(wr.sum(x, dim, dtype=dtype), x, dim, dtype=dtype)


# --- 0-d inputs -----------------------------------------------------------------------------


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("dim", [None, 0, -1, (), (0,), [-1]], ids=str)
@pytest.mark.parametrize("keepdim", [False, True])
def test_zero_dim_input(device, dtype, dim, keepdim):
    x = random_tensor((), dtype, device, seed=3)
    got = wr.sum(x, dim, keepdim)
    expected = torch.sum(x, dim, keepdim)
    assert got.shape == expected.shape == () and got.dtype == expected.dtype
    assert torch.equal(got, expected)
    assert got.data_ptr() != x.data_ptr()


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", [torch.float64, torch.float16, torch.int8, torch.bool], ids=str)
def test_zero_dim_input_with_dtype(device, dtype):
    for source in [torch.float32, torch.int64, torch.bool]:
        x = random_tensor((), source, device, seed=5)
        assert_sum_matches(wr.sum(x, dtype=dtype), x, dtype=dtype)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dim", [1, -2, (0, 0), (0, -1)], ids=str)
def test_zero_dim_input_errors_like_torch(device, dim):
    x = random_tensor((), torch.float32, device)
    with pytest.raises(Exception) as theirs:
        torch.sum(x, dim)
    with pytest.raises(theirs.type):
        wr.sum(x, dim)


NEGATIVE_ZERO_CASES = [  # (shape, dim): one element to add
    ((), None),
    ((1,), None),
    ((4, 1), 1),
    ((1, 3, 1), (0, 2)),
]


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize(
    "dtype", [torch.float32, torch.float64, torch.float16, torch.bfloat16], ids=str
)
@pytest.mark.parametrize("shape,dim", NEGATIVE_ZERO_CASES, ids=str)
def test_one_element_sum_of_negative_zero_is_positive_zero(device, dtype, shape, dim):
    """torch.sum adds from 0, and 0.0 + -0.0 is +0.0: the sign shows in 1 / result."""
    x = torch.full(shape, -0.0, dtype=dtype, device=device)
    expected = torch.sum(x, dim)
    got = wr.sum(x, dim)
    assert torch.equal(got, expected)  # -0.0 == 0.0: this alone cannot tell them apart
    assert torch.equal(torch.signbit(got), torch.signbit(expected)), (got, expected)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("n", [2, 33, 1025, 1 << 20])
def test_a_sum_of_negative_zeros_is_positive_zero_with_every_kernel(device, n):
    """Every kernel adds from 0, as torch.sum does, however the elements are grouped."""
    x = torch.full((n,), -0.0, device=device)
    columns = x[: n - n % 4].view(-1, 4)  # a column sum (dim 0) of four outputs
    for kernel in wr.kernels(device):
        for t, dim in ((x, None), (x, 0), (columns, 0), (columns.t(), 1)):
            got = wr.sum(t, dim, kernel=kernel)
            assert not torch.signbit(got).any(), (kernel, tuple(t.shape), dim, got)
            assert not torch.signbit(torch.sum(t, dim)).any()


# --- a stream whose scratch was evicted ----------------------------------------------------


@requires_cuda
def test_a_stream_whose_scratch_was_given_up_comes_back_right():
    """More streams than the library keeps split-kernel scratch for, each with a split
    sum; then the first stream again (its scratch long given up), and again."""
    cudart = torch.cuda.cudart()
    full = random_tensor((1 << 20,), torch.float32, "cuda", 1)
    cols = random_tensor((1 << 16, 128), torch.float32, "cuda", 2)
    torch.cuda.synchronize()
    handles = []
    try:
        for _ in range(200):
            h = ctypes.c_void_p(0)
            assert int(cudart.cudaStreamCreate(ctypes.addressof(h))) == 0
            handles.append(h.value)
        streams = [torch.cuda.ExternalStream(h) for h in handles]
        for round_ in range(2):
            for s in streams if round_ == 0 else streams[:3]:
                with torch.cuda.stream(s):
                    assert_sum_matches(wr.sum(full), full)
                    assert_sum_matches(wr.sum(cols, 0), cols, 0)
        torch.cuda.synchronize()
    finally:
        for h in handles:
            cudart.cudaStreamDestroy(h)


# --- the stress programs, short ----------------------------------------------------------------


def run_stress(program, *args, timeout=180):
    """benchmarks/stress/<program>.py in a process of its own (an out-of-memory limit,
    memory levels and threads stay there); a skip there is a skip here."""
    env = dict(os.environ)
    package_root = str(pathlib.Path(wr.__file__).resolve().parent.parent)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [package_root, env.get("PYTHONPATH")]))
    proc = subprocess.run(
        [sys.executable, str(STRESS / f"{program}.py"), *map(str, args)],
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    output = proc.stdout + proc.stderr
    if proc.returncode == 0 and output.startswith("SKIP:"):
        pytest.skip(output.strip())
    assert proc.returncode == 0, output
    assert "PASS" in output, output
    return output


def test_threads_at_once_cpu():
    run_stress("concurrency", "--device", "cpu", "--threads", 4, "--seconds", 2)


@requires_cuda
def test_threads_on_streams_with_graph_capture_cuda():
    out = run_stress("concurrency", "--device", "cuda", "--threads", 4, "--seconds", 8)
    assert "graphs captured" in out


def test_memory_stays_flat_cpu():
    run_stress("memory", "--device", "cpu", "--calls", 3000, "--max-rss-mib", 8)


@requires_cuda
def test_memory_stays_flat_cuda():
    run_stress("memory", "--device", "cuda", "--calls", 5000)


@requires_cuda
def test_stream_churn_keeps_memory_bounded():
    run_stress("stream_churn", "--streams", 400)


@requires_cuda
def test_out_of_memory_raises_and_the_next_call_is_right():
    run_stress("oom")


@pytest.mark.skipif(not HAS_CUDA or torch.cuda.device_count() < 2, reason="needs 2 GPUs")
def test_several_gpus():
    run_stress("multi_gpu", "--seconds", 5)
