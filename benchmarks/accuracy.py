"""How close is a float sum to the exact one? For auto, cub and torch.sum, over many
random inputs a size: the distance of the result from the correctly rounded sum in units
in the last place (0: correctly rounded; 1: the next float), and the error relative to
sum(|x|), mean and max over inputs. One input says little: near the result's own
rounding, which implementation lands closer is luck.

    python benchmarks/accuracy.py [--sizes 10 12 ... 28] [--inputs 6] [--dtypes float32]

Inputs, `--inputs` seeds of each: normal with mean 0.5, normal with mean 0 (sums that
cancel), uniform on [0, 1), and heavy cancellation (each value next to its negation plus
a thousandth of noise, shuffled: sum(|x|) is ~1000 sqrt(n) times the sum). The exact sum
is the float64 sum of the inputs (float32 values, at most 2^28 of them: their float64
sum is exact to ~2^-24 ulp of the float32 result on these inputs).
"""

import argparse
import statistics

import torch

import warpreduce_torch as wr


def distributions(device):
    def heavy_cancellation(n, g):
        half = torch.randn(n // 2, generator=g, device=device)
        noise = 1e-3 * torch.randn(n // 2, generator=g, device=device)
        x = torch.cat([half, -half + noise, torch.randn(n % 2, generator=g, device=device)])
        return x[torch.randperm(n, generator=g, device=device)]

    return {
        "normal(0.5, 1)": lambda n, g: torch.randn(n, generator=g, device=device) + 0.5,
        "normal(0, 1)": lambda n, g: torch.randn(n, generator=g, device=device),
        "uniform(0, 1)": lambda n, g: torch.rand(n, generator=g, device=device),
        "heavy cancellation": heavy_cancellation,
    }


def ulps_from_correctly_rounded(result, exact, dtype):
    """|result - round(exact)| in ulps of round(exact) (round: to the nearest `dtype`)."""
    rounded = torch.tensor(exact, dtype=torch.float64).to(dtype)
    ulp = torch.nextafter(rounded.abs(), torch.tensor(float("inf"), dtype=dtype)) - rounded.abs()
    ulp = ulp.double().item() or torch.finfo(dtype).tiny
    return abs(float(result) - rounded.double().item()) / ulp


def measure(impls, dtype, log2, inputs, device):
    """Per implementation: (ulps, relative errors) over the inputs of every distribution."""
    found = {name: ([], []) for name in impls}
    for d, make in enumerate(distributions(device).values()):
        for seed in range(inputs):
            g = torch.Generator(device).manual_seed(1000 * d + seed)
            x = make(1 << log2, g).to(dtype)
            x64 = x.double()
            exact, scale = x64.sum().item(), x64.abs().sum().item()
            if abs(exact) > torch.finfo(dtype).max:
                continue  # the sum overflows the dtype (float16): inf for everyone
            for name, fn in impls.items():
                result = fn(x).double().item()
                found[name][0].append(ulps_from_correctly_rounded(result, exact, dtype))
                found[name][1].append(abs(result - exact) / max(scale, 1e-300))
            del x, x64
    return found


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=list(range(10, 29, 2)))
    parser.add_argument("--dtypes", nargs="+", default=["float32", "bfloat16", "float16"])
    parser.add_argument("--inputs", type=int, default=6, help="seeds per distribution and size")
    args = parser.parse_args(argv)

    device = "cuda" if torch.cuda.is_available() else "cpu"
    impls = {"auto": wr.sum, "cub": lambda x: wr.sum(x, kernel="cub"), "torch.sum": torch.sum}
    if device == "cpu":
        del impls["cub"]
    name = torch.cuda.get_device_name() if device == "cuda" else "cpu"
    print(
        f"{name}, torch {torch.__version__}: ulps from the correctly rounded sum and "
        f"error / sum|x|, {len(distributions(device))} distributions x {args.inputs} inputs a size\n"
    )
    print(
        "| dtype | size | inputs | "
        + " | ".join(f"{n} ulps max / mean | {n} err/sum|x| mean" for n in impls)
        + " |"
    )
    print("|---|---|---|" + "---|---|" * len(impls))
    for dtype_name in args.dtypes:
        dtype = getattr(torch, dtype_name)
        for log2 in args.sizes:
            found = measure(impls, dtype, log2, args.inputs, device)
            count = len(found["auto"][0])
            if count == 0:
                continue
            cells = " | ".join(
                f"{max(u):.2f} / {statistics.fmean(u):.2f} | {statistics.fmean(r):.1e}"
                for u, r in found.values()
            )
            print(f"| {dtype_name} | 2^{log2} | {count} | {cells} |", flush=True)
            if device == "cuda":
                torch.cuda.empty_cache()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
