"""What the compiled extension supports: the torch it was built against, and the GPUs.

A build of warpreduce_torch._C links against one torch's C++ libraries and loads only
into that exact build: under another it fails with a bare loader error (an undefined
symbol, or a missing libc10_cuda.so) that names no version. setup.py writes the torch it
built against into _build_info.py, which this compares before the extension is loaded.

_build_info.py also lists the GPU architectures the CUDA part was compiled for, in
nvcc's names: sm_XY, a binary that runs on compute capability X.Y and on X.Z for Z > Y
(same major); compute_XY, PTX that the driver compiles for any capability X.Y or newer.
On a GPU that none of them serves, a CUDA launch would fail with "no kernel image is
available for execution on the device"; check_device_supported says which GPU and which
build instead.
"""

REBUILD = (
    "Rebuild it against the running torch (`make install`, or "
    "`pip install --no-build-isolation -e .` in the source tree), or install a wheel "
    "built against it (README: Troubleshooting)."
)


def check_build(running_torch):
    """Raises ImportError, naming both versions, unless the extension was built against
    `running_torch` (a torch.__version__, local label included: a +cpu torch does not
    load an extension built against +cu130)."""
    try:
        from ._build_info import TORCH_VERSION
    except ImportError:
        raise ImportError(
            "warpreduce_torch's compiled extension has not been built (no "
            f"warpreduce_torch/_build_info.py). {REBUILD}"
        ) from None
    if TORCH_VERSION != running_torch:
        raise ImportError(
            f"warpreduce_torch was built against torch {TORCH_VERSION}, but torch "
            f"{running_torch} is installed; its compiled extension loads only into the "
            f"torch it was built against. {REBUILD}"
        )


def build_info():
    """{"torch": the torch version built against, "cuda": its CUDA version (None for a
    CPU-only build), "cuda_archs": the architectures compiled for, as nvcc names them
    ("sm_90" a binary, "compute_120" PTX; None for a CPU-only build)}."""
    from . import _build_info

    archs = getattr(_build_info, "CUDA_ARCHS", None)  # absent in builds before it was recorded
    return {
        "torch": _build_info.TORCH_VERSION,
        "cuda": _build_info.CUDA_VERSION,
        "cuda_archs": list(archs) if archs is not None else None,
    }


def runs_on(archs, capability):
    """Whether code compiled for `archs` (nvcc's names) runs on a GPU of compute
    `capability` (major, minor): a binary of the same major and a minor no higher, or
    PTX of a capability no higher. Arch-specific variants (sm_90a, sm_100f...) run only
    where their own rules say, so they count only on an exact match."""
    major, minor = capability
    for arch in archs:
        kind, _, number = arch.partition("_")
        digits = number.rstrip("abf")
        arch_major, arch_minor = int(digits[:-1]), int(digits[-1])
        if digits != number:  # a, f: exact only
            if (arch_major, arch_minor) == (major, minor):
                return True
        elif kind == "sm" and arch_major == major and arch_minor <= minor:
            return True
        elif kind == "compute" and (arch_major, arch_minor) <= (major, minor):
            return True
    return False


_supported_devices = set()  # indices checked and found supported


def check_device_supported(device_index):
    """Raises RuntimeError, naming the GPU and the architectures this build has, unless
    the CUDA part of this build runs on GPU `device_index`. Checked once per device:
    later calls cost a set lookup. Meant to run before the first kernel on a device
    (the CUDA code's per-device setup), not per call."""
    if device_index in _supported_devices:
        return
    import torch

    archs = build_info()["cuda_archs"]
    capability = torch.cuda.get_device_capability(device_index)
    if archs is None:
        raise RuntimeError(
            "warpreduce_torch was built without its CUDA part (no nvcc, or a CPU-only "
            f"torch, at build time). {REBUILD}"
        )
    if not runs_on(archs, capability):
        major, minor = capability
        name = torch.cuda.get_device_name(device_index)
        raise RuntimeError(
            f"warpreduce_torch's CUDA kernels were compiled for {' '.join(archs)}, none "
            f"of which runs on cuda:{device_index} ({name}, compute capability "
            f"{major}.{minor}, sm_{major}{minor}). Rebuild for it: "
            f"TORCH_CUDA_ARCH_LIST={major}.{minor} pip install --no-build-isolation -e . "
            "(README: Supported versions)."
        )
    _supported_devices.add(device_index)
