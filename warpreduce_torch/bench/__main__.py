"""The main job: warpreduce_torch.sum against torch.sum and CUB, swept over sizes.

    python -m warpreduce_torch.bench                       # 2^10..2^28, float32 bfloat16 int32
    python -m warpreduce_torch.bench --sizes 20-24 --dtypes float32 --stages
    python -m warpreduce_torch.bench --stages-table        # the staged kernels' story
    python -m warpreduce_torch.bench --dims                # dim reductions, shape by shape
    python -m warpreduce_torch.bench --random 200 --seed 1 # dim reductions, random shapes
    python -m warpreduce_torch.bench --small-extents       # 2-8 summed in the middle
    python -m warpreduce_torch.bench --cpu                 # the CPU kernel, even with a GPU

For each dtype, size and implementation: GPU time per call (CUDA events over a loop,
inputs rotated over 1 GiB), GB/s of input and percent of the theoretical peak, wall time
per call (torch.utils.benchmark, host overhead included) and, for floats, the error
against a float64 sum; the implementations take turns, in 7 interleaved rounds a size.
Prints torch.utils.benchmark Compare tables, then writes the raw numbers (CSV), the
device (JSON) and a plot (PNG) into --out. Without a GPU, or with --cpu, it compares the
CPU kernel with torch.sum on the CPU instead (warpreduce_torch.bench.cpu). --random and
--small-extents: warpreduce_torch.bench.random_shapes, on the GPU or (without one, or
with --cpu) on the CPU.
"""

import argparse
import datetime
import json
import math
import pathlib
import sys

import torch
import torch.utils.benchmark as benchmark

import warpreduce_torch as wr

from . import cpu, dims, plots, random_shapes, stages
from .timing import DTYPES, Device, implementation, rotating_inputs, side_by_side, write_csv


def parse_sizes(text):
    """ "10-28" or "10,16,20": log2 sizes."""
    if "-" in text:
        lo, hi = text.split("-")
        return list(range(int(lo), int(hi) + 1))
    return [int(s) for s in text.split(",")]


# What `pip install "warpreduce_torch[bench]"` adds (setup.py, extras_require).
BENCH_EXTRA = ("matplotlib", "tqdm")


def check_bench_extra():
    """Exits, naming the extra, when a module the sweep needs is missing: before it
    measures for minutes, not after."""
    import importlib.util

    missing = [m for m in BENCH_EXTRA if importlib.util.find_spec(m) is None]
    if missing:
        raise SystemExit(
            f"python -m warpreduce_torch.bench needs {' and '.join(missing)}, which the "
            "package's 'bench' extra installs: pip install \"warpreduce_torch[bench]\" "
            '(from a source checkout: pip install --no-build-isolation -e ".[bench]", or '
            "pip install -r requirements.txt)."
        )


def progress(total):
    from tqdm import tqdm

    return tqdm(total=total, file=sys.stderr, unit="run", dynamic_ncols=True)


def float64_reference(x):
    """(sum, sum of |x|) in float64, for the error of a float sum relative to sum |x|;
    None for integers, whose sums are exact."""
    if not x.dtype.is_floating_point:
        return None
    x64 = x.double()
    return x64.sum().item(), max(x64.abs().sum().item(), 1e-300)


def run(args):
    on_gpu = torch.cuda.is_available()
    device = Device.current()
    where = "cuda" if on_gpu else "cpu"
    impls = ["torch.sum"] + [
        k for k in args.kernels if k in wr.kernels(where) or (k == "torch.compile" and on_gpu)
    ]
    if args.stages and on_gpu:
        impls += [k for k in wr.kernels("cuda", "stage") if k not in impls]
    sizes = parse_sizes(args.sizes or ("10-28" if on_gpu else "10-24"))
    print(f"Device: {device.describe()}")
    if not on_gpu:
        print(
            "No GPU found: comparing warpreduce_torch's CPU kernel with torch.sum on the CPU "
            "(wall time per call)."
        )
    print(
        f"torch {torch.__version__}, {datetime.datetime.now():%Y-%m-%d %H:%M}, "
        f"implementations: {', '.join(impls)}\n"
    )

    rows, wall = [], []
    bar = progress(len(args.dtypes) * len(sizes) * len(impls))  # advanced a size at a time
    for dtype_name in args.dtypes:
        dtype = DTYPES[dtype_name]
        for log2 in sizes:
            n = 1 << log2
            inputs = rotating_inputs(n, dtype, where)
            reference = float64_reference(inputs[0])
            bar.set_description(f"{dtype_name} 2^{log2}")
            fns = {name: implementation(name) for name in impls}
            timed = side_by_side(fns, inputs, dtype_name, f"2^{log2}", args.min_run_time)
            for name, (m, gpu_seconds) in timed.items():
                wall.append(m)
                seconds = gpu_seconds if on_gpu else m.median
                gbps = n * dtype.itemsize / seconds / 1e9
                rows.append(
                    {
                        "dtype": dtype_name,
                        "log2_n": log2,
                        "n": n,
                        "impl": name,
                        "gpu_us": seconds * 1e6 if on_gpu else "",
                        "wall_us": m.median * 1e6,
                        "gbps": gbps,
                        "peak_pct": 100 * gbps / device.peak_gbps if on_gpu else "",
                        "rel_error": 0.0
                        if reference is None
                        else abs(fns[name](inputs[0]).double().item() - reference[0])
                        / reference[1],
                    }
                )
            bar.update(len(impls))
            del inputs
            if on_gpu:
                torch.cuda.empty_cache()
    bar.close()
    return device, impls, rows, wall


def gpu_compare(rows):
    """The GPU times as torch.utils.benchmark Measurements, for a Compare table."""
    out = []
    for r in rows:
        if r["gpu_us"] == "":
            continue
        spec = benchmark.utils.common.TaskSpec(
            stmt="sum(x)",
            setup="",
            label=f"{r['dtype']}: GPU time per call (us)",
            sub_label=f"2^{r['log2_n']}",
            description=r["impl"],
        )
        out.append(benchmark.Measurement(1, [r["gpu_us"] / 1e6], spec))
    return out


def throughput_table(rows, impls, device):
    lines = []
    for dtype in dict.fromkeys(r["dtype"] for r in rows):
        known = math.isfinite(device.peak_gbps)
        peak = f"% of peak {device.peak_gbps:.0f} GB/s" if known else "no peak known"
        lines.append(f"\n{dtype}: GB/s of input ({peak})")
        lines.append("size   " + "".join(f"{name:>22}" for name in impls))
        for log2 in dict.fromkeys(r["log2_n"] for r in rows):
            cells = []
            for name in impls:
                r = next(
                    r for r in rows if (r["dtype"], r["log2_n"], r["impl"]) == (dtype, log2, name)
                )
                pct = f" ({r['peak_pct']:.0f}%)" if r["peak_pct"] != "" else ""
                cells.append(f"{r['gbps']:.0f}{pct}".rjust(22))
            lines.append(f"2^{log2:<4} " + "".join(cells))
    return "\n".join(lines)


def write_device_json(path, device, argv):
    """The device (a Device, or a dict of fields), torch and command of a run, as strict
    JSON: an unknown number (the peak of a CPU or of a GPU that does not report its memory
    clock) is null, not the NaN that strict parsers reject."""
    fields = {
        k: None if isinstance(v, float) and not math.isfinite(v) else v
        for k, v in (device if isinstance(device, dict) else device.__dict__).items()
    }
    path.write_text(
        json.dumps(
            {
                **fields,
                "torch": torch.__version__,
                "date": datetime.datetime.now().isoformat(timespec="minutes"),
                "command": " ".join(["python -m warpreduce_torch.bench"] + list(argv)),
            },
            indent=2,
            allow_nan=False,
        )
    )


def plot(rows, impls, device, path):
    dtypes = list(dict.fromkeys(r["dtype"] for r in rows))
    fig, axes = plots.panels(len(dtypes), 6, 4.5)
    for ax, dtype in zip(axes, dtypes):
        for name in impls:
            pts = [(r["n"], r["gbps"]) for r in rows if r["dtype"] == dtype and r["impl"] == name]
            ax.plot(
                *zip(*pts),
                marker="o",
                markersize=3,
                label=name,
                linewidth=2.2 if name == "auto" else 1.2,
            )
        if not math.isnan(device.peak_gbps):
            ax.axhline(
                device.peak_gbps,
                color="black",
                linestyle="--",
                linewidth=1,
                label=f"peak {device.peak_gbps:.0f} GB/s",
            )
        plots.label(ax, f"{dtype} sum, {device.name}", "GB/s of input", "elements")
    plots.save(fig, path, dpi=120)


def run_dims(args, argv):
    if not torch.cuda.is_available():
        print("No GPU found: the dim-reduction comparison needs a CUDA device.")
        return 0
    check_bench_extra()
    device = Device.current()
    cases = [c for c in dims.anchor_cases() + dims.model_cases() if args.dims_filter in c.name]
    print(f"Device: {device.describe()}")
    print(
        f"torch {torch.__version__}, {datetime.datetime.now():%Y-%m-%d %H:%M}, {len(cases)} cases\n"
    )
    bar = progress(len(cases))
    rows = dims.run(cases, bar, with_compile=not args.no_compile)
    bar.close()
    dims.compare_table(rows).print()
    print(dims.markdown_table(rows))
    print(dims.summary(rows))
    out = pathlib.Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    write_csv(rows, out / "dims.csv")
    dims.plot(rows, device.name, out / "dims.png")
    print(f"\nWrote {out / 'dims.csv'} and {out / 'dims.png'}")
    return 0


def parse_indices(tokens):
    """ "17" or "100-199" (both ends included), any number of them: a set of indices."""
    picked = set()
    for token in tokens:
        lo, _, hi = token.partition("-")
        picked.update(range(int(lo), int(hi or lo) + 1))
    return picked


def run_random(args, argv):
    """--random N and --small-extents (warpreduce_torch.bench.random_shapes)."""
    check_bench_extra()
    where = "cpu" if args.cpu or not torch.cuda.is_available() else "cuda"
    if where == "cuda":
        device = Device.current()
        described, fields = device.describe(), device.__dict__
        title = device.name
    else:
        fields = cpu.describe()
        described = f"{fields['cpu']}, {fields['cores']} cores, {fields['torch_threads']} threads"
        title = f"CPU, {fields['torch_threads']} threads"
    stem = "small_extents" if args.small_extents else "random"
    out = pathlib.Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    if args.merge:
        rows = random_shapes.read_rows(args.merge)
        title, fields = f"{len(args.merge)} runs merged", {"merged": args.merge}
        print(f"{len(rows)} shapes from {', '.join(args.merge)}")
    else:
        rows = measure_random(args, argv, where, described, out / f"{stem}.csv")
    if not rows:
        print("No shape measured.")
        return 1
    print(random_shapes.summary(rows))
    if args.small_extents:
        print(random_shapes.small_extents_table(rows))
    else:
        print(random_shapes.worst_table(rows, "torch.sum"))
        print(random_shapes.worst_table(rows, "roofline"))
    write_csv(rows, out / f"{stem}.csv")
    write_device_json(out / f"{stem}.json", {**fields, "seed": args.seed}, argv)
    if args.small_extents:
        random_shapes.plot_small_extents(rows, title, out / f"{stem}.png")
    else:
        random_shapes.plot(rows, title, out / f"{stem}.png")
    print(f"\nWrote {out / stem}.csv, .json and .png")
    return 0


def measure_random(args, argv, where, described, csv_path):
    """The rows of --random or --small-extents, measured; the CSV rewritten after each
    shape, so that a run cut short leaves what it measured."""
    if args.small_extents:
        cases = random_shapes.small_extent_cases(where)
    else:
        n = args.random or (200 if where == "cuda" else 100)
        lo, hi = args.mib or (random_shapes.GPU_MIB if where == "cuda" else random_shapes.CPU_MIB)
        cases = random_shapes.sample_cases(n, args.seed, int(lo * 2**20), int(hi * 2**20))
    picked = parse_indices(args.pick) if args.pick else range(len(cases))
    indexed = [(i, c) for i, c in enumerate(cases) if i in picked]
    with_compile = where == "cuda" and not args.no_compile and not args.small_extents
    print(f"Device: {described}" + ("" if where == "cuda" else " (the CPU comparison)"))
    print(
        f"torch {torch.__version__}, {datetime.datetime.now():%Y-%m-%d %H:%M}, {len(indexed)} "
        f"shapes: auto, torch.sum{', torch.compile' if with_compile else ''} and the roofline "
        "side by side"
    )
    print(f"command: python -m warpreduce_torch.bench {' '.join(argv)}\n", flush=True)
    if where == "cuda":
        measure = lambda case: random_shapes.measure_gpu(case, with_compile)  # noqa: E731
    else:
        measure = lambda case: random_shapes.measure_cpu(case, args.min_run_time)  # noqa: E731
    bar = progress(len(indexed))
    rows = random_shapes.run(
        indexed, measure, args.max_seconds or math.inf, bar, lambda rows: write_csv(rows, csv_path)
    )
    bar.close()
    return rows


def main(argv=None):
    parser = argparse.ArgumentParser(
        prog="python -m warpreduce_torch.bench", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument(
        "--sizes",
        help="log2 sizes: a range 10-28 or a list 16,20,24 "
        "(default 10-28 on a GPU, 10-24 on the CPU)",
    )
    parser.add_argument(
        "--dtypes", nargs="+", default=["float32", "bfloat16", "int32"], choices=DTYPES
    )
    parser.add_argument(
        "--kernels",
        nargs="+",
        default=["auto", "exact", "cub", "torch.compile"],
        help="warpreduce kernels (and torch.compile) to compare with torch.sum",
    )
    parser.add_argument("--stages", action="store_true", help="add the eight staged kernels")
    parser.add_argument(
        "--stages-table",
        action="store_true",
        help="print the staged kernels' table instead (warpreduce_torch.bench.stages)",
    )
    parser.add_argument(
        "--min-run-time",
        type=float,
        default=0.1,
        help="seconds of wall-time measurement per point (with --random or --small-extents on "
        "the CPU: per shape and implementation)",
    )
    parser.add_argument(
        "--dims",
        action="store_true",
        help="dim reductions shape by shape instead (warpreduce_torch.bench.dims)",
    )
    parser.add_argument(
        "--dims-filter",
        default="",
        help="with --dims: only the cases whose name contains this text",
    )
    parser.add_argument(
        "--cpu",
        action="store_true",
        help="the CPU comparison (what runs without a GPU) even where a GPU is found",
    )
    parser.add_argument(
        "--threads",
        nargs="+",
        default=["1", "all"],
        help="CPU comparison: thread counts to measure ('all': torch's default)",
    )
    parser.add_argument(
        "--cpu-filter",
        default="",
        help="CPU comparison: only the cases whose name contains this text",
    )
    parser.add_argument(
        "--random",
        type=int,
        nargs="?",
        const=0,
        metavar="N",
        help="dim reductions of N random shapes instead (warpreduce_torch.bench.random_shapes;"
        " default 200 on a GPU, 100 on the CPU): auto, torch.sum, torch.compile and the roofline",
    )
    parser.add_argument(
        "--seed", type=int, default=0, help="with --random: the seed the shapes are drawn from"
    )
    parser.add_argument(
        "--mib",
        type=float,
        nargs=2,
        metavar=("LO", "HI"),
        help="with --random: the input size range in MiB (default 8 256 on a GPU, 2 32 on the CPU)",
    )
    parser.add_argument(
        "--pick",
        nargs="+",
        metavar="I",
        help="with --random or --small-extents: measure only these indices of the sample, each "
        "an index or a range such as 100-199 (to rerun shapes of a run, or to split one over "
        "several calls)",
    )
    parser.add_argument(
        "--merge",
        nargs="+",
        metavar="CSV",
        help="with --random or --small-extents: summarize the rows of earlier runs' CSVs (one "
        "run split with --pick) instead of measuring: the tables, CSV and plot into --out",
    )
    parser.add_argument(
        "--no-compile",
        action="store_true",
        help="with --random or --dims on a GPU: leave out torch.compile (compiling takes ~1-2 s "
        "a shape)",
    )
    parser.add_argument(
        "--small-extents",
        action="store_true",
        help="(outer, 2-8, inner 1-4096) summed over the middle dim, float32 and bfloat16, "
        "64 MiB or more (16 on the CPU): auto against the roofline (and torch.sum)",
    )
    parser.add_argument(
        "--max-seconds",
        type=float,
        help="with --random or --small-extents: stop before a shape that might end past this "
        "many seconds of measuring (judged by the longest so far) and report what was measured",
    )
    parser.add_argument("--out", default="results", help="folder for the CSV, JSON and PNG")
    args = parser.parse_args(argv)
    if args.random is not None or args.small_extents:
        return run_random(args, sys.argv[1:] if argv is None else argv)
    if args.cpu or (not torch.cuda.is_available() and not args.dims and not args.stages_table):
        return cpu.main(args, sys.argv[1:] if argv is None else argv)
    if args.stages_table:
        return stages.main([])
    if args.dims:
        return run_dims(args, argv)

    check_bench_extra()
    device, impls, rows, wall = run(args)
    print("\nWall time per call (torch.utils.benchmark, host overhead included):")
    benchmark.Compare(wall).print()
    if torch.cuda.is_available():
        print("GPU time per call (CUDA events over a loop, inputs rotated over 1 GiB):")
        benchmark.Compare(gpu_compare(rows)).print()
    print(throughput_table(rows, impls, device))

    out = pathlib.Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    write_csv(rows, out / "sweep.csv")
    write_device_json(out / "device.json", device, argv or sys.argv[1:])
    plot(rows, impls, device, out / "sweep.png")
    print(f"\nWrote {out / 'sweep.csv'}, {out / 'device.json'} and {out / 'sweep.png'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
