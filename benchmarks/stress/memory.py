"""Allocated and resident memory stay flat over many calls of warpreduce_torch.sum.

    python benchmarks/stress/memory.py [--device cuda] [--calls 100000]

Many calls with varying shapes, dtypes and streams; the caching allocator's allocated
bytes and the process's resident memory come back to their level after a warm-up, within
a bound. Exit status and SKIP as in common.py.
"""

import argparse
import contextlib
import gc
import random
import sys
import time

import torch
from common import PATH_CASES, MiB, cuda_or_skip, mib, random_call, rss_bytes, verdict

import warpreduce_torch as wr
from warpreduce_torch.testing import random_tensor


def memory(args):
    device = args.device
    if device == "cuda":
        cuda_or_skip()
        streams = [torch.cuda.default_stream()] + [torch.cuda.Stream() for _ in range(args.streams)]
    else:
        streams = [None]
    kernels = wr.kernels(device)
    max_elements = args.max_elements or (1 << 18 if device == "cuda" else 1 << 14)
    rng = random.Random(args.seed)

    def calls(count):
        for i in range(count):
            stream = streams[i % len(streams)]
            ctx = torch.cuda.stream(stream) if stream is not None else contextlib.nullcontext()
            call = random_call(rng, device, kernels, max_elements, path_share=0.05)
            with ctx:
                _, x = call.base_and_view(device)
                got = call.run(x)
                if i % args.check_every == 0:
                    call.check(got, x)
            del x, got

    def level():
        gc.collect()
        if device == "cuda":
            torch.cuda.synchronize()
            return torch.cuda.memory_allocated(), rss_bytes()
        return 0, rss_bytes()

    # Warm-up: every stream's scratch made, the allocator's and malloc's pools grown to
    # what this mix of calls needs, every kernel's first launch done.
    for stream in streams:
        with torch.cuda.stream(stream) if stream is not None else contextlib.nullcontext():
            for shape, dim in PATH_CASES[:2]:
                wr.sum(random_tensor(shape, torch.float32, device, 0), dim)
    warmup = args.warmup if args.warmup is not None else max(200, args.calls // 10)
    calls(warmup)
    alloc0, rss0 = level()
    start = time.monotonic()
    checkpoints = []
    step = max(1, args.calls // 10)
    done = 0
    failed_check = None
    try:
        while done < args.calls:
            n = min(step, args.calls - done)
            calls(n)
            done += n
            checkpoints.append(level())
    except AssertionError as e:
        failed_check = str(e)[:300]
    elapsed = time.monotonic() - start
    alloc1, rss1 = level()
    print("rss at each tenth: " + ", ".join(f"{r / MiB:.0f}" for _, r in checkpoints) + " MiB")
    ok = failed_check is None
    if failed_check:
        print(f"WRONG result: {failed_check}")
    alloc_growth, rss_growth = alloc1 - alloc0, rss1 - rss0
    ok = ok and alloc_growth <= args.max_alloc_kib * 1024 and rss_growth <= args.max_rss_mib * MiB
    line = (
        f"memory: {device}, {done} calls after {warmup} warm-up calls, "
        f"{len(streams) if device == 'cuda' else 1} streams, {len(kernels)} kernels, "
        f"{elapsed:.1f} s, results checked every {args.check_every}, "
        f"rss {mib(rss0)} -> {mib(rss1)} (bound +{args.max_rss_mib} MiB)"
    )
    if device == "cuda":
        line += f", allocated {mib(alloc0)} -> {mib(alloc1)} (bound +{args.max_alloc_kib} KiB)"
    return verdict(ok, line)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--device", choices=["cuda", "cpu"], default="cuda")
    parser.add_argument("--calls", type=int, default=100_000)
    parser.add_argument(
        "--warmup",
        type=int,
        default=None,
        help="calls before the first level (default: a tenth of --calls)",
    )
    parser.add_argument(
        "--streams", type=int, default=4, help="side streams, besides the default one"
    )
    parser.add_argument(
        "--max-elements", type=int, default=0, help="of a random shape (0: by device)"
    )
    parser.add_argument("--check-every", type=int, default=1, help="check every n-th result")
    parser.add_argument("--max-alloc-kib", type=float, default=64)
    parser.add_argument("--max-rss-mib", type=float, default=16)
    parser.add_argument("--seed", type=int, default=0)
    return memory(parser.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
