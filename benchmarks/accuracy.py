"""Float accuracy of auto, cub and torch.sum over many random inputs: the error of each
result against a float64 sum of the same input, relative to sum(|x|), mean and max over
inputs. One input says little: near the rounding of the result itself (half an ulp of
a float32 sum is ~3e-8 of sum|x| here) which implementation lands closer is luck.

    python benchmarks/accuracy.py [--sizes 11 14 17 20 22 24 26 28] [--inputs 8]

Inputs: for each size, `--inputs` seeds of each of three distributions: normal with mean
0.5 (the benchmark's), normal with mean 0 (cancellation), uniform on [0, 1).
"""

import argparse
import statistics

import torch

import warpreduce_torch as wr

parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
parser.add_argument("--sizes", type=int, nargs="+", default=[11, 14, 17, 20, 22, 24, 26, 28])
parser.add_argument("--dtypes", nargs="+", default=["float32", "bfloat16", "float16"])
parser.add_argument("--inputs", type=int, default=8, help="seeds per distribution and size")
args = parser.parse_args()

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"  # the CPU: a dry run of the script
IMPLS = {"auto": wr.sum, "cub": lambda x: wr.sum(x, kernel="cub"), "torch.sum": torch.sum}
if DEVICE == "cpu":
    del IMPLS["cub"]
DISTRIBUTIONS = {
    "normal(0.5, 1)": lambda n, g: torch.randn(n, generator=g, device=DEVICE) + 0.5,
    "normal(0, 1)": lambda n, g: torch.randn(n, generator=g, device=DEVICE),
    "uniform(0, 1)": lambda n, g: torch.rand(n, generator=g, device=DEVICE),
}

device_name = torch.cuda.get_device_name() if DEVICE == "cuda" else "cpu"
print(f"{device_name}, torch {torch.__version__}: error / sum|x| against a float64 sum, up to "
      f"{3 * args.inputs} inputs a row (3 distributions x {args.inputs} seeds; float16 "
      "leaves out the inputs whose sum overflows it)\n")
print("| dtype | size | inputs | " + " | ".join(f"{n} mean | {n} max" for n in IMPLS)
      + " | auto mean / torch.sum mean |")
print("|---|---|---|" + "---|---|" * len(IMPLS) + "---|")
for dtype_name in args.dtypes:
    dtype = getattr(torch, dtype_name)
    for log2 in args.sizes:
        errors = {name: [] for name in IMPLS}
        for d, make in enumerate(DISTRIBUTIONS.values()):
            for seed in range(args.inputs):
                g = torch.Generator(DEVICE).manual_seed(1000 * d + seed)
                x = make(1 << log2, g).to(dtype)
                x64 = x.double()
                ref, scale = x64.sum().item(), x64.abs().sum().item()
                if abs(ref) > torch.finfo(dtype).max:
                    continue  # the sum overflows the dtype (float16): inf for everyone
                for name, fn in IMPLS.items():
                    errors[name].append(abs(fn(x).double().item() - ref) / scale)
                del x, x64
        count = len(errors["auto"])
        if count == 0:
            continue
        means = {name: statistics.fmean(e) for name, e in errors.items()}
        cells = " | ".join(f"{means[n]:.2e} | {max(errors[n]):.2e}" for n in IMPLS)
        ratio = means["auto"] / means["torch.sum"] if means["torch.sum"] else float("nan")
        print(f"| {dtype_name} | 2^{log2} | {count} | {cells} | {ratio:.2f} |")
    if DEVICE == "cuda":
        torch.cuda.empty_cache()
