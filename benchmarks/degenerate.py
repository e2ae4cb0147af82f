"""Sums that need no reduction, timed against torch.sum: an empty reduced dim with large
kept dims (a fill of zeros), a size-1 reduced dim (a copy) and a 0-d input. Each should
cost about what torch.sum's does: a fill, a copy, a call's overhead.

    python benchmarks/degenerate.py [--device cpu cuda] [--scale 1.0] [--repeats 9]

Median wall time of `repeats` calls after a warm-up, ours and torch.sum's in turns
(CUDA synchronized around each), in ms; results checked equal to torch.sum's. --scale
shrinks the large dims (0.25: a sixteenth of the elements) for a quick look.
"""

import argparse
import statistics
import time

import torch

import warpreduce_torch as wr


def cases(scale):
    big = max(1, int(1025 * scale))
    mid = max(1, int(293 * scale))
    return [
        # (name, shape, dtype, dim, keepdim)
        (
            f"float16 3x{big}x0x{mid}x{big}, dims (0, 2), keepdim: zeros",
            (3, big, 0, mid, big),
            torch.float16,
            (0, 2),
            True,
        ),
        (
            f"float16 {big}x1x{mid}x{big}, dim 1: a copy",
            (big, 1, mid, big),
            torch.float16,
            1,
            False,
        ),
        (f"float32 {big}x{mid}x1, dim -1, keepdim: a copy", (big, mid, 1), torch.float32, -1, True),
        ("float32 0-d", (), torch.float32, None, False),
    ]


def median_ms(fns, device, repeats):
    """Median ms per call of each of fns, timed in turns (one call of each a round), so
    that the host's state (the allocator's, the page cache's) falls on all alike."""

    def sync():
        if device == "cuda":
            torch.cuda.synchronize()

    for fn in fns * 2:  # warm-up: malloc's thresholds and pools settle on these sizes
        fn()
    times = [[] for _ in fns]
    for _ in range(repeats):
        for fn, t in zip(fns, times, strict=True):
            sync()
            start = time.perf_counter()
            fn()
            sync()
            t.append((time.perf_counter() - start) * 1e3)
    return [statistics.median(t) for t in times]


def compare(name, x, dim, keepdim, device, repeats):
    """One table row; False where the results differ."""
    ours, theirs = wr.sum(x, dim, keepdim), torch.sum(x, dim, keepdim)
    same = ours.shape == theirs.shape and ours.dtype == theirs.dtype and torch.equal(ours, theirs)
    del ours, theirs
    t_ours, t_theirs = median_ms(
        [lambda: wr.sum(x, dim, keepdim), lambda: torch.sum(x, dim, keepdim)], device, repeats
    )
    print(
        f"| {name} | {device} | {t_ours:.3f} | {t_theirs:.3f} | {t_ours / t_theirs:.2f} |"
        + ("" if same else " WRONG |"),
        flush=True,
    )
    return same


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--device", nargs="+", default=None, help="default: cpu, and cuda if there is a GPU"
    )
    parser.add_argument("--scale", type=float, default=1.0)
    parser.add_argument("--repeats", type=int, default=9)
    args = parser.parse_args()
    devices = args.device or (["cpu", "cuda"] if torch.cuda.is_available() else ["cpu"])
    print("| case | device | warpreduce_torch.sum (ms) | torch.sum (ms) | ratio |")
    print("| --- | --- | ---: | ---: | ---: |")
    ok = True
    for device in devices:
        for name, shape, dtype, dim, keepdim in cases(args.scale):
            x = (torch.randn(shape, device=device) + 0.5).to(dtype)
            ok = compare(name, x, dim, keepdim, device, args.repeats) and ok
            del x
            if device == "cuda":
                torch.cuda.empty_cache()
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
