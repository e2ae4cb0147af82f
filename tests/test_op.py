"""The op as PyTorch sees it: registration (opcheck), autograd, fake tensors,
torch.compile, and use inside an nn.Module."""

import pytest
import torch

import warpreduce_torch as wr
from warpreduce_torch.testing import assert_sum_matches, random_tensor

from .support import DEVICES, HAS_CUDA

OPCHECK_CASES = [
    ((17, 33), {}),
    ((17, 33), {"dim": [1]}),
    ((17, 33), {"dim": [0], "keepdim": True}),
    ((4, 5, 6), {"dim": [0, 2], "dtype": torch.float64}),
    ((1000,), {}),
]


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("shape,kwargs", OPCHECK_CASES, ids=str)
@pytest.mark.parametrize("requires_grad", [False, True])
def test_opcheck(device, shape, kwargs, requires_grad):
    x = random_tensor(shape, torch.float32, device).requires_grad_(requires_grad)
    torch.library.opcheck(torch.ops.warpreduce.sum.default, (x,), kwargs)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize(
    "dim,keepdim", [(None, False), (0, False), (1, True), ((0, 2), False), ((), True)], ids=str
)
def test_gradcheck(device, dim, keepdim):
    x = random_tensor((3, 4, 5), torch.float64, device).requires_grad_()
    fn = lambda t: wr.sum(t, dim, keepdim)  # noqa: E731
    assert torch.autograd.gradcheck(fn, (x,))
    assert torch.autograd.gradgradcheck(fn, (x,))


@pytest.mark.parametrize("device", DEVICES)
def test_gradient_is_in_the_input_dtype(device):
    x = torch.ones(3, 4, device=device, dtype=torch.float32, requires_grad=True)
    wr.sum(x, 1, dtype=torch.float64).sum().backward()
    assert x.grad.dtype == torch.float32
    assert torch.equal(x.grad, torch.ones_like(x))


@pytest.mark.parametrize("device", DEVICES)
def test_no_graph_without_grad(device):
    x = torch.ones(3, device=device, requires_grad=True)
    with torch.no_grad():
        assert wr.sum(x).grad_fn is None
    assert wr.sum(x).grad_fn is not None


@pytest.mark.parametrize("device", DEVICES)
def test_meta_tensors_give_shape_and_dtype(device):
    x = torch.empty(4, 5, 6, device="meta", dtype=torch.int32)
    out = wr.sum(x, (0, 2), keepdim=True)
    assert out.device.type == "meta" and out.shape == (1, 5, 1) and out.dtype == torch.int64


def test_fake_kernel_checks_like_the_real_one():
    from torch._subclasses.fake_tensor import FakeTensorMode

    with FakeTensorMode():
        x = torch.empty(4, 5)
        assert wr.sum(x, 1).shape == (4,)
        with pytest.raises(ValueError, match="unknown kernel"):
            wr.sum(x, kernel="nope")
        with pytest.raises(IndexError):
            wr.sum(x, 2)
        with pytest.raises(NotImplementedError):
            wr.sum(x.to(torch.float8_e4m3fn))


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dynamic", [False, True])
def test_torch_compile_fullgraph(device, dynamic):
    def f(x):
        return wr.sum(x * 2, dim=1), wr.sum(x, dim=(0, 1), keepdim=True, dtype=torch.float64)

    compiled = torch.compile(f, fullgraph=True, dynamic=dynamic)
    for n in (33, 65):
        x = random_tensor((7, n), torch.float32, device)
        rows, total = compiled(x)
        assert_sum_matches(rows, x * 2, 1)
        assert_sum_matches(total, x, (0, 1), keepdim=True, dtype=torch.float64)
        torch.testing.assert_close((rows, total), f(x), rtol=0, atol=0)


@pytest.mark.parametrize("device", DEVICES)
def test_torch_compile_backward(device):
    x = random_tensor((5, 9), torch.float32, device).requires_grad_()
    compiled = torch.compile(lambda t: wr.sum(t * t, 0).sum(), fullgraph=True)
    compiled(x).backward()
    torch.testing.assert_close(x.grad, 2 * x.detach())


# --- the two ways in: warpreduce_torch.sum binds the common call in C++ (csrc/python.cpp)
# and takes torch.ops where Python must see the call.

DIM_FORMS = [None, 0, -1, (0,), [1], (0, 1), (), torch.Size([1])]


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dim", DIM_FORMS, ids=str)
@pytest.mark.parametrize("keepdim", [False, True])
def test_binding_and_torch_ops_agree(device, dim, keepdim):
    x = random_tensor((5, 7), torch.float32, device)
    got = wr.sum(x, dim, keepdim)
    dims = None if dim is None else [dim] if isinstance(dim, int) else list(dim)
    expected = torch.ops.warpreduce.sum(x, dims, keepdim)
    assert_sum_matches(got, x, dim, keepdim)
    assert torch.equal(got, expected) and got.shape == expected.shape


@pytest.mark.parametrize("args", [([1.0, 2.0],), (torch.ones(3), 0.5)], ids=["list", "float_dim"])
def test_binding_rejects_what_torch_sum_rejects(args):
    with pytest.raises(TypeError):
        torch.sum(*args)
    with pytest.raises(TypeError):
        wr.sum(*args)


class LoggingTensor(torch.Tensor):
    """A subclass that overrides __torch_function__ and records what it sees."""

    seen = []

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        cls.seen.append(func)
        return super().__torch_function__(func, types, args, kwargs or {})


def test_torch_function_overrides_see_the_op():
    x = torch.ones(4, 3).as_subclass(LoggingTensor)
    LoggingTensor.seen.clear()
    out = wr.sum(x, 1)
    assert torch.ops.warpreduce.sum.default in LoggingTensor.seen
    assert torch.equal(out.as_subclass(torch.Tensor), torch.full((4,), 3.0))

    class Mode(torch.overrides.TorchFunctionMode):
        seen = []

        def __torch_function__(self, func, types, args=(), kwargs=None):
            self.seen.append(func)
            return func(*args, **(kwargs or {}))

    with Mode() as mode:
        wr.sum(torch.ones(3))
    assert torch.ops.warpreduce.sum.default in mode.seen


@pytest.mark.parametrize("device", DEVICES)
def test_dispatch_modes_see_the_kernels_op(device):
    from torch.utils._python_dispatch import TorchDispatchMode

    class Mode(TorchDispatchMode):
        seen = []

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            self.seen.append(func)
            return func(*args, **(kwargs or {}))

    x = random_tensor((6,), torch.float32, device)
    with Mode() as mode:
        out = wr.sum(x)
    assert torch.ops.warpreduce._sum.default in mode.seen
    assert_sum_matches(out, x)


class RowMean(torch.nn.Module):
    """The README's example: the op inside a model."""

    def forward(self, x):
        return wr.sum(x, dim=-1, keepdim=True) / x.shape[-1]


@pytest.mark.parametrize("device", DEVICES)
def test_in_a_module(device):
    model = torch.nn.Sequential(torch.nn.Linear(8, 16), RowMean()).to(device)
    x = random_tensor((4, 8), torch.float32, device)
    out = model(x)
    out.sum().backward()
    h = model[0](x)
    torch.testing.assert_close(out, h.mean(-1, keepdim=True))
    assert model[0].weight.grad is not None


def test_cuda_kernels_are_listed_exactly_when_the_cuda_part_was_built():
    # A CUDA build lists its kernels even with no GPU (the stages in order, auto, exact,
    # cub); a CPU-only build lists none. _build_info records which build this is.
    from warpreduce_torch import _build_info

    cuda = wr.kernels("cuda")
    if _build_info.CUDA_VERSION is None:
        assert cuda == [] and not HAS_CUDA
    else:
        assert len(wr.kernels("cuda", "stage")) == 8
        assert cuda == wr.kernels("cuda", "stage") + ["auto", "exact", "cub"]
