"""Wrong arguments raise what torch.sum raises for them, with a short message that names
the argument and never prints the tensor; integer dtype= under autograd as torch.sum."""

import pytest
import torch

import warpreduce_torch as wr
from warpreduce_torch.testing import random_tensor

from .support import DEVICES

# Arguments after the input, each wrong in one way that torch.sum rejects too.
BAD_ARGUMENTS = {
    "input not a tensor": ((), {}),  # with [1.0, 2.0] as the input, below
    "dim a dict": (({0: 1},), {}),
    "dim a float": ((0.5,), {}),
    "dim a bool": ((True,), {}),
    "dims with a string": (((0, "a"),), {}),
    "keepdim a string": ((0,), {"keepdim": "yes"}),
    "dtype a string": ((), {"dtype": "float32"}),
    "dtype an int": ((), {"dtype": 6}),
    "dtype positional": ((0, False, torch.float64), {}),
    "unknown keyword": ((), {"foo": 1}),
}


@pytest.mark.parametrize("case", BAD_ARGUMENTS)
def test_bad_arguments_raise_torch_sums_type_error(case):
    x = torch.arange(12.0).reshape(3, 4)  # a message that printed it would show "tensor("
    args, kwargs = BAD_ARGUMENTS[case]
    input = [1.0, 2.0] if case == "input not a tensor" else x
    with pytest.raises(TypeError):
        torch.sum(input, *args, **kwargs)
    with pytest.raises(TypeError) as info:
        wr.sum(input, *args, **kwargs)
    message = str(info.value)
    assert "tensor(" not in message and len(message) < 200, message
    assert message.startswith("sum()"), message


def test_dim_name_is_a_type_error():
    # Named dims are not supported (torch.sum took them until named tensors went away).
    with pytest.raises(TypeError, match="'dim' .* must be tuple of ints, not str"):
        wr.sum(torch.ones(3), "a")


def test_kernel_not_a_string_is_a_type_error():
    with pytest.raises(TypeError, match="'kernel' must be str, not int"):
        wr.sum(torch.ones(3), kernel=3)


def test_missing_input_is_a_type_error():
    with pytest.raises(TypeError):
        wr.sum()


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", [torch.int64, torch.int32, torch.bool], ids=str)
@pytest.mark.parametrize("dim", [None, 1], ids=str)
def test_integer_dtype_of_an_input_that_requires_grad(device, dtype, dim):
    # torch.sum computes it, then refuses to record an integer result in the graph.
    x = random_tensor((3, 4), torch.float32, device).requires_grad_()
    with pytest.raises(RuntimeError) as expected:
        torch.sum(x, dim, dtype=dtype)
    with pytest.raises(RuntimeError) as got:
        wr.sum(x, dim, dtype=dtype)
    assert str(got.value) == str(expected.value)  # "Autograd not support dtype: Long"
    with torch.no_grad():  # no graph to record: both return the integer sum
        out = wr.sum(x, dim, dtype=dtype)
        assert torch.equal(out, torch.sum(x, dim, dtype=dtype)) and not out.requires_grad
