"""warpreduce_torch.enable / disable / sums: aten's sums routed to the op without code
changes, and given back exactly; fallbacks, autograd, torch.compile, counts, threads."""

import threading
import warnings

import pytest
import torch

import warpreduce_torch as wr
from warpreduce_torch import override
from warpreduce_torch.testing import random_tensor

from .support import DEVICES, DTYPES


@pytest.fixture(autouse=True)
def off_after():
    """Every test starts and ends with the override off and the counts at zero."""
    wr.disable()
    override.reset_calls()
    yield
    wr.disable()
    override.reset_calls()


def sums_of(x):
    """The sums a model makes, through each overload: full, dim, dtype=, out=."""
    out = torch.empty(x.shape[1], dtype=x.dtype if x.dtype.is_floating_point else torch.int64)
    out = out.to(x.device)
    return [
        torch.sum(x),
        x.sum(1),
        x.sum((0, 1), keepdim=True),
        torch.sum(x, 0, dtype=torch.float64),
        torch.sum(x, 0, out=out).clone(),
    ]


def the_op(x):
    """sums_of(x) computed by the op itself."""
    out_dtype = x.dtype if x.dtype.is_floating_point else torch.int64
    return [
        wr.sum(x),
        wr.sum(x, 1),
        wr.sum(x, (0, 1), keepdim=True),
        wr.sum(x, 0, dtype=torch.float64),
        wr.sum(x, 0, dtype=out_dtype),
    ]


def assert_same_bits(a, b):
    assert len(a) == len(b)
    for s, t in zip(a, b):
        assert s.dtype == t.dtype and s.shape == t.shape
        assert torch.equal(s, t) or (s.isnan() == t.isnan()).all()


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.int32], ids=str)
def test_routed_sums_are_the_ops_and_disable_gives_torch_sum_back(device, dtype):
    x = random_tensor((300, 70), dtype, device, seed=1)
    tables = {name: torch._C._dispatch_dump_table(name) for name in override.OVERLOADS}
    before = sums_of(x)
    with wr.sums():
        assert wr.is_enabled()
        routed = sums_of(x)
    assert not wr.is_enabled()
    assert_same_bits(routed, the_op(x))
    assert override.calls() == {"op": 5, "aten": 0}
    # Given back exactly: the dispatcher's entries, and torch.sum's bits.
    assert {name: torch._C._dispatch_dump_table(name) for name in override.OVERLOADS} == tables
    assert_same_bits(sums_of(x), before)


def test_enable_twice_is_enable_once_and_disable_undoes_both():
    x = torch.randn(100, 10)
    wr.enable()
    wr.enable()
    assert override.current() == ("auto", "op")
    x.sum()
    assert override.calls()["op"] == 1  # one registration, not two stacked
    wr.disable()
    assert not wr.is_enabled()
    x.sum()
    wr.disable()  # disabling again is harmless too
    assert override.calls()["op"] == 1


def test_nested_blocks_restore_what_was_in_force_on_entry():
    assert override.current() is None
    with wr.sums():
        with wr.sums(compiled="inductor"):
            assert override.current() == ("auto", "inductor")  # the innermost wins
            wr.disable()  # lasts until its block ends
            assert not wr.is_enabled()
        assert override.current() == ("auto", "op")
        with pytest.raises(KeyError), wr.sums():
            raise KeyError("an error inside the block")
        assert override.current() == ("auto", "op")
    assert override.current() is None
    wr.enable()
    with wr.sums():
        pass
    assert override.current() == ("auto", "op")  # enable() before the block stays


def test_unknown_kernel_or_compiled_mode_changes_nothing():
    with pytest.raises(ValueError, match="unknown kernel 'nope'; valid names: .*auto"):
        wr.enable("nope")
    with pytest.raises(ValueError, match="compiled must be one of"):
        wr.enable(compiled="triton")
    with pytest.raises(ValueError, match="unknown kernel"), wr.sums("nope"):
        pass
    assert not wr.is_enabled()


def test_every_listed_kernel_name_is_accepted_where_its_device_has_it():
    for name in set(wr.kernels("cpu")) | set(wr.kernels("cuda")):
        with wr.sums(name):
            assert override.current()[0] == name
    x = torch.randn(64, 8)
    cuda_only = [k for k in wr.kernels("cuda") if k not in wr.kernels("cpu")]
    if cuda_only:  # a CPU tensor keeps ATen's sum under a CUDA-only kernel
        with wr.sums(cuda_only[0]):
            assert torch.equal(x.sum(0), torch.ops.aten.sum.dim_IntList(x, [0]))
        assert override.calls()["op"] == 0


# Dtypes torch.sum takes on the CPU; the op takes those of wr.dtypes(), asked at call time.
CANDIDATE_DTYPES = [
    torch.float32,
    torch.float64,
    torch.float16,
    torch.bfloat16,
    torch.int8,
    torch.uint8,
    torch.int64,
    torch.bool,
    torch.complex64,
    torch.complex128,
    torch.uint16,
    torch.uint32,
]


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", CANDIDATE_DTYPES, ids=str)
def test_dtypes_the_op_refuses_fall_back_to_aten(device, dtype):
    if dtype.is_complex:
        x = torch.randn(40, 6, dtype=dtype, device=device)
    else:
        x = random_tensor((40, 6), dtype, device, seed=2)
    try:
        expected = [torch.sum(x), x.sum(0)]
    except (RuntimeError, NotImplementedError):
        pytest.skip(f"torch.sum does not take {dtype} on {device} either")
    with wr.sums():
        got = [torch.sum(x), x.sum(0)]
    routed = dtype in wr.dtypes()
    assert override.calls() == {"op": 2 * routed, "aten": 2 * (not routed)}
    if routed:
        assert_same_bits(got, [wr.sum(x), wr.sum(x, 0)])
    else:  # ATen's own kernel, bit for bit, counted once (no recursion)
        assert_same_bits(got, expected)


def test_a_dtype_argument_the_op_takes_goes_to_the_op():
    x = torch.randn(30, 4)
    with wr.sums():
        got = torch.sum(x, 1, dtype=torch.complex64)
    torch.testing.assert_close(got, torch.sum(x, 1, dtype=torch.complex64))
    assert override.calls() == {"op": 1, "aten": 0}


def test_out_of_another_shape_or_sharing_memory_follows_atens_rules():
    x = torch.randn(20, 5)
    atens = torch.sum(x, 0)
    with wr.sums():
        out = torch.empty(5, dtype=torch.float64)
        torch.sum(x, 0, out=out)  # sums in out's dtype, as ATen does
        assert torch.equal(out, wr.sum(x, 0, dtype=torch.float64))
        assert override.calls() == {"op": 1, "aten": 0}
        wrong = torch.empty(3)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            torch.sum(x, 0, out=wrong)  # ATen resizes it, and warns that it did
        assert wrong.shape == (5,) and torch.equal(wrong, atens)
        assert any("resized" in str(w.message) for w in caught)
        assert override.calls() == {"op": 1, "aten": 1}
        shared = x.clone()
        torch.sum(shared, 0, keepdim=True, out=shared[:1])  # ATen's kernel, whatever it does
        assert override.calls() == {"op": 1, "aten": 2}


def test_cpu_mean_goes_through_sum_out():
    # ATen's CPU mean is sum.IntList_out, then a division: routed too. Against the float64
    # mean, within a float32 sum's error (a mean near 0 of 30 values cancels: unseeded, a
    # relative tolerance alone once failed on 1.2688e-04 against 1.2686e-04).
    x = torch.randn(50, 30, generator=torch.Generator().manual_seed(3))
    with wr.sums():
        m = x.mean(1)
    assert override.calls()["op"] >= 1
    bound = 30 * torch.finfo(torch.float32).eps * x.abs().mean(1).double()
    assert bool(((m.double() - x.double().mean(1)).abs() <= bound).all())


@pytest.mark.parametrize("device", DEVICES)
def test_autograd_is_atens_and_backward_sums_are_routed(device):
    torch.manual_seed(0)
    x = torch.randn(16, 8, dtype=torch.float64, device=device, requires_grad=True)
    b = torch.randn(8, dtype=torch.float64, device=device, requires_grad=True)

    def f(x, b):
        return ((x + b) ** 2).sum(1).sum()

    expected = torch.autograd.grad(f(x, b), (x, b))
    with wr.sums():
        loss = f(x, b)
        assert loss.grad_fn.name() == "SumBackward0"  # aten's autograd, above the kernel
        forward_calls = override.calls()["op"]
        grads = torch.autograd.grad(loss, (x, b))
        backward_calls = override.calls()["op"] - forward_calls
        assert torch.autograd.gradcheck(f, (x, b))
    assert forward_calls == 2
    assert backward_calls >= 1  # b's gradient: the broadcast summed back (sum_to_size)
    for g, e in zip(grads, expected):
        assert torch.allclose(g, e, rtol=1e-12, atol=1e-12)


def test_other_threads_see_the_override():
    # The registration is process-wide: a thread that never entered the block is routed.
    x = torch.randn(100, 10)
    seen = []
    worker = threading.Thread(target=lambda: seen.append(x.sum(0)))
    with wr.sums():
        worker.start()
        worker.join()
    assert override.calls() == {"op": 1, "aten": 0}
    assert torch.equal(seen[0], wr.sum(x, 0))


def test_a_sum_inside_a_routed_call_goes_to_aten(monkeypatch):
    # Were the op to call torch.sum itself, the inner call must not come back to it.
    inner = []
    real = override._C.sum

    def op_calling_torch_sum(x, *args, **kwargs):
        inner.append(torch.sum(x))
        return real(x, *args, **kwargs)

    monkeypatch.setattr(override._C, "sum", op_calling_torch_sum)
    x = torch.randn(10)
    with wr.sums():
        x.sum()
    assert len(inner) == 1 and override.calls() == {"op": 1, "aten": 0}


# --- torch.compile (on the CPU: Inductor's C++ backend)


def compiled_code(fn, *args):
    from torch._inductor.utils import run_and_get_code

    result, code = run_and_get_code(torch.compile(fn), *args)
    return result, "\n".join(code)


def model(x, b):
    return torch.relu(x @ x.t()).sum(1) + x.sum() + b


def test_compiled_graphs_call_the_op_forward_and_backward():
    torch.compiler.reset()
    x = torch.randn(24, 16, requires_grad=True)
    b = torch.randn(24, requires_grad=True)
    with wr.sums():  # compiled="op", the default
        eager = model(x, b)
        out, code = compiled_code(model, x, b)
        out.sum().backward()
    assert "torch.ops.warpreduce._sum.default" in code
    assert torch.equal(out, eager)  # the same op, the same bits
    assert x.grad is not None and b.grad is not None
    # Once disabled, the same function recompiles to Inductor's own sums.
    out, code = compiled_code(model, x.detach(), b.detach())
    assert "warpreduce" not in code


def test_compiled_inductor_leaves_sums_to_inductor():
    torch.compiler.reset()
    x = torch.randn(24, 16)
    with wr.sums(compiled="inductor"):
        _, code = compiled_code(model, x, torch.zeros(24))
    assert "warpreduce" not in code


def test_bitwise_kernels_refuse_inductors_sums(monkeypatch):
    monkeypatch.setattr(override, "BITWISE_KERNELS", frozenset({"auto"}))
    with pytest.raises(ValueError, match='compiled="op"'):
        wr.enable("auto", compiled="inductor")
    assert not wr.is_enabled()


exact = pytest.mark.skipif(
    "exact" not in wr.kernels("cpu"), reason='no "exact" kernel in this build yet'
)


@exact
def test_exact_routes_eager_and_compiled_sums_to_exact():
    with pytest.raises(ValueError, match='compiled="op"'):
        wr.enable("exact", compiled="inductor")
    torch.compiler.reset()
    x = torch.randn(24, 16)
    with wr.sums("exact"):
        assert torch.equal(x.sum(1), wr.sum(x, 1, kernel="exact"))
        _, code = compiled_code(model, x, torch.zeros(24))
    assert "torch.ops.warpreduce._sum.default" in code and "'exact'" in code


def test_dtypes_list_is_the_routed_list():
    # What the README promises: the routed dtypes are the op's own list.
    assert set(DTYPES) == set(wr.dtypes()) - {torch.complex32}  # complex32: CUDA only
