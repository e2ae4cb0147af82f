"""Where warpreduce_torch.sum and torch.sum once differed: high-rank views, the result's
layout, bool bytes, complex dtypes, errors for bad dims, layouts the kernels do not read,
and dims that torch.compile makes dynamic. Each compares with torch.sum itself."""

import pytest
import torch
from torch._dynamo.utils import counters

import warpreduce_torch as wr
from warpreduce_torch.testing import assert_sum_matches, random_tensor

from .support import DEVICES


def kernels_for(device):
    return wr.kernels(device)


@pytest.mark.parametrize("device", DEVICES)
def test_high_rank_view_that_is_copied(device):
    # Six sliced dims do not fit the geometry's outer dims: the input is copied, and the
    # outputs must land where torch.sum puts them.
    x = torch.randn((4,) * 6, device=device)[::2, ::2, ::2, ::2, ::2, ::2].transpose(0, 1)
    assert wr._C.plan(x, [5])["copied"]
    for dim in [5, 0, (1, 3), (0, 2, 4)]:
        assert_sum_matches(wr.sum(x, dim), x, dim)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("keepdim", [False, True])
def test_result_has_torch_sums_strides(device, keepdim):
    x = torch.randn(2, 3, 4, device=device).transpose(0, 2)
    for dim in [-1, 0, 1, (0, 1)]:
        expected = torch.sum(x, dim, keepdim)
        result = wr.sum(x, dim, keepdim)
        assert result.stride() == expected.stride() and result.is_contiguous()
        result.view(-1)  # what user code does with a sum


@pytest.mark.parametrize("device", DEVICES)
def test_bool_counts_true_values_whatever_the_bytes(device):
    x = torch.tensor([2, 1, 255, 1, 0, 128], dtype=torch.uint8, device=device).view(torch.bool)
    assert torch.sum(x).item() == 5
    for kernel in kernels_for(device):
        assert wr.sum(x, kernel=kernel).item() == 5, kernel
    rows = torch.randint(0, 256, (37, 1031), dtype=torch.uint8, device=device).view(torch.bool)
    for dim in [None, 0, 1]:
        for kernel in kernels_for(device):
            assert torch.equal(wr.sum(rows, dim, kernel=kernel), torch.sum(rows, dim)), kernel


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", [torch.complex64, torch.complex128], ids=str)
@pytest.mark.parametrize("dim", [None, 0, -1, (0, 2), ()])
@pytest.mark.parametrize("keepdim", [False, True])
def test_complex_is_two_real_sums(device, dtype, dim, keepdim):
    x = random_tensor((5, 33, 7), dtype, device)
    assert_sum_matches(wr.sum(x, dim, keepdim), x, dim, keepdim)
    assert_sum_matches(wr.sum(x.transpose(0, 2), dim, keepdim), x.transpose(0, 2), dim, keepdim)
    assert_sum_matches(wr.sum(x.conj(), dim, keepdim), x.conj(), dim, keepdim)


@pytest.mark.parametrize("device", DEVICES)
def test_complex_dtype_argument_and_0d(device):
    x = random_tensor((4, 5), torch.float32, device)
    assert_sum_matches(wr.sum(x, 1, dtype=torch.complex64), x, 1, dtype=torch.complex64)
    z = random_tensor((), torch.complex128, device)
    assert_sum_matches(wr.sum(z), z)
    assert_sum_matches(wr.sum(z, 0, True), z, 0, True)
    c = random_tensor((4, 3), torch.complex64, device)
    assert_sum_matches(wr.sum(c, 0, dtype=torch.float32), c, 0, dtype=torch.float32)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize(
    "dtype", [torch.uint16, torch.uint32, torch.uint64, torch.complex32, torch.float8_e5m2], ids=str
)
@pytest.mark.parametrize("out_dtype", [None, torch.int64, torch.uint16, torch.uint32], ids=str)
def test_what_torch_sum_takes_and_refuses(device, dtype, out_dtype):
    # torch.sum sums uint16/32/64 inputs (into int64), refuses them as dtype=, sums
    # complex32 on CUDA only, refuses float8: the same here, on every device.
    # Small integers: every dtype holds them, and every sum of them is exact.
    x = torch.randint(-100, 100, (5, 67), device=device).to(dtype)
    for dim in [None, 1]:
        try:
            expected = torch.sum(x, dim, dtype=out_dtype)
        except NotImplementedError:
            with pytest.raises(NotImplementedError):
                wr.sum(x, dim, dtype=out_dtype)
        else:
            assert torch.equal(wr.sum(x, dim, dtype=out_dtype), expected)


def error_type(fn):
    try:
        fn()
    except Exception as error:  # noqa: BLE001 (the type is what is compared)
        return type(error)
    return None


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize(
    "shape,dim,keepdim",
    [
        ((3, 4), (0, 0, 5), False),  # repeated and out of range: IndexError first
        ((3, 4), (5, 0, 0), False),
        ((3, 4), (0, 1, 0), True),
        ((1,) * 65, None, True),  # torch.sum(x, None, True) refuses more than 64 dims
        ((1,) * 65, 0, False),
        ((1,) * 65, (), True),  # ... and sums them for dim=()
        ((), 1, False),
        ((), (0, 0), False),
    ],
)
def test_errors_are_torch_sums(device, shape, dim, keepdim):
    x = torch.ones(shape, device=device)
    expected = error_type(lambda: torch.sum(x, dim, keepdim))
    assert error_type(lambda: wr.sum(x, dim, keepdim)) is expected
    assert error_type(lambda: torch.ops.warpreduce.sum(x, dim, keepdim)) is expected


@pytest.mark.parametrize("device", DEVICES)
def test_more_than_64_dims_full_sum(device):
    x = torch.randn((1,) * 40 + (3,) + (1,) * 30, device=device)[..., :, :]
    assert_sum_matches(wr.sum(x), x)
    assert wr.sum(x, ()).shape == torch.sum(x, ()).shape


@pytest.mark.parametrize("device", DEVICES)
def test_a_0d_index_tensor_is_a_dim_like_torch_sum(device):
    x = torch.randn(3, 4, device=device)
    assert_sum_matches(wr.sum(x, torch.tensor(1)), x, 1)
    for bad in [torch.tensor([0, 1]), torch.tensor(1.0)]:
        assert error_type(lambda bad=bad: torch.sum(x, bad)) is TypeError
        with pytest.raises(TypeError, match="dim"):
            wr.sum(x, bad)


def one_line(error):
    return "\n" not in str(error.value).strip()


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("layout", ["coo", "csr"])
def test_sparse_is_refused_in_one_line(device, layout):
    x = torch.randn(4, 5, device=device)
    x = x.to_sparse() if layout == "coo" else x.to_sparse_csr()
    with pytest.raises(NotImplementedError, match=r"strided tensors, not sparse.*to_dense") as e:
        wr.sum(x)
    assert one_line(e)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("layout", [torch.jagged, torch.strided])
def test_nested_is_refused_in_one_line(device, layout):
    parts = [torch.randn(2, 3, device=device), torch.randn(4, 3, device=device)]
    x = torch.nested.nested_tensor(parts, layout=layout)
    with pytest.raises(NotImplementedError, match="not nested ones") as e:
        wr.sum(x, -1)
    assert one_line(e)


def test_meta_tensor_kernel_names():
    x = torch.empty(3, 4, device="meta")
    for name in wr.kernels("cpu") + wr.kernels("cuda"):
        assert wr.sum(x, 0, kernel=name).shape == (4,)
    with pytest.raises(ValueError, match="unknown kernel 'fast'; cpu tensors take: auto") as e:
        wr.sum(x, kernel="fast")
    assert "cuda tensors take:" in str(e.value)


def graphs_compiled(fn, calls):
    torch._dynamo.reset()
    counters.clear()
    for args in calls:
        fn(*args)
    return counters["stats"]["unique_graphs"]


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("options", [{}, {"dynamic": True}, {"fullgraph": True}], ids=str)
def test_compile_with_a_dim_that_changes(device, options):
    x = torch.randn(3, 4, 5, device=device)
    calls = [(x, d) for d in (0, 1, 2, -1, 1)]
    ours = torch.compile(lambda t, d: wr.sum(t, d), **options)
    for t, d in calls:
        assert_sum_matches(ours(t, d), t, d)
    theirs = torch.compile(lambda t, d: torch.sum(t, d), **options)
    assert graphs_compiled(ours, calls) <= graphs_compiled(theirs, calls)


@pytest.mark.parametrize("device", DEVICES)
def test_compile_with_a_dim_from_the_shape(device):
    fn = torch.compile(
        lambda t: wr.sum(t, t.dim() - 1) + wr.sum(t, [t.dim() - 2]).sum(), dynamic=True
    )
    for shape in [(3, 4), (2, 3, 5), (7, 2, 2, 3)]:
        x = torch.randn(shape, device=device)
        expected = torch.sum(x, x.dim() - 1) + torch.sum(x, x.dim() - 2).sum()
        torch.testing.assert_close(fn(x), expected)
