"""torch.func's transforms over the op, against the same transforms over torch.sum:
grad, vjp, jacrev, jvp, jacfwd, hessian, and torch.vmap through its batching rule (the
slow per-sample fallback is switched off here, so that taking it fails the test)."""

import pytest
import torch
from torch.func import grad, hessian, jacfwd, jacrev, jvp, vjp, vmap

import warpreduce_torch as wr
from warpreduce_torch.testing import assert_sum_matches, random_tensor

from .support import DEVICES, DTYPES


@pytest.fixture(autouse=True)
def no_vmap_fallback():
    """vmap over an op without a batching rule runs it once per sample, and warns; here
    it raises instead."""
    enabled = torch._C._functorch._is_vmap_fallback_enabled()
    torch._C._functorch._set_vmap_fallback_enabled(False)
    yield
    torch._C._functorch._set_vmap_fallback_enabled(enabled)


DIMS = [(None, False), (0, False), (1, True), (-1, False), ((0, 2), True), ((), False)]


def sums(dim, keepdim, dtype=None):
    """The op and torch.sum as functions of one tensor."""

    def ours(t):
        return wr.sum(t, dim, keepdim, dtype=dtype)

    def theirs(t):
        return torch.sum(t, dim, keepdim, dtype=dtype)

    return ours, theirs


# --- reverse and forward mode


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dim,keepdim", DIMS, ids=str)
def test_grad(device, dim, keepdim):
    x = random_tensor((3, 4, 5), torch.float64, device)
    ours, theirs = sums(dim, keepdim)
    got = grad(lambda t: (ours(t) ** 2).sum())(x)
    torch.testing.assert_close(got, grad(lambda t: (theirs(t) ** 2).sum())(x))


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dim,keepdim", DIMS, ids=str)
def test_vjp(device, dim, keepdim):
    x = random_tensor((3, 4, 5), torch.float32, device)
    ours, theirs = sums(dim, keepdim, dtype=torch.float64)
    out, pullback = vjp(ours, x)
    expected_out, expected_pullback = vjp(theirs, x)
    assert_sum_matches(out, x, dim, keepdim, dtype=torch.float64)
    cotangent = random_tensor(expected_out.shape, torch.float64, device, seed=1)
    (got,) = pullback(cotangent)
    (expected,) = expected_pullback(cotangent)
    assert got.dtype == x.dtype  # the gradient comes back in the input's dtype
    torch.testing.assert_close(got, expected)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dim,keepdim", DIMS, ids=str)
@pytest.mark.parametrize("jacobian", [jacrev, jacfwd])
def test_jacobians(device, dim, keepdim, jacobian):
    x = random_tensor((2, 3, 4), torch.float64, device)
    ours, theirs = sums(dim, keepdim)
    torch.testing.assert_close(jacobian(ours)(x), jacobian(theirs)(x), rtol=0, atol=0)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dim,keepdim", DIMS, ids=str)
def test_jvp(device, dim, keepdim):
    x = random_tensor((3, 4, 5), torch.float32, device)
    tangent = random_tensor((3, 4, 5), torch.float32, device, seed=1)
    ours, theirs = sums(dim, keepdim)
    out, out_tangent = jvp(ours, (x,), (tangent,))
    expected_out, expected_tangent = jvp(theirs, (x,), (tangent,))
    torch.testing.assert_close(out, expected_out)
    torch.testing.assert_close(out_tangent, expected_tangent)


@pytest.mark.parametrize("device", DEVICES)
def test_forward_mode_autograd(device):
    import torch.autograd.forward_ad as fwAD

    x = random_tensor((4, 6), torch.float32, device)
    tangent = random_tensor((4, 6), torch.float32, device, seed=1)
    with fwAD.dual_level():
        out = wr.sum(fwAD.make_dual(x, tangent), 1, dtype=torch.float64)
        out_tangent = fwAD.unpack_dual(out).tangent
    torch.testing.assert_close(out_tangent, tangent.sum(1, dtype=torch.float64))


@pytest.mark.parametrize("device", DEVICES)
def test_higher_order(device):
    x = random_tensor((3, 4), torch.float64, device)
    cube = lambda t: wr.sum(t**3)  # noqa: E731
    torch.testing.assert_close(hessian(cube)(x), hessian(lambda t: torch.sum(t**3))(x))
    second = grad(lambda t: grad(cube)(t).sum())(x)
    torch.testing.assert_close(second, 6 * x)


# --- vmap


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("dim,keepdim", DIMS, ids=str)
@pytest.mark.parametrize("in_dim", [0, 1, -1])
def test_vmap(device, dtype, dim, keepdim, in_dim):
    x = random_tensor((3, 4, 5, 2), dtype, device)
    got = vmap(lambda t: wr.sum(t, dim, keepdim), in_dims=in_dim)(x)
    assert len(got) == x.shape[in_dim]
    for i, sample in enumerate(x.unbind(in_dim)):
        assert_sum_matches(got[i], sample, dim, keepdim)


@pytest.mark.parametrize("device", DEVICES)
def test_vmap_through_every_entry_point(device):
    x = random_tensor((4, 6), torch.float32, device)
    expected = x.sum(1)
    dtype_given = vmap(lambda t: wr.sum(t, dtype=torch.float64))(x)
    torch.testing.assert_close(dtype_given, x.double().sum(1))
    torch.testing.assert_close(vmap(torch.ops.warpreduce.sum)(x), expected)
    torch.testing.assert_close(vmap(lambda t: torch.ops.warpreduce.sum(t, [0]))(x), expected)
    torch.testing.assert_close(vmap(vmap(wr.sum))(x), x)  # nested: each sample a 0-d tensor


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dim", [None, 0, -1, (), (0,)], ids=str)
@pytest.mark.parametrize("keepdim", [False, True])
def test_vmap_over_0d_samples(device, dim, keepdim):
    x = random_tensor((5,), torch.int32, device)
    got = vmap(lambda t: wr.sum(t, dim, keepdim))(x)
    assert torch.equal(got, vmap(lambda t: torch.sum(t, dim, keepdim))(x))
    assert got.dtype == torch.int64


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize(
    "dim,message",
    [
        (2, r"Dimension out of range \(expected to be in range of \[-2, 1\], but got 2\)"),
        (-3, r"Dimension out of range \(expected to be in range of \[-2, 1\], but got -3\)"),
        ((0, 0), "dim 0 appears multiple times in the list of dims"),
        ((1, -1), "dim 1 appears multiple times in the list of dims"),
    ],
    ids=str,
)
def test_vmap_dim_errors_are_torch_sums(device, dim, message):
    # The error torch.sum raises for one sample, which has shape (4, 5). (vmap over
    # torch.sum itself names the dim in the batched tensor for a repeated dim: "dim 1"
    # for (0, 0).)
    x = random_tensor((3, 4, 5), torch.float32, device)
    with pytest.raises((IndexError, RuntimeError)) as expected:
        torch.sum(x[0], dim)
    with pytest.raises(expected.type, match=message):
        vmap(lambda t: wr.sum(t, dim))(x)


@pytest.mark.parametrize("device", DEVICES)
def test_vmap_of_grad_and_grad_of_vmap(device):
    x = random_tensor((4, 6), torch.float64, device)
    per_sample = vmap(grad(lambda t: wr.sum(t.sin())))(x)
    torch.testing.assert_close(per_sample, x.cos())
    through_vmap = grad(lambda t: vmap(lambda s: wr.sum(s * s))(t).sum())(x)
    torch.testing.assert_close(through_vmap, 2 * x)
