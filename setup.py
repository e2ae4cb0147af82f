"""Builds warpreduce_torch._C, following pytorch/extension-cpp.

Install with `pip install --no-build-isolation -e .` (or `make install`): the extension
must be compiled against the torch that will load it (its C++ ABI is tied to that exact
build), and build isolation would fetch some other torch into a throwaway environment to
build against. `python -m build --no-isolation` makes an sdist and a wheel.

- A build records the torch it was built against in warpreduce_torch/_build_info.py,
  which the package checks before it loads the extension, and a wheel (or an editable
  install) pins that torch release in its requirements; the sdist only sets the floor.
- Builds are incremental: ninja compiles only what changed since the last build, also
  under `pip install -e .` (which would otherwise compile in a new temporary folder).
- CUDA code is compiled whenever nvcc and a CUDA build of torch are present, with or
  without a GPU (the dev machine and CI have none). Without nvcc, the CPU part alone.
- Architectures: TORCH_CUDA_ARCH_LIST when set; else the visible GPUs' (torch's own
  choice); with no GPU visible (a wheel built on a CPU machine or in CI), DEFAULT_CUDA_ARCHS
  below. The build records the list in _build_info.py, and a wheel's summary and
  classifiers name the torch, CUDA and architectures it was built for.
- Not py_limited_api: csrc/python.cpp binds the call against libtorch_python (torch's
  own argument parser), 1-2 us a call cheaper than torch.ops on the GPU machine (the
  file says why), so a build serves the one Python it was built with.
- WARPREDUCE_CUDA=0 forces a CPU-only build; MAX_JOBS caps parallel compile jobs (ninja).
"""

import glob
import os
import pathlib
import sys
import textwrap

# With no GPU visible: one binary (SASS) for each architecture a user is likely to have,
# sm_80 (A100), sm_86 (RTX 30xx, A10, A40), sm_89 (L4, L40S, RTX 40xx), sm_90 (H100,
# H200), sm_100 (B200, GB200; also runs on sm_103), sm_120 (RTX 50xx, RTX PRO 6000),
# and PTX of sm_120 for newer ones, which the driver compiles on first use. The
# tuning constants were measured on sm_90 only (README: Supported versions).
DEFAULT_CUDA_ARCHS = "8.0;8.6;8.9;9.0;10.0;12.0+PTX"
TORCH_FLOOR = "torch>=2.6"


def _locate_cuda_home():
    # torch looks for the toolkit next to the first nvcc on PATH; where that nvcc is a
    # wrapper script (as on the dev machine, /usr/local/bin/nvcc), point it at the real one.
    if os.environ.get("CUDA_HOME") or os.environ.get("CUDA_PATH"):
        return
    for home in ("/usr/local/cuda",):
        if os.path.exists(os.path.join(home, "include", "cuda_runtime.h")):
            os.environ["CUDA_HOME"] = home
            return


_locate_cuda_home()

import torch  # noqa: E402
from setuptools import find_packages, setup  # noqa: E402
from torch.utils.cpp_extension import (  # noqa: E402
    CUDA_HOME,
    BuildExtension,
    CppExtension,
    CUDAExtension,
)


def _with_cuda():
    if os.environ.get("WARPREDUCE_CUDA", "auto") == "0":
        return False
    return torch.version.cuda is not None and CUDA_HOME is not None


# Link the process's shared libstdc++ by file name. On the GPU machine (Ubuntu's Python
# 3.12, g++ 13) the extension came out with a static copy of libstdc++ inside it (no
# NEEDED libstdc++.so.6, 4768 std:: definitions, locale_inst.cc among them), and a
# plain -lstdc++ did not change that: the copy's locale is never initialised, and the
# first number a TORCH_CHECK message formatted crashed the process (a segfault in
# std::ostream::operator<<(unsigned long), found with cuda-gdb). "-l:libstdc++.so.6"
# names the shared object itself, so every std:: symbol resolves to it.
LINK_ARGS = ["-l:libstdc++.so.6"] if sys.platform.startswith("linux") else []

# OpenMP, for at::parallel_for in the CPU kernels: it is a header template that splits a
# loop over threads with `#pragma omp parallel` only where _OPENMP is defined, so compiled
# without -fopenmp every loop ran on the calling thread (a 2^24 bfloat16 sum took 1.23 ms
# at 1 and at 2 threads while torch.sum went from 1.45 to 0.91 ms). The link names
# libgomp.so.1, the soname of the copy torch loads (torch/lib/libgomp.so.1 in its
# wheels), so the loader reuses torch's runtime: one thread pool, torch.set_num_threads.
OPENMP = (
    ["-fopenmp"]
    if sys.platform.startswith("linux") and torch.backends.openmp.is_available()
    else []
)


def _extension():
    sources = sorted(glob.glob("csrc/*.cpp") + glob.glob("csrc/cpu/*.cpp"))
    cxx = ["-O3"] + OPENMP  # torch adds the C++ standard it was built with
    if not _with_cuda():
        print("warpreduce_torch: building the CPU part only (no nvcc or no CUDA torch)")
        return CppExtension(
            "warpreduce_torch._C",
            sources,
            extra_compile_args={"cxx": cxx},
            extra_link_args=LINK_ARGS + OPENMP,
        )
    if not os.environ.get("TORCH_CUDA_ARCH_LIST") and not torch.cuda.is_available():
        os.environ["TORCH_CUDA_ARCH_LIST"] = DEFAULT_CUDA_ARCHS
    print(
        "warpreduce_torch: building CPU and CUDA for arch",
        os.environ.get("TORCH_CUDA_ARCH_LIST", "of the visible GPUs"),
    )
    return CUDAExtension(
        "warpreduce_torch._C",
        sources + sorted(glob.glob("csrc/cuda/*.cu")),
        define_macros=[("WARPREDUCE_WITH_CUDA", None)],
        extra_compile_args={
            "cxx": cxx,
            "nvcc": ["-O3", "-lineinfo"],
        },
        extra_link_args=LINK_ARGS + OPENMP,
    )


def _cuda_archs():
    """What nvcc compiles the CUDA part for, as its -gencode flags name it: "sm_90" for
    a binary, "compute_120" for PTX; None for a CPU-only build. torch's own reading of
    TORCH_CUDA_ARCH_LIST (or of the visible GPUs), so it is what the build uses."""
    if not _with_cuda():
        return None
    from torch.utils.cpp_extension import _get_cuda_arch_flags

    codes = {flag.rpartition("code=")[2] for flag in _get_cuda_arch_flags()}

    def order(code):  # sm_80 ... sm_120, compute_120: by number, binaries first
        kind, _, number = code.partition("_")
        return int(number.rstrip("abf")), kind != "sm", code

    return tuple(sorted(codes, key=order))


def _describe_build(archs):
    """One line for the wheel's summary: the torch, CUDA and architectures it serves."""
    if "sdist" in sys.argv[1:]:
        return ""  # an sdist builds against whatever is installed
    if archs is None:
        return f" (built for torch {torch.__version__}, CPU only)"
    binaries = " ".join(a for a in archs if a.startswith("sm_"))
    ptx = " ".join(a for a in archs if a.startswith("compute_"))
    return (
        f" (built for torch {torch.__version__}, CUDA {torch.version.cuda}, GPUs {binaries}"
        + (f", PTX {ptx}" if ptx else "")
        + ")"
    )


def _classifiers(archs):
    if "sdist" in sys.argv[1:] or archs is None:
        return []
    return [f"Environment :: GPU :: NVIDIA CUDA :: {torch.version.cuda.split('.')[0]}"]


def _torch_requirement():
    # The compiled extension loads only into the torch it was built against, so what
    # holds one (a wheel, an editable install) pins that release, as projects that ship
    # binary extensions do; the public version, because pip compares local labels such as
    # "+cu130" only when the pin has one, and PyPI's torch does not carry it in its
    # metadata. The sdist builds against whatever torch is installed: only the floor.
    if "sdist" in sys.argv[1:]:
        return TORCH_FLOOR
    return "torch==" + torch.__version__.split("+")[0]


class BuildExtensionRecordingTorch(BuildExtension):
    """torch's BuildExtension (ninja), plus warpreduce_torch/_build_info.py written next
    to the extension: the torch it was built against, which warpreduce_torch checks
    before it loads the extension."""

    def finalize_options(self):
        super().finalize_options()
        if self.editable_mode:
            # `pip install -e .` (setuptools' editable_wheel) builds in a new temporary
            # folder every time, so ninja compiled all of it again (~85 s on 2 cores):
            # build where `python setup.py build_ext` does, and only what changed is.
            build = self.get_finalized_command("build")
            self.build_temp = os.path.join(
                build.build_base, f"temp.{build.plat_name}-{sys.implementation.cache_tag}"
            )

    def run(self):
        super().run()
        with open(self._build_info_path(), "w") as f:
            f.write(
                textwrap.dedent(f"""\
                # Written by setup.py when it built warpreduce_torch._C: the torch that
                # build is tied to (warpreduce_torch/__init__.py checks it), and the GPU
                # architectures its CUDA part was compiled for (nvcc's names: sm_XY a
                # binary, compute_XY PTX; None for a CPU-only build).
                TORCH_VERSION = {torch.__version__!r}
                CUDA_VERSION = {torch.version.cuda if _with_cuda() else None!r}
                CUDA_ARCHS = {CUDA_ARCHS!r}
                """)
            )

    def get_outputs(self):
        return super().get_outputs() + [self._build_info_path()]

    def _build_info_path(self):
        # Next to the extension: the source tree for --inplace and editable installs,
        # the build tree for a wheel.
        package_dir = os.path.dirname(self.get_ext_fullpath("warpreduce_torch._C"))
        return os.path.join(package_dir, "_build_info.py")


EXTENSION = _extension()  # sets TORCH_CUDA_ARCH_LIST when no GPU is visible
CUDA_ARCHS = _cuda_archs()

setup(
    name="warpreduce_torch",
    version="0.1.0",
    description="torch.sum as a custom op: staged CUDA reduction kernels and a fast path"
    + _describe_build(CUDA_ARCHS),
    classifiers=_classifiers(CUDA_ARCHS),
    long_description=pathlib.Path(__file__).with_name("README.md").read_text(),
    long_description_content_type="text/markdown",
    python_requires=">=3.9",
    packages=find_packages(include=["warpreduce_torch", "warpreduce_torch.*"]),
    ext_modules=[EXTENSION],
    install_requires=[_torch_requirement()],
    extras_require={
        "bench": ["matplotlib", "tqdm"],  # python -m warpreduce_torch.bench
        "test": ["pytest", "build"],  # build: the packaging tests make an sdist and a wheel
    },
    cmdclass={"build_ext": BuildExtensionRecordingTorch},
)
