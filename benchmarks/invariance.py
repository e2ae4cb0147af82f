"""Do a sum's bits depend on how it is computed? torch.sum, warpreduce's auto and exact on
the same float rows, summed in a smaller batch, stored column-major, on the CPU instead of
the GPU; and how many row sums are the correctly rounded exact sum, on ordinary rows and
on rows where large terms cancel.

    python benchmarks/invariance.py [--rows 2048] [--dtypes float32 bfloat16] [--seed 0]

For each dtype and row length (100 to 65536): the share of output elements whose bits
change, and the share that equal the exact sum rounded once (math.fsum of the float64
values, rounded to the dtype; where float64's rounding made a tie, the remainder decides).
Prints a markdown table per dtype. Runs on the GPU when there is one (the CPU column then
compares the GPU's results with the CPU's); without one, the CPU alone.
"""

import argparse
import math

import torch

import warpreduce_torch as wr
from warpreduce_torch.testing import round_float64

LENGTHS = [100, 1000, 4096, 65536]


def rows_of(kind, rows, length, dtype, device, generator):
    if kind == "ordinary":
        x = torch.randn(rows, length, generator=generator, device="cpu")
    else:  # pairs of +-1e30 (+-6e4 for float16) among ordinary values: cancellation
        x = torch.randn(rows, length, generator=generator, device="cpu")
        big = 6e4 if dtype == torch.float16 else (3e38 if dtype == torch.bfloat16 else 1e30)
        k = max(1, length // 16)
        idx = torch.randint(0, length, (rows, k), generator=generator)
        x.scatter_(1, idx, big)
        x.scatter_(1, (idx + 1) % length, -big)
    return x.to(dtype).to(device)


def correctly_rounded(x):
    """Each row's exact sum rounded once to x's dtype. math.fsum gives it rounded to
    float64 (r); r rounded again to a narrower dtype is right except where r is exactly
    halfway between two values of that dtype and the exact sum is not (cancelling rows
    make such ties often): there the sign of the remainder, math.fsum of the row and -r,
    picks the side."""
    rows = x.double().cpu().tolist()
    r = torch.tensor([math.fsum(row) for row in rows], dtype=torch.float64)
    rounded = round_float64(r, x.dtype)
    if x.dtype == torch.float64:
        return rounded
    remainder = torch.tensor([math.fsum(row + [-s]) for row, s in zip(rows, r.tolist())])
    # The neighbour of each rounded value on r's side (one step of its bits).
    bits = {2: torch.int16, 4: torch.int32}[x.element_size()]
    away = r.abs() > rounded.double().abs()
    neighbour = (rounded.view(bits) + torch.where(away, 1, -1).to(bits)).view(x.dtype)
    tie = (rounded.double() + neighbour.double()) / 2 == r
    beyond = remainder * (r - rounded.double()) > 0  # the exact sum past r, away from rounded
    return torch.where(tie & beyond & torch.isfinite(r), neighbour, rounded)


def share_changed(a, b):
    a, b = a.cpu(), b.cpu()
    bits = (
        torch.int16
        if a.element_size() == 2
        else torch.int32
        if a.element_size() == 4
        else torch.int64
    )
    return (a.contiguous().view(bits) != b.contiguous().view(bits)).double().mean().item()


def measure(fn, x, exact):
    """The four invariance figures for one implementation fn(x) -> row sums."""
    full = fn(x)
    batch = []
    for b in (1, 7, x.shape[0] // 3):
        batch.append(share_changed(fn(x[:b]), full[:b]))
    column_major = fn(x.t().contiguous().t())
    cpu = fn(x.cpu()) if x.is_cuda else full
    return {
        "batch": max(batch),
        "column-major": share_changed(column_major, full),
        "cpu": share_changed(cpu, full),
        "correctly rounded": 1 - share_changed(full, exact),
    }


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=2048)
    parser.add_argument("--dtypes", nargs="+", default=["float32", "bfloat16"])
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    device = "cuda" if torch.cuda.is_available() else "cpu"
    impls = {
        "torch.sum": lambda t: torch.sum(t, -1),
        "auto": lambda t: wr.sum(t, -1),
        "exact": lambda t: wr.sum(t, -1, kernel="exact"),
    }
    print(f"# Invariance of row sums ({device}, {args.rows} rows a length, seed {args.seed})\n")
    print("Share of outputs whose bits change (batch: the most over batches of 1, 7 and a")
    print("third of the rows; column-major: the same values stored transposed; cpu: the CPU's")
    print("sum against the GPU's), and share equal to the correctly rounded exact sum.\n")
    for name in args.dtypes:
        dtype = getattr(torch, name)
        generator = torch.Generator().manual_seed(args.seed)
        print(f"## {name}\n")
        print("| rows | length | implementation | batch | column-major | cpu | correctly rounded |")
        print("|---|---|---|---|---|---|---|")
        for kind in ("ordinary", "cancelling"):
            for length in LENGTHS:
                rows = max(8, args.rows * 1024 // max(length, 1024))
                x = rows_of(kind, rows, length, dtype, device, generator)
                exact = correctly_rounded(x)
                for impl, fn in impls.items():
                    m = measure(fn, x, exact)
                    print(
                        f"| {kind} | {length} | {impl} | {m['batch']:.0%} | "
                        f"{m['column-major']:.0%} | {m['cpu']:.0%} | {m['correctly rounded']:.0%} |"
                    )
        print()


if __name__ == "__main__":
    main()
