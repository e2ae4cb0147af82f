"""Dim reductions: warpreduce's auto against torch.sum, torch.compile(torch.sum)
(Inductor's kernel) and CUB, shape by shape, next to the full reduction of the same
bytes (what reading the input costs: the roofline a dim reduction should reach).

    python -m warpreduce_torch.bench --dims [--dims-filter 4096] [--out results]

For each case: GPU time per call (CUDA events around a loop over inputs rotated beyond
L2, the implementations taking turns in interleaved rounds), GB/s of input, and how
warpreduce plans it (its passes over the reduction geometry, and whether the input is
copied). CUB appears where it reads the input in place (rows one after the other); it has
no column reduction. Prints a torch.utils.benchmark Compare table and a markdown table,
writes dims.csv and dims.png.
"""

import dataclasses
import math
import statistics

import torch
import torch.utils.benchmark as benchmark

import warpreduce_torch as wr
from warpreduce_torch import _C
from warpreduce_torch.testing import random_tensor

from . import plots
from .timing import check_close_to_sum, implementation, interleaved_gpu_times, rotated


@dataclasses.dataclass(frozen=True)
class Case:
    shape: tuple
    dim: object  # int or tuple
    dtype: str = "float32"
    layout: str = "contiguous"  # or "transposed" (last two dims), "sliced" (see make)

    @property
    def name(self):
        shape = " x ".join(
            str(s) if s < 2**14 or s & (s - 1) else f"2^{s.bit_length() - 1}" for s in self.shape
        )
        layout = "" if self.layout == "contiguous" else f" ({self.layout})"
        return f"{self.dtype} {shape}{layout}, dim {self.dim}"

    def make(self, seed):
        dtype = getattr(torch, self.dtype)
        shape = tuple(self.shape)
        if self.layout == "transposed":  # the same shape, the last two dims swapped in memory
            flipped = shape[:-2] + (shape[-1], shape[-2])
            return random_tensor(flipped, dtype, "cuda", seed).transpose(-1, -2)
        if self.layout == "sliced":  # every other row of a tensor twice as tall
            big = (2 * shape[0],) + shape[1:]
            return random_tensor(big, dtype, "cuda", seed)[::2]
        return random_tensor(shape, dtype, "cuda", seed)


def anchor_cases():
    """The dim table of the project's baselines: both dims, float32 and bfloat16."""
    shapes = [
        (4096, 4096),
        (16384, 1024),
        (1024, 65536),
        (65536, 128),
        (8, 2**24),
        (2**20, 32),
        (2**22, 8),
        (32, 2**20),
    ]
    return [Case(s, d, t) for t in ("float32", "bfloat16") for s in shapes for d in (-1, 0)]


def model_cases():
    """Shapes like those of models: 3-D and 4-D inputs reducing the middle dim, the first,
    two dims; transposed and sliced inputs; rows of 3, 100 and 2^20 elements."""
    return [
        Case((64, 512, 1024), 1),
        Case((64, 512, 1024), 0),
        Case((64, 512, 1024), (0, 2)),
        Case((256, 1024, 64), 1),
        Case((32, 256, 56, 56), (0, 2, 3)),  # N, H, W of NCHW (batch norm's sums)
        Case((32, 256, 56, 56), 1),
        Case((32, 256, 56, 56), (0, 2, 3), "bfloat16"),
        Case((4096, 4096), 0, layout="transposed"),
        Case((4096, 4096), 1, layout="transposed"),
        Case((16384, 1024), -1, layout="sliced"),
        Case((16384, 1024), 0, layout="sliced"),
        Case((2**23, 3), -1),
        Case((2**23, 3), 0),
        Case((2**19, 100), -1),
        Case((2**19, 100), 0),
        Case((64, 2**20), -1),
        Case((2**20, 100), -1, "bfloat16"),
        Case((8192, 8192), (0, 1)),
    ]


def plan_summary(x, dim):
    """The kernels of auto's passes for a sum of x over `dim` (an int, a tuple, or None:
    every dim; the launch model's choices, csrc/launch_model.h), whether the last pass runs
    in the first's launch (a tail) and whether it copies x."""
    dims = None if dim is None else [dim] if isinstance(dim, int) else list(dim)
    plan = _C.plan(x, dims)
    kinds = "+".join(p["launch"].split()[0] for p in plan["passes"])
    return kinds + (" (tail)" if plan["tail"] else "") + (" (copied)" if plan["copied"] else "")


def reads_rows_in_place(x, dim):
    dims = [dim] if isinstance(dim, int) else list(dim)
    plan = _C.plan(x, dims)
    return not plan["copied"] and len(plan["passes"]) == 1 and plan["passes"][0]["packed_rows"]


def implementations(case, x, with_compile=True):
    """Each case compiles its own kernel (dynamic=False)."""
    names = ["torch.sum"] + (["torch.compile"] if with_compile else []) + ["auto"]
    if x.dtype.is_floating_point:
        names.append("exact")
    if reads_rows_in_place(x, case.dim):
        names.append("cub")
    return {name: implementation(name, case.dim) for name in names}


def full_reduction_time(numel, dtype, cache):
    """auto's time for a full sum of a contiguous tensor of the same bytes."""
    key = (numel, dtype)
    if key not in cache:
        inputs = rotated(
            lambda seed: random_tensor((numel,), getattr(torch, dtype), "cuda", seed),
            numel * getattr(torch, dtype).itemsize,
        )
        cache[key] = interleaved_gpu_times({"full": wr.sum}, inputs)["full"]
    return cache[key]


def run(cases, progress=None, with_compile=True):
    rows, full_cache = [], {}
    for case in cases:
        probe = case.make(0)
        nbytes = probe.numel() * probe.element_size()
        inputs = rotated(case.make, nbytes)
        fns = implementations(case, probe, with_compile)
        for name, fn in fns.items():
            check_close_to_sum(name, fn(inputs[0]), inputs[0], case.dim, case.name)
        times = interleaved_gpu_times(fns, inputs)
        full = full_reduction_time(probe.numel(), case.dtype, full_cache)
        for name, seconds in times.items():
            rows.append(
                {
                    "case": case.name,
                    "dtype": case.dtype,
                    "shape": "x".join(map(str, case.shape)),
                    "dim": str(case.dim),
                    "layout": case.layout,
                    "impl": name,
                    "mib": nbytes / 2**20,
                    "gpu_us": seconds * 1e6,
                    "gbps": nbytes / seconds / 1e9,
                    "full_gbps": nbytes / full / 1e9,
                    "plan": plan_summary(probe, case.dim),
                }
            )
        del inputs, probe, fns
        torch.cuda.empty_cache()
        if progress:
            progress.update(1)
    return rows


IMPLS = ["torch.sum", "torch.compile", "cub", "auto", "exact"]


def by_case(rows):
    cases = {}
    for r in rows:
        cases.setdefault(r["case"], {})[r["impl"]] = r
    return cases


def compare_table(rows):
    """The GPU times as a torch.utils.benchmark Compare."""
    measurements = []
    for r in rows:
        spec = benchmark.utils.common.TaskSpec(
            stmt="sum(x, dim)",
            setup="",
            label="Dim reductions: GPU time per call (us)",
            sub_label=r["case"],
            description=r["impl"],
        )
        measurements.append(benchmark.Measurement(1, [r["gpu_us"] / 1e6], spec))
    return benchmark.Compare(measurements)


def markdown_table(rows):
    lines = [
        "| case | MiB | plan | torch.sum | torch.compile | cub | auto | exact | full sum, same bytes "
        "| auto / torch.sum | auto / compile | auto / full | exact / auto |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for name, impls in by_case(rows).items():
        auto = impls["auto"]
        cells = [f"{impls[i]['gbps']:.0f}" if i in impls else "" for i in IMPLS]
        lines.append(
            f"| {name} | {auto['mib']:.0f} | {auto['plan']} | "
            + " | ".join(cells)
            + f" | {auto['full_gbps']:.0f} | {auto['gbps'] / impls['torch.sum']['gbps']:.2f}x"
            + (
                f" | {auto['gbps'] / impls['torch.compile']['gbps']:.2f}x"
                if "torch.compile" in impls
                else " | "
            )
            + f" | {auto['gbps'] / auto['full_gbps']:.0%} | "
            + (f"{impls['exact']['gbps'] / auto['gbps']:.2f} |" if "exact" in impls else " |")
        )
    return "\n".join(lines)


def summary(rows):
    cases = by_case(rows)
    vs_sum = [c["auto"]["gbps"] / c["torch.sum"]["gbps"] for c in cases.values()]
    vs_compile = [
        c["auto"]["gbps"] / c["torch.compile"]["gbps"]
        for c in cases.values()
        if "torch.compile" in c
    ]
    geomean = lambda v: math.exp(statistics.fmean(math.log(x) for x in v))  # noqa: E731
    lines = [
        f"\n{len(cases)} cases (GB/s of input, higher is better):",
        f"  auto / torch.sum:     min {min(vs_sum):.2f}x, geometric mean {geomean(vs_sum):.2f}x",
    ]
    if vs_compile:
        lines.append(
            f"  auto / torch.compile: min {min(vs_compile):.2f}x, "
            f"geometric mean {geomean(vs_compile):.2f}x"
        )
    big = [
        (n, c["auto"]["gbps"] / c["auto"]["full_gbps"])
        for n, c in cases.items()
        if c["auto"]["mib"] >= 64
    ]
    if big:
        worst = min(big, key=lambda item: item[1])
        lines.append(
            f"  inputs of 64 MiB or more: auto at {min(r for _, r in big):.0%} to "
            f"{max(r for _, r in big):.0%} of the full sum's GB/s (lowest: {worst[0]})"
        )
    exact = [(n, c["exact"]["gbps"] / c["auto"]["gbps"]) for n, c in cases.items() if "exact" in c]
    if exact:
        below = [
            n
            for n, c in cases.items()
            if "exact" in c and c["exact"]["gbps"] < c["torch.sum"]["gbps"]
        ]
        lines.append(
            f"  exact / auto ({len(exact)} float cases): min {min(r for _, r in exact):.2f}, "
            f"geometric mean {geomean([r for _, r in exact]):.2f}; exact slower than torch.sum on "
            + ("; ".join(below) if below else "none")
        )
    slow = [
        n
        for n, c in cases.items()
        if c["auto"]["gbps"] < max(c[i]["gbps"] for i in ("torch.sum", "torch.compile") if i in c)
    ]
    if slow:
        lines.append("  slower than torch.sum or torch.compile: " + "; ".join(slow))
    return "\n".join(lines)


def plot(rows, device_name, path):
    cases = by_case(rows)
    names = list(cases)
    fig, ax = plots.pyplot().subplots(figsize=(max(10, 0.45 * len(names)), 6))
    width = 0.8 / len(IMPLS)
    for k, impl in enumerate(IMPLS):
        xs = [
            i + (k - (len(IMPLS) - 1) / 2) * width for i, n in enumerate(names) if impl in cases[n]
        ]
        ys = [cases[n][impl]["gbps"] for n in names if impl in cases[n]]
        ax.bar(xs, ys, width, label=impl)
    ax.scatter(
        range(len(names)),
        [cases[n]["auto"]["full_gbps"] for n in names],
        marker="_",
        s=300,
        color="black",
        zorder=3,
        label="full sum of the same bytes (auto)",
    )
    ax.set_xticks(range(len(names)))
    ax.set_xticklabels(names, rotation=75, ha="right", fontsize=7)
    plots.label(ax, f"Dim reductions, {device_name}", "GB/s of input", log2_x=False, grid_axis="y")
    plots.save(fig, path)
