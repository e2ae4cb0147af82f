"""warpreduce_torch.sum from many threads at once, every result checked against torch.sum.

    python benchmarks/stress/concurrency.py [--device cuda] [--threads 8] [--seconds 30]

Threads, each on its own stream, plus one on the default stream, call every kernel on
random shapes, dtypes, layouts and dims for a fixed time; on CUDA one more thread captures
sums into CUDA graphs and replays them on new data meanwhile. A watchdog ends the process
(exit 2, every thread's stack printed) if a thread stops making progress: a deadlock.
Exit status and SKIP as in common.py.
"""

import argparse
import contextlib
import gc
import random
import sys
import time

import torch
from common import (
    call_batch,
    capture,
    cuda_or_skip,
    mib,
    random_call,
    replay_checked,
    rss_bytes,
    run_threads,
    summarize,
    verdict,
)

import warpreduce_torch as wr


def eager_worker(device, stream, kernels, max_elements, seed):
    """Random calls in batches queued before any is checked, so that several are in
    flight on the stream at once; each checked against torch.sum on the same stream."""

    def work(stop, tally):
        rng = random.Random(seed)
        ctx = torch.cuda.stream(stream) if stream is not None else contextlib.nullcontext()
        with ctx:
            while not stop.is_set():
                call_batch(rng, device, kernels, max_elements, tally)

    return work


def graph_worker(device, kernels, max_elements, seed, replays=3):
    """Captures one random call at a time into a CUDA graph on a side stream, then replays
    it on new data, while the other threads run eagerly. thread_local capture mode: the
    other threads may allocate meanwhile."""

    def work(stop, tally):
        rng = random.Random(seed)
        side = torch.cuda.Stream(device)
        while not stop.is_set():
            call = random_call(rng, device, kernels, max_elements)
            if 0 in call.shape:
                continue  # nothing to launch: an empty graph
            try:
                captured = capture(call, device, side, 2, capture_error_mode="thread_local")
            except Exception as e:  # noqa: BLE001
                tally.note("error", call, f"capture: {type(e).__name__}: {e}"[:300])
                tally.progress = time.monotonic()
                continue
            tally.captures += 1
            seeds = [call.seed + r + 1 for r in range(replays)]
            replay_checked(captured, call, device, side, tally, seeds)
            del captured
            tally.progress = time.monotonic()

    return work


def concurrency(args):
    device = args.device
    if device == "cuda":
        cuda_or_skip()
    kernels = wr.kernels(device)
    # Smaller inputs on the CPU, whose threads share two to sixteen cores.
    max_elements = args.max_elements or (1 << 21 if device == "cuda" else 1 << 16)
    targets = {}
    for i in range(args.threads):
        stream = torch.cuda.Stream() if device == "cuda" else None
        targets[f"stream-{i}"] = eager_worker(device, stream, kernels, max_elements, args.seed + i)
    if device == "cuda":
        targets["default-stream"] = eager_worker(
            device, torch.cuda.default_stream(), kernels, max_elements, args.seed + 1000
        )
        if not args.no_graphs:
            targets["graphs"] = graph_worker(device, kernels, max_elements // 4, args.seed + 2000)
        torch.cuda.synchronize()
        before = torch.cuda.memory_allocated()
    rss_before = rss_bytes()
    tallies, elapsed = run_threads(targets, args.seconds, args.stall)
    calls, wrong, errors = summarize(tallies)
    if device == "cuda":
        threads = (
            f"{len(targets)} threads ({args.threads} on streams of their own, 1 on the "
            f"default stream{', 1 capturing CUDA graphs' if 'graphs' in targets else ''})"
        )
    else:
        threads = f"{len(targets)} threads"
    line = (
        f"concurrency: {device}, {threads}, {elapsed:.1f} s, {calls} calls, "
        f"{len(kernels)} kernels, wrong {wrong}, errors {errors}"
    )
    if "graphs" in tallies:
        g = tallies["graphs"]
        line += f", {g.captures} graphs captured, {g.replays} replays"
    gc.collect()
    if device == "cuda":
        torch.cuda.synchronize()
        line += f", allocated {mib(before)} -> {mib(torch.cuda.memory_allocated())}"
    line += f", rss {mib(rss_before)} -> {mib(rss_bytes())}"
    ok = wrong == 0 and errors == 0 and calls > 0
    ok = ok and ("graphs" not in tallies or tallies["graphs"].captures > 0)
    return verdict(ok, line)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--device", choices=["cuda", "cpu"], default="cuda")
    parser.add_argument("--threads", type=int, default=8, help="threads on a stream each")
    parser.add_argument("--seconds", type=float, default=30)
    parser.add_argument(
        "--max-elements", type=int, default=0, help="of a random shape (0: by device)"
    )
    parser.add_argument("--no-graphs", action="store_true")
    parser.add_argument("--stall", type=float, default=120, help="seconds without progress: a hang")
    parser.add_argument("--seed", type=int, default=0)
    return concurrency(parser.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
