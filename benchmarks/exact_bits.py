"""kernel="exact" gives the same bits everywhere: on the CPU and the GPU, on one GPU model
and another, whatever the layout, batch or launch. Sums a fixed set of seeded inputs
(every float dtype; full sums, rows, columns, small extents, strided and permuted views,
cancelling and tie-making data), checks that the GPU's results equal the CPU's bit for
bit and that every layout and batch gives the same bits, and writes a digest of the
results (SHA-256 of their bytes, case by case) to compare with another machine's.

    python benchmarks/exact_bits.py --write bits.json          # this machine's digest
    python benchmarks/exact_bits.py --compare benchmarks/exact_bits_h200.json

Exits nonzero on any difference."""

import argparse
import hashlib
import json
import sys

import torch

import warpreduce_torch as wr

DTYPES = [torch.float16, torch.bfloat16, torch.float32, torch.float64]
# (name, shape, dims)
SHAPES = [
    ("full", (1 << 20,), None),
    ("rows", (4096, 1000), [1]),
    ("short rows", (65536, 7), [1]),
    ("columns", (1000, 4096), [0]),
    ("small extent", (4096, 3, 64), [1]),
    ("two dims", (64, 33, 257), [0, 2]),
]


def inputs(dtype, shape, kind, seed):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(shape, generator=g)
    if kind == "cancelling":  # huge pairs that cancel, among ordinary values
        big = {torch.float16: 6e4, torch.bfloat16: 3e38}.get(dtype, 1e30)
        flat = x.view(-1)
        idx = torch.randint(0, flat.numel() - 1, (max(1, flat.numel() // 64),), generator=g)
        flat[idx] = big
        flat[idx + 1] = -big
    if kind == "ties":  # 1, a half ulp of it, and small terms: sums near rounding ties
        eps = torch.finfo(dtype).eps
        x = torch.where(torch.rand(shape, generator=g) < 0.5, 1.0, eps / 2)
    return x.to(dtype)


def views(x, dims):
    """The same values in other layouts, and the sum's dims there."""
    yield "contiguous", x, dims
    yield "transposed", x.t().contiguous().t() if x.dim() == 2 else x.flip(0).flip(0), dims
    if x.dim() >= 2:
        perm = list(range(x.dim()))[::-1]
        stored = x.permute(*perm).contiguous().permute(*perm)  # column-major storage
        yield "column-major", stored, dims


def bits(t):
    """t's bytes on the CPU (flat: torch 2.11 views no 0-d tensor as bytes)."""
    return t.cpu().reshape(-1).view(torch.uint8)


def digest(t):
    return hashlib.sha256(bits(t).numpy().tobytes()).hexdigest()[:16]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--write", help="write this machine's digest (JSON) here")
    parser.add_argument("--compare", help="a digest from another machine to compare with")
    args = parser.parse_args(argv)
    device = "cuda" if torch.cuda.is_available() else "cpu"
    failures, results = [], {}
    for dtype in DTYPES:
        for name, shape, dims in SHAPES:
            for kind in ("ordinary", "cancelling", "ties"):
                x = inputs(dtype, shape, kind, seed=len(results))
                reference = wr.sum(x, dims, kernel="exact")  # the CPU's
                case = f"{str(dtype)[6:]} {name} {kind}"
                results[case] = digest(reference)
                for layout, v, d in views(x.to(device), dims):
                    got = wr.sum(v, d, kernel="exact")
                    if not torch.equal(bits(got), bits(reference)):
                        failures.append(f"{case}: {layout} on {device} differs from the CPU")
                if dims == [1] and shape[0] > 64:  # the same rows in a smaller batch
                    part = wr.sum(x[:37].to(device), dims, kernel="exact").cpu()
                    if not torch.equal(bits(part), bits(reference[:37])):
                        failures.append(f"{case}: a batch of 37 rows differs")
    name = torch.cuda.get_device_name() if device == "cuda" else "cpu"
    print(f"{len(results)} cases on {name}: {len(failures)} differences")
    for f in failures:
        print("  " + f)
    if args.write:
        with open(args.write, "w") as f:
            json.dump({"device": name, "torch": torch.__version__, "digests": results}, f, indent=1)
    if args.compare:
        with open(args.compare) as f:
            other = json.load(f)
        differ = [c for c, d in results.items() if other["digests"].get(c) != d]
        print(f"against {other['device']}: {len(differ)} of {len(results)} cases differ")
        failures += differ
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
