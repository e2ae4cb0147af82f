"""What a build supports: the torch, CUDA and GPU architectures it records, and the
clear error on a GPU that none of its architectures runs on."""

import pytest
import torch

import warpreduce_torch as wr

from .support import requires_cuda


def test_build_info_names_the_torch_and_the_architectures():
    info = wr.build_info()
    assert info["torch"] == torch.__version__
    if info["cuda"] is None:
        assert info["cuda_archs"] is None and wr.kernels("cuda") == []
    elif info["cuda_archs"] is not None:  # None: built before archs were recorded
        assert all(a.startswith(("sm_", "compute_")) for a in info["cuda_archs"])


@pytest.mark.parametrize(
    "archs,capability,runs",
    [
        (["sm_80", "sm_90"], (8, 0), True),
        (["sm_80", "sm_90"], (8, 6), True),  # a binary runs on a later minor
        (["sm_86"], (8, 0), False),  # not on an earlier one
        (["sm_90"], (10, 0), False),  # nor on another major
        (["sm_90", "compute_90"], (10, 0), True),  # PTX runs on anything later
        (["sm_120", "compute_120"], (10, 0), False),
        (["sm_90a"], (9, 0), True),
        (["sm_90a"], (9, 1), False),  # arch-specific: exact only
        (["sm_80", "sm_86", "sm_89", "sm_90", "sm_100", "sm_120", "compute_120"], (7, 5), False),
        (["sm_80", "sm_86", "sm_89", "sm_90", "sm_100", "sm_120", "compute_120"], (10, 3), True),
        (["sm_80", "sm_86", "sm_89", "sm_90", "sm_100", "sm_120", "compute_120"], (12, 1), True),
    ],
)
def test_runs_on(archs, capability, runs):
    from warpreduce_torch._build_check import runs_on

    assert runs_on(archs, capability) == runs


def test_unsupported_gpu_gets_a_clear_error_once_checked(monkeypatch):
    from warpreduce_torch import _build_check, _build_info

    monkeypatch.setattr(_build_info, "CUDA_VERSION", "13.0", raising=False)
    monkeypatch.setattr(_build_info, "CUDA_ARCHS", ("sm_80", "sm_90", "compute_90"), raising=False)
    monkeypatch.setattr(_build_check, "_supported_devices", set())
    capability = {0: (7, 5), 1: (9, 0)}
    monkeypatch.setattr(torch.cuda, "get_device_capability", lambda i: capability[i])
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda i: "NVIDIA T4")
    with pytest.raises(RuntimeError) as error:
        wr.check_device_supported(0)
    message = str(error.value)
    assert "sm_80 sm_90 compute_90" in message and "cuda:0 (NVIDIA T4" in message
    assert "compute capability 7.5" in message and "TORCH_CUDA_ARCH_LIST=7.5" in message
    wr.check_device_supported(1)
    capability[1] = (7, 5)  # checked once: later calls do not ask again
    wr.check_device_supported(1)


@requires_cuda
def test_this_gpu_is_supported_by_this_build():
    wr.check_device_supported(torch.cuda.current_device())
