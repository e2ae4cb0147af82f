"""The check that the compiled extension was built against the running torch.

A build of warpreduce_torch._C links against one torch's C++ libraries and loads only
into that exact build: under another it fails with a bare loader error (an undefined
symbol, or a missing libc10_cuda.so) that names no version. setup.py writes the torch it
built against into _build_info.py, which this compares before the extension is loaded.
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
