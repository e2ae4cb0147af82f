"""The CPU comparison: warpreduce_torch.sum against torch.sum on CPU tensors, case by case.

    python -m warpreduce_torch.bench            # on a machine without a GPU
    python -m warpreduce_torch.bench --cpu      # on any machine, the GPU left alone
    python -m warpreduce_torch.bench --cpu --threads 1 4 --cpu-filter 4096

Cases: full sums of float32, bfloat16, float16, float64, int32 and int8 at 2^12, 2^16,
2^20 and 2^24 elements; dim sums (rows, columns, a middle dim, two dims, transposed and
sliced inputs, short rows). For each case and thread count (torch.set_num_threads; by
default 1 and all of them): the median wall time per call of each implementation from
torch.utils.benchmark, taking turns in interleaved rounds so that a drift in the
machine's speed falls on all alike, GB/s of input, and the ratio torch.sum time /
warpreduce time (above 1: warpreduce is faster); float cases also time kernel="exact"
(its rows' ratio: auto's time / exact's). Prints a Compare table, a markdown table and
the geometric means of the ratios, writes cpu.csv and cpu_device.json into --out.
"""

import dataclasses
import datetime
import functools
import json
import math
import os
import pathlib
import platform
import statistics

import torch
import torch.utils.benchmark as benchmark

import warpreduce_torch as wr
from warpreduce_torch.testing import random_tensor

from .timing import check_close_to_sum, interleaved_wall_times, write_csv

ROUNDS = 5
IMPLS = {"torch.sum": torch.sum, "warpreduce": wr.sum}


@dataclasses.dataclass(frozen=True)
class Case:
    dtype: str
    shape: tuple
    dim: object = None  # None: the full sum; an int or a tuple of ints
    layout: str = (
        "contiguous"  # "transposed" (the last two dims swapped) or "sliced" (every other row)
    )

    @property
    def name(self):
        def size(s):  # powers of two as such: every full sum, large dims
            power = s & (s - 1) == 0 and (len(self.shape) == 1 or s >= 2**14)
            return f"2^{s.bit_length() - 1}" if power else str(s)

        shape = " x ".join(size(s) for s in self.shape)
        layout = "" if self.layout == "contiguous" else f" {self.layout}"
        dim = "" if self.dim is None else f", dim {self.dim}"
        return f"{self.dtype} {shape}{layout}{dim}"

    def make(self):
        dtype = getattr(torch, self.dtype)
        shape = tuple(self.shape)
        if self.layout == "transposed":
            shape = shape[:-2] + (shape[-1], shape[-2])
        elif self.layout == "sliced":
            shape = (2 * shape[0],) + shape[1:]
        # Mean 0.5 as the GPU sweep, but mean 0 for float16, whose sum of 2^17 or more
        # such values passes its largest finite value (65504).
        x = random_tensor(shape, dtype, "cpu", mean=0.0 if dtype == torch.float16 else 0.5)
        if self.layout == "transposed":
            return x.transpose(-1, -2)
        if self.layout == "sliced":
            return x[::2]
        return x


def cases():
    """The full sums and dim sums the CPU kernel is held to, then shapes of models."""
    full = [
        Case(d, (1 << k,))
        for d in ("float32", "bfloat16", "float16", "float64", "int32", "int8")
        for k in (12, 16, 20, 24)
    ]
    dims = [
        Case("float32", (4096, 4096), 0),
        Case("float32", (4096, 4096), -1),
        Case("float32", (65536, 128), 0),
        Case("float32", (8, 2**21), 0),
        Case("bfloat16", (4096, 4096), -1),
    ]
    own = [
        Case("bfloat16", (4096, 4096), 0),
        Case("float16", (4096, 4096), -1),
        Case("float64", (2048, 2048), 0),
        Case("int32", (4096, 4096), 0),
        Case("float32", (64, 1024, 256), 1),  # a middle dim
        Case("float32", (32, 256, 56, 56), (0, 2, 3)),  # N, H, W of NCHW: two passes
        Case("float32", (4096, 4096), 0, "transposed"),  # rows in memory
        Case("float32", (4096, 4096), 1, "transposed"),  # columns in memory
        Case("float32", (8192, 1024), -1, "sliced"),
        Case("float32", (2**20, 32), -1),  # short rows
        Case("float32", (2**20, 32), 0),  # few columns, long
    ]
    return full + dims + own


def call(fn, dim):
    if dim is None:
        return lambda x: fn(x)
    return lambda x: fn(x, dim)


def measure(case, x, threads, min_run_time):
    """Median seconds per call of each implementation at `threads` threads, in interleaved
    rounds."""
    fns = {name: call(fn, case.dim) for name, fn in IMPLS.items()}
    if x.dtype.is_floating_point:
        fns["exact"] = call(functools.partial(wr.sum, kernel="exact"), case.dim)
    return interleaved_wall_times(
        fns, x, "CPU: wall time per call", case.name, min_run_time, ROUNDS, threads
    )


def cpu_name():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def describe():
    return {
        "cpu": cpu_name(),
        "cores": os.cpu_count(),
        "torch_threads": torch.get_num_threads(),
        "isa": torch.backends.cpu.get_cpu_capability(),
        "torch": torch.__version__,
        "date": datetime.datetime.now().isoformat(timespec="minutes"),
    }


def geomean(values):
    return math.exp(statistics.fmean(math.log(v) for v in values))


def markdown_table(rows, thread_counts):
    head = (
        "| case | "
        + " | ".join(
            f"torch.sum us ({t} thr) | warpreduce us ({t} thr) | ratio ({t} thr)"
            for t in thread_counts
        )
        + " |"
    )
    lines = [head, "|---|" + "---|---|---|" * len(thread_counts)]
    by_case = {}
    for r in rows:
        by_case.setdefault(r["case"], {})[(r["threads"], r["impl"])] = r
    for name, cells in by_case.items():
        parts = []
        for t in thread_counts:
            ours, theirs = cells[(t, "warpreduce")], cells[(t, "torch.sum")]
            parts.append(
                f"{theirs['median_us']:.1f} | {ours['median_us']:.1f} | {ours['ratio']:.2f}"
            )
        lines.append(f"| {name} | " + " | ".join(parts) + " |")
    return "\n".join(lines)


def summary(rows, thread_counts):
    lines = ["\nratio = torch.sum time / warpreduce time (above 1: warpreduce is faster)"]
    for t in thread_counts:
        ratios = {
            r["case"]: r["ratio"] for r in rows if r["threads"] == t and r["impl"] == "warpreduce"
        }
        worst = min(ratios, key=ratios.get)
        lines.append(
            f"  {t} thread(s): {len(ratios)} cases, geometric mean {geomean(ratios.values()):.2f}x, "
            f"lowest {ratios[worst]:.2f}x ({worst})"
        )
        exact = {r["case"]: r["ratio"] for r in rows if r["threads"] == t and r["impl"] == "exact"}
        if exact:
            worst = min(exact, key=exact.get)
            lines.append(
                f"    exact / auto: {len(exact)} float cases, geometric mean "
                f"{geomean(exact.values()):.2f}x, lowest {exact[worst]:.2f}x ({worst})"
            )
    return "\n".join(lines)


def main(args, argv):
    """Runs the comparison with the main job's arguments: --threads, --cpu-filter,
    --min-run-time, --out."""
    all_threads = torch.get_num_threads()
    thread_counts = sorted({all_threads if t == "all" else int(t) for t in args.threads})
    selected = [c for c in cases() if args.cpu_filter in c.name]
    if not selected:
        print(f"No CPU case matches {args.cpu_filter!r}.")
        return 1
    device = describe()
    print(
        f"CPU: {device['cpu']}, {device['cores']} cores, torch {device['torch']} "
        f"(ISA {device['isa']}, {all_threads} threads by default), {device['date']}"
    )
    print(
        f"{len(selected)} cases x threads {thread_counts}: torch.sum and warpreduce_torch.sum "
        f"side by side, {ROUNDS} interleaved rounds each\n"
    )

    rows, measurements = [], []
    for case in selected:
        x = case.make()
        check_close_to_sum("warpreduce", call(wr.sum, case.dim)(x), x, case.dim, case.name)
        nbytes = x.numel() * x.element_size()
        for t in thread_counts:
            timed = measure(case, x, t, args.min_run_time)
            ratio = timed["torch.sum"].median / timed["warpreduce"].median
            ratios = {"warpreduce": ratio, "torch.sum": 1.0}
            if "exact" in timed:
                ratios["exact"] = timed["warpreduce"].median / timed["exact"].median
            for name, m in timed.items():
                measurements.append(m)
                rows.append(
                    {
                        "case": case.name,
                        "dtype": case.dtype,
                        "shape": "x".join(map(str, case.shape)),
                        "dim": "" if case.dim is None else str(case.dim),
                        "layout": case.layout,
                        "threads": t,
                        "impl": name,
                        "median_us": m.median * 1e6,
                        "gbps": nbytes / m.median / 1e9,
                        "ratio": ratios[name],
                    }
                )
            exact = (
                f"  exact {timed['exact'].median * 1e6:10.1f} us ({ratios['exact']:.2f}x auto)"
                if "exact" in timed
                else ""
            )
            print(
                f"  {case.name:42s} {t:3d} thr  torch.sum {timed['torch.sum'].median * 1e6:10.1f} us  "
                f"warpreduce {timed['warpreduce'].median * 1e6:10.1f} us  {ratio:5.2f}x{exact}",
                flush=True,
            )
        del x

    print()
    compare = benchmark.Compare(measurements)
    compare.print()
    print(markdown_table(rows, thread_counts))
    print(summary(rows, thread_counts))

    out = pathlib.Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    write_csv(rows, out / "cpu.csv")
    device["command"] = " ".join(["python -m warpreduce_torch.bench"] + list(argv or []))
    (out / "cpu_device.json").write_text(json.dumps(device, indent=2))
    print(f"\nWrote {out / 'cpu.csv'} and {out / 'cpu_device.json'}")
    return 0
