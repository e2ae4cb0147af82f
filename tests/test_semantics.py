"""warpreduce_torch.sum against torch.sum on every device, with the default kernel:
dtypes, awkward sizes, dims, keepdim, layouts, dtype=, special values and errors.
(tests/test_cuda_kernels.py does the same for every CUDA kernel by name.)"""

import pytest
import torch

import warpreduce_torch as wr
from warpreduce_torch.testing import assert_sum_matches, layouts, random_tensor

from .support import DEVICES, DTYPES, LAYOUTS, SIZES


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("n", SIZES)
def test_full_reduction(device, dtype, n):
    x = random_tensor((n,), dtype, device)
    assert_sum_matches(wr.sum(x), x)


SHAPE_DIMS = [
    ((3, 33, 17), 0),
    ((3, 33, 17), 1),
    ((3, 33, 17), -1),
    ((3, 33, 17), (0, 2)),
    ((3, 33, 17), (2, 0)),
    ((3, 33, 17), (0, 1, 2)),
    ((3, 33, 17), ()),
    ((3, 33, 17), None),
    ((1025, 5), 0),
    ((1025, 5), 1),
    ((5, 4099), 1),
    ((2, 1, 31, 4), (1, 3)),
    ((7,), 0),
    ((4, 0, 3), 1),
    ((4, 0, 3), 2),
    ((0, 3), 0),
    ((0, 3), 1),
    ((), 0),
    ((), -1),
    ((), ()),
]


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("shape,dim", SHAPE_DIMS, ids=str)
@pytest.mark.parametrize("keepdim", [False, True])
def test_dims(device, dtype, shape, dim, keepdim):
    x = random_tensor(shape, dtype, device)
    assert_sum_matches(wr.sum(x, dim, keepdim), x, dim, keepdim)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("dim", [None, 0, -1])
def test_layouts(device, dtype, layout, dim):
    x = layouts(random_tensor((66, 130), dtype, device))[layout]
    assert not x.is_contiguous() or layout == "column"
    assert_sum_matches(wr.sum(x, dim), x, dim)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize(
    "source,dtype",
    [
        (torch.int32, torch.float32),  # integers cast to float before the sum
        (torch.float32, torch.int32),  # floats truncated first
        (torch.float32, torch.float64),
        (torch.float64, torch.float16),
        (torch.int32, torch.int64),  # no copy: integers already sum in int64
        (torch.int8, torch.int8),  # the int8 result wraps like torch.sum's
        (torch.float32, torch.bool),  # any nonzero: True
        (torch.bool, torch.bool),
        (torch.uint8, torch.int16),
    ],
    ids=str,
)
@pytest.mark.parametrize("dim", [None, 1])
def test_dtype_argument(device, source, dtype, dim):
    x = random_tensor((37, 129), source, device)
    if not source.is_floating_point and dtype.is_floating_point:
        x = x % 1000  # keep the float sum exact enough to compare
    assert_sum_matches(wr.sum(x, dim, dtype=dtype), x, dim, dtype=dtype)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize(
    "dtype", [torch.float32, torch.float16, torch.bfloat16, torch.float64], ids=str
)
@pytest.mark.parametrize(
    "special", [[float("nan")], [float("inf")], [float("-inf")], [float("inf"), float("-inf")]]
)
def test_nan_and_inf(device, dtype, special):
    x = random_tensor((3, 1000), dtype, device)
    x[1, 17 : 17 + len(special)] = torch.tensor(special, dtype=dtype)
    assert_sum_matches(wr.sum(x), x)
    assert_sum_matches(wr.sum(x, 1), x, 1)


@pytest.mark.parametrize("device", DEVICES)
def test_float16_overflow_is_inf_like_torch(device):
    x = torch.full((4096,), 60000.0, dtype=torch.float16, device=device)
    assert_sum_matches(wr.sum(x), x)


@pytest.mark.parametrize("device", DEVICES)
def test_int64_wraps_like_torch(device):
    x = torch.full((10,), torch.iinfo(torch.int64).max, dtype=torch.int64, device=device)
    assert_sum_matches(wr.sum(x), x)


@pytest.mark.parametrize("device", DEVICES)
def test_result_is_a_new_tensor(device):
    x = torch.ones(5, device=device)
    out = wr.sum(x, 0, keepdim=True)
    out += 1
    assert torch.equal(x, torch.ones(5, device=device))


# --- errors: the exception types torch.sum raises, and clear messages for the rest


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dim", [2, -3, (0, 5)])
def test_dim_out_of_range_is_index_error(device, dim):
    x = torch.ones(3, 4, device=device)
    with pytest.raises(IndexError, match="Dimension out of range"):
        torch.sum(x, dim)  # what torch.sum does
    with pytest.raises(IndexError, match="Dimension out of range"):
        wr.sum(x, dim)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dim", [(0, 0), (1, -1)])
def test_repeated_dim_is_runtime_error(device, dim):
    x = torch.ones(3, 4, device=device)
    with pytest.raises(RuntimeError, match="appears multiple times"):
        torch.sum(x, dim)
    with pytest.raises(RuntimeError, match="appears multiple times"):
        wr.sum(x, dim)


@pytest.mark.parametrize("device", DEVICES)
def test_unknown_kernel_lists_the_valid_names(device):
    x = torch.ones(3, device=device)
    with pytest.raises(ValueError, match="unknown kernel 'fastest'") as info:
        wr.sum(x, kernel="fastest")
    for name in wr.kernels(device):
        assert name in str(info.value)


def test_cuda_kernel_name_on_cpu_tensor_is_an_error():
    # "runs on cuda tensors, not cpu ones; cpu tensors take: auto..." (or, in a build
    # without CUDA, "unknown kernel ... valid names: auto...")
    with pytest.raises(ValueError, match="warp_shuffle.*auto"):
        wr.sum(torch.ones(3), kernel="warp_shuffle")


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("bad", [torch.float8_e4m3fn, torch.float8_e5m2], ids=str)
def test_unsupported_dtype_names_the_supported_ones(device, bad):
    x = torch.ones(3, device=device).to(bad)
    with pytest.raises(NotImplementedError, match="supported: bool, uint8, int8"):
        wr.sum(x)
    with pytest.raises(NotImplementedError, match="supported:"):
        wr.sum(torch.ones(3, device=device), dtype=bad)


def test_kernels_lists_names_in_stage_order():
    assert wr.kernels("cpu") == ["auto", "exact"]
    assert wr.kernels(torch.device("cpu")) == ["auto", "exact"]
    cuda = wr.kernels("cuda")
    if cuda:  # empty when built without nvcc
        assert wr.kernels("cuda", "stage") == cuda[:8]
        assert wr.kernels("cuda", "fast") == ["auto"]
        assert wr.kernels("cuda", "baseline") == ["cub"]
        assert cuda == [
            "interleaved_divergent",
            "interleaved_bank_conflicts",
            "sequential_addressing",
            "first_add_during_load",
            "unroll_last_warp",
            "complete_unroll",
            "multiple_elements",
            "warp_shuffle",
            "auto",
            "exact",
            "cub",
        ]
        assert wr.kernels("cuda", "exact") == ["exact"]
    with pytest.raises(ValueError, match="cpu and cuda"):
        wr.kernels("mps")
    with pytest.raises(ValueError, match="roles: stage, fast, exact, baseline"):
        wr.kernels("cuda", "fastest")


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("n", [1000, 65537, 1_000_003, 1 << 22])
def test_float_error_no_worse_than_torch_sum(device, n):
    """Over 30 random inputs, the default kernel's mean float32 error against a float64
    sum is at most torch.sum's, give or take half an ulp of the result (the rounding of
    the float32 result itself, which neither can avoid). benchmarks/accuracy.py measures
    the means themselves on the GPU."""
    ours = theirs = half_ulp = 0.0
    for seed in range(30):
        x = random_tensor((n,), torch.float32, device, seed)
        ref = x.double().sum().item()
        ours += abs(wr.sum(x).item() - ref)
        theirs += abs(torch.sum(x).item() - ref)
        half_ulp += torch.finfo(torch.float32).eps * abs(ref) / 2
    assert ours <= theirs + half_ulp, (ours / 30, theirs / 30, half_ulp / 30)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize(
    "permutation,dim,keepdim",
    [
        ((0, 2, 3, 1, 4), 2, True),  # attention's (batch, heads, group, tokens, d) view
        ((0, 2, 3, 1, 4), 2, False),
        ((1, 0, 2), 2, False),
        ((2, 1, 0), (0, 2), True),
        ((0, 2, 3, 1, 4), (2, 4), False),
    ],
    ids=str,
)
def test_result_has_torch_sums_strides(device, permutation, dim, keepdim):
    # torch.sum returns a contiguous result whatever the input's layout, and the fake
    # kernel promises the same: compiled graphs check the real strides against it.
    base = random_tensor((2, 32, 2, 4, 16)[: len(permutation)], torch.float32, device)
    x = base.permute(permutation)
    ours, theirs = wr.sum(x, dim, keepdim), torch.sum(x, dim, keepdim)
    assert ours.shape == theirs.shape and ours.stride() == theirs.stride()
    fake = torch.sum(x.to("meta"), dim, keepdim)
    assert ours.stride() == fake.stride()
