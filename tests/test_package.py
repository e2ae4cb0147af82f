"""The package as pip and its users see it: `python -m build` makes an sdist that builds
and a wheel from it; the wheel pins the torch it was built against and installs into a
clean virtual environment; importing under another torch fails with a clear error; the
benchmark names its extra when a dependency is missing, and writes strict JSON."""

import importlib.metadata
import importlib.util
import json
import math
import os
import pathlib
import subprocess
import sys
import tarfile
import zipfile

import pytest
import torch

import warpreduce_torch

REPO = pathlib.Path(__file__).resolve().parent.parent
TORCH_RELEASE = torch.__version__.split("+")[0]  # "2.14.1" of "2.14.1+cu130"
# Where the package under test was imported from: a subprocess imports the same one.
PACKAGE_PARENT = str(pathlib.Path(warpreduce_torch.__file__).resolve().parent.parent)


def run(args, check=True, **kwargs):
    """Runs the command `args` with its output captured; where it fails and `check`, the
    test fails with the command and the tail of its output."""
    result = subprocess.run([str(a) for a in args], capture_output=True, text=True, **kwargs)
    if check and result.returncode != 0:
        command = " ".join(str(a) for a in args)[:200]
        pytest.fail(f"{command} failed:\n{result.stdout[-5000:]}\n{result.stderr[-5000:]}")
    return result


def run_python(python, code, cwd, check=True, this_package=False):
    """Runs `code` with `python` in `cwd`: a folder outside the repository, so that
    `import warpreduce_torch` finds the installed package, or with `this_package`, the
    one these tests imported."""
    env = {**os.environ, "PYTHONPATH": PACKAGE_PARENT} if this_package else None
    return run([python, "-c", code], check, cwd=cwd, env=env)


# --- the torch-version guard, without building anything


def test_import_under_another_torch_names_both_versions(tmp_path):
    result = run_python(
        sys.executable,
        "import torch; torch.__version__ = '2.0.0+cpu'; import warpreduce_torch",
        cwd=tmp_path,
        check=False,
        this_package=True,
    )
    message = result.stderr.strip().splitlines()[-1]
    assert message.startswith("ImportError: warpreduce_torch was built against torch")
    assert torch.__version__ in message and "2.0.0+cpu" in message
    assert "Rebuild" in message


def test_build_info_records_the_running_torch():
    from warpreduce_torch import _build_info

    assert _build_info.TORCH_VERSION == torch.__version__


# --- sdist and wheel: one CPU-only build for all the tests below


@pytest.fixture(scope="module")
def dists(tmp_path_factory):
    """The sdist and the wheel `python -m build --no-isolation` makes of this checkout;
    the wheel is built from the sdist, so it builds only if the sdist carries every
    file the build needs. CPU-only (WARPREDUCE_CUDA=0): what is under test is the
    packaging, and `make install` has compiled the CUDA code already (a CUDA build
    takes ~80 s on CI's 2 cores, a CPU-only one ~60 s)."""
    if importlib.util.find_spec("build") is None:
        pytest.skip("python -m build is not installed (pip install build): no sdist or wheel")
    if not (REPO / "setup.py").exists():
        pytest.skip("not a source checkout: nothing to build an sdist from")
    out = tmp_path_factory.mktemp("dist")
    env = {**os.environ, "WARPREDUCE_CUDA": "0"}
    # --skip-dependency-check: build would also check that the installed torch's own
    # requirements (its CUDA libraries' exact versions) are met, which fails for a torch
    # installed without them or built from source, and is not what is under test.
    run(
        [
            sys.executable,
            "-m",
            "build",
            "--no-isolation",
            "--skip-dependency-check",
            "--outdir",
            out,
            REPO,
        ],
        env=env,
    )
    (sdist,) = out.glob("*.tar.gz")
    (wheel,) = out.glob("*.whl")
    return sdist, wheel


def sdist_files(sdist):
    with tarfile.open(sdist) as tar:
        return {
            pathlib.PurePosixPath(name).relative_to(name.split("/")[0]).as_posix()
            for name in tar.getnames()
            if "/" in name
        }


def test_sdist_carries_every_source_and_no_build_product(dists):
    sdist, _ = dists
    files = sdist_files(sdist)
    sources = [
        p
        for d in ("csrc", "tests", "warpreduce_torch")
        for p in (REPO / d).rglob("*")
        if p.is_file() and p.suffix in {".h", ".cuh", ".cpp", ".cu", ".py"}
    ]
    expected = {p.relative_to(REPO).as_posix() for p in sources} - {
        "warpreduce_torch/_build_info.py"
    }
    assert expected - files == set()
    assert "tests/support.py" in files and "csrc/plan.h" in files
    assert not any(f.endswith(".so") or f.endswith("_build_info.py") for f in files)


def metadata(text):
    """The Requires-Dist and Provides-Extra lines of a wheel's METADATA."""
    return [
        line for line in text.splitlines() if line.startswith(("Requires-Dist:", "Provides-Extra:"))
    ]


def test_sdist_sets_a_torch_floor_not_a_pin(dists):
    sdist, _ = dists
    # PKG-INFO's headers list requirements with recent setuptools (its body is the
    # README); the egg-info's requires.txt always does (extras after a "[name]" line).
    with tarfile.open(sdist) as tar:
        texts = [
            tar.extractfile(m).read().decode()
            for m in tar.getmembers()
            if m.name.endswith(("/PKG-INFO", ".egg-info/requires.txt"))
        ]
    heads = [text.split("\n\n")[0].split("\n[")[0] for text in texts]
    torch_requirements = {
        line.removeprefix("Requires-Dist: ")
        for head in heads
        for line in head.splitlines()
        if line.startswith(("torch", "Requires-Dist: torch"))
    }
    assert torch_requirements == {"torch>=2.6"}


def test_wheel_pins_the_torch_it_was_built_against(dists):
    _, wheel = dists
    with zipfile.ZipFile(wheel) as whl:
        (meta,) = [n for n in whl.namelist() if n.endswith(".dist-info/METADATA")]
        text = whl.read(meta).decode()
        lines = metadata(text)
        build_info = whl.read("warpreduce_torch/_build_info.py").decode()
    # What the wheel serves, in its summary (pip show) and its _build_info.py: this one
    # is CPU-only (WARPREDUCE_CUDA=0), so no GPU architectures.
    summary = next(line for line in text.splitlines() if line.startswith("Summary:"))
    assert summary.endswith(f"(built for torch {torch.__version__}, CPU only)")
    assert "CUDA_ARCHS = None" in build_info
    assert f"Requires-Dist: torch=={TORCH_RELEASE}" in lines
    # ... which the installed torch meets, as pip will check: its distribution's version
    # may lack the local label of torch.__version__ ("2.14.1" for "2.14.1+cu130").
    from packaging.requirements import Requirement

    pin = Requirement(f"torch=={TORCH_RELEASE}")
    assert pin.specifier.contains(importlib.metadata.version("torch"), prereleases=True)
    assert "Provides-Extra: bench" in lines
    assert 'Requires-Dist: matplotlib; extra == "bench"' in lines
    assert f"TORCH_VERSION = {torch.__version__!r}" in build_info


@pytest.fixture(scope="module")
def venv_with_wheel(dists, tmp_path_factory):
    """A new virtual environment with the wheel installed by pip, offline. It sees this
    environment's packages through a .pth file (so that torch is not downloaded again)
    but not their .pth files, so not the editable install of this checkout."""
    _, wheel = dists
    venv = tmp_path_factory.mktemp("venv")
    created = run([sys.executable, "-m", "venv", "--without-pip", venv], check=False)
    if created.returncode != 0:
        pytest.skip(f"cannot make a virtual environment here: {created.stderr.strip()[-300:]}")
    python = venv / "bin" / "python"
    site = run_python(python, "import sysconfig; print(sysconfig.get_paths()['purelib'])", venv)
    outer = [p for p in sys.path if p.endswith(("site-packages", "dist-packages"))]
    (pathlib.Path(site.stdout.strip()) / "outer_environment.pth").write_text(
        "\n".join(outer) + "\n"
    )
    # --no-deps: torch is there, and the pin is checked above; pip would also check
    # torch's own requirements, which a torch installed without them does not meet.
    run(
        [python, "-m", "pip", "install", "--no-deps", "--no-index", "--no-cache-dir", wheel],
        cwd=venv,
    )
    return venv, python, pathlib.Path(site.stdout.strip())


def test_wheel_installs_into_a_clean_venv_and_sums(venv_with_wheel):
    venv, python, site = venv_with_wheel
    result = run_python(
        python,
        (
            "import torch, warpreduce_torch as wr\n"
            "print(wr.__file__)\n"
            "x = torch.randn(1000, 7, dtype=torch.float64)\n"
            "assert torch.allclose(wr.sum(x, 1), x.sum(1))\n"
            "assert wr.kernels('cpu') == ['auto', 'exact']\n"
        ),
        cwd=venv,
    )
    assert pathlib.Path(result.stdout.strip()).is_relative_to(site)


def test_installed_wheel_refuses_another_torch(venv_with_wheel):
    venv, python, site = venv_with_wheel
    build_info = site / "warpreduce_torch" / "_build_info.py"
    original = build_info.read_text()
    try:
        build_info.write_text(original.replace(repr(torch.__version__), "'2.0.0+cu118'"))
        result = run_python(python, "import warpreduce_torch", venv, check=False)
    finally:
        build_info.write_text(original)
    assert result.returncode != 0
    message = result.stderr.strip().splitlines()[-1]
    assert message.startswith("ImportError: warpreduce_torch was built against torch 2.0.0+cu118")
    assert f"but torch {torch.__version__} is installed" in message


# --- the benchmark's extra and its JSON


def test_benchmark_names_its_extra_before_measuring(tmp_path):
    # matplotlib made unimportable, as for a plain `pip install .` without [bench], on a
    # machine taken for one with a GPU (without one the main job is the CPU comparison,
    # which needs no extra): it must stop before it touches the GPU.
    result = run_python(
        sys.executable,
        (
            "import sys, runpy, torch\n"
            "sys.modules['matplotlib'] = None\n"
            "torch.cuda.is_available = lambda: True\n"
            "sys.argv = ['bench', '--sizes', '10', '--out', 'results']\n"
            "runpy.run_module('warpreduce_torch.bench', run_name='__main__')\n"
        ),
        cwd=tmp_path,
        check=False,
        this_package=True,
    )
    assert result.returncode != 0
    assert "warpreduce_torch[bench]" in result.stderr and "matplotlib" in result.stderr
    assert "Device:" not in result.stdout  # it stopped before measuring anything
    assert not (tmp_path / "results").exists()


def test_device_json_is_strict_json(tmp_path):
    from warpreduce_torch.bench.__main__ import write_device_json
    from warpreduce_torch.bench.timing import Device

    device = Device("cpu")
    assert math.isnan(device.peak_gbps)  # no GPU, or one that does not report its clock
    path = tmp_path / "device.json"
    write_device_json(path, device, ["--sizes", "10"])

    def reject(constant):
        raise ValueError(f"not strict JSON: {constant}")

    data = json.loads(path.read_text(), parse_constant=reject)
    assert data["peak_gbps"] is None and data["name"] == "cpu"
    assert data["command"] == "python -m warpreduce_torch.bench --sizes 10"
