"""The optimisation story on the GPU at hand: the staged kernels' table (Harris,
"Optimizing Parallel Reduction in CUDA"), measured here.

For each kernel in stage order, then auto, cub and torch.sum: median GPU time per call,
GB/s of input, percent of the theoretical peak, the speedup over the row above (step)
and over kernel 1 (cumulative).

    python -m warpreduce_torch.bench.stages --sizes 24 28 --dtypes int32 float32
"""

import argparse
import datetime

import torch

import warpreduce_torch as wr

from .timing import DTYPES, Device, gpu_time, implementation, rotating_inputs


def stage_rows(n, dtype, device):
    names = wr.kernels("cuda") + ["torch.sum"]
    inputs = rotating_inputs(n, dtype, "cuda")
    rows, first, previous = [], None, None
    for name in names:
        seconds = gpu_time(implementation(name), inputs)
        gbps = n * dtype.itemsize / seconds / 1e9
        first = first or seconds
        rows.append(
            {
                "kernel": name,
                "us": seconds * 1e6,
                "gbps": gbps,
                "peak_pct": 100 * gbps / device.peak_gbps,
                "step": previous / seconds if previous else 1.0,
                "cumulative": first / seconds,
            }
        )
        previous = seconds
    del inputs
    torch.cuda.empty_cache()
    return rows


def markdown_table(rows, device):
    lines = [
        f"| # | kernel | time (us) | GB/s | % of peak ({device.peak_gbps:.0f} GB/s) "
        "| step speedup | cumulative speedup |",
        "|---|---|---|---|---|---|---|",
    ]
    stages = len(wr.kernels("cuda", "stage"))
    for i, r in enumerate(rows, 1):
        number = str(i) if i <= stages else ""
        lines.append(
            f"| {number} | {r['kernel']} | {r['us']:.1f} | {r['gbps']:.0f} | {r['peak_pct']:.1f}% "
            f"| {r['step']:.2f}x | {r['cumulative']:.2f}x |"
        )
    return "\n".join(lines)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[24, 28], help="log2 of N")
    parser.add_argument("--dtypes", nargs="+", default=["int32", "float32"], choices=DTYPES)
    args = parser.parse_args(argv)
    if not torch.cuda.is_available():
        print("No GPU found: the stages table needs a CUDA device.")
        return 0
    device = Device.current()
    print(f"# Staged kernels on {device.describe()}")
    print(
        f"# {datetime.date.today()}, torch {torch.__version__}, "
        "GPU time per call from CUDA events over a loop, inputs rotated over 1 GiB\n"
    )
    for log2 in args.sizes:
        for name in args.dtypes:
            rows = stage_rows(1 << log2, DTYPES[name], device)
            print(f"### N = 2^{log2}, {name}\n")
            print(markdown_table(rows, device), "\n", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
