"""warpreduce_torch.sum with two GPUs: inputs on the device that is not current.

    python benchmarks/stress/multi_gpu.py [--threads 4] [--seconds 20]

Inputs on one GPU while the thread's current device is another, streams on each device,
results on the input's device; CUDA graphs captured on the second GPU. Skips with fewer
than two GPUs. Exit status and SKIP as in common.py.
"""

import argparse
import gc
import random
import sys
import traceback

import torch
from common import (
    Call,
    Tally,
    call_batch,
    capture,
    cuda_or_skip,
    mib,
    replay_checked,
    run_threads,
    summarize,
    verdict,
)

import warpreduce_torch as wr


def cross_device_worker(data_device, current_device, side_stream, kernels, max_elements, seed):
    """Inputs on data_device, made and summed on a stream of data_device (a side stream,
    or its default stream), while the thread's current device is current_device."""

    def work(stop, tally):
        rng = random.Random(seed)
        if side_stream:
            stream = torch.cuda.Stream(data_device)
        else:
            stream = torch.cuda.default_stream(data_device)
        torch.cuda.set_stream(stream)  # also makes data_device current
        torch.cuda.set_device(current_device)
        assert torch.cuda.current_device() == current_device
        assert torch.cuda.current_stream(data_device) == stream
        dev = f"cuda:{data_device}"
        while not stop.is_set():
            call = call_batch(rng, dev, kernels, max_elements, tally)
            if torch.cuda.current_device() != current_device:
                tally.note("error", call, "the call changed the thread's current device")

    return work


def graphs_on(device_index, current_device, kernels, tally):
    """One capture and replays per kernel, of a split full sum and a split dim sum, on
    device_index while current_device is current outside the capture."""
    torch.cuda.set_device(current_device)
    dev = f"cuda:{device_index}"
    with torch.cuda.device(device_index):
        side = torch.cuda.Stream()
        for kernel in kernels:
            for shape, dim in (((1 << 20) + 3,), None), ((1 << 16, 128), 0):
                call = Call(shape, torch.float32, "contiguous", dim, False, None, kernel, 7)
                captured = capture(call, dev, side)
                tally.captures += 1
                _, _, view, out = captured
                if out.device != view.device:
                    tally.note("wrong", call, f"captured result on {out.device}")
                replay_checked(captured, call, dev, side, tally, [100, 101, 102])


def multi_gpu(args):
    cuda_or_skip(devices=2)
    kernels = wr.kernels("cuda")
    before = [torch.cuda.memory_allocated(d) for d in (0, 1)]
    graph_tally = Tally("graphs-on-cuda:1")
    try:
        graphs_on(1, 0, kernels, graph_tally)
    except Exception:  # noqa: BLE001
        graph_tally.errors += 1
        graph_tally.notes.append(f"graphs on cuda:1: DIED\n{traceback.format_exc()}")
    targets = {}
    for i in range(args.threads):
        # Half the threads each way; of each half, every other on the data device's
        # default stream.
        data, current, side = i % 2, (i + 1) % 2, i // 2 % 2 == 0
        name = f"data-cuda:{data}-current-cuda:{current}-{'side' if side else 'default'}-{i}"
        targets[name] = cross_device_worker(
            data, current, side, kernels, args.max_elements or (1 << 20), args.seed + i
        )
    tallies, elapsed = run_threads(targets, args.seconds, args.stall)
    tallies[graph_tally.name] = graph_tally
    calls, wrong, errors = summarize(tallies)
    gc.collect()
    for d in (0, 1):
        torch.cuda.synchronize(d)
    after = [torch.cuda.memory_allocated(d) for d in (0, 1)]
    line = (
        f"multi-gpu: {torch.cuda.device_count()} GPUs, {args.threads} threads with inputs "
        f"on the device that is not current (on a side or the default stream of the "
        f"input's), {elapsed:.1f} s, {calls} calls, "
        f"{graph_tally.captures} graphs captured on cuda:1 / {graph_tally.replays} replays, "
        f"wrong {wrong}, errors {errors}, allocated cuda:0 {mib(before[0])} -> "
        f"{mib(after[0])}, cuda:1 {mib(before[1])} -> {mib(after[1])}"
    )
    return verdict(wrong == 0 and errors == 0 and calls > 0, line)


def main(argv=None):
    # Each stress script keeps its own command line: the same shape as memory.py's, on
    # purpose (a shared helper would hide which options a script takes).
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--threads", type=int, default=4)
    parser.add_argument("--seconds", type=float, default=20)
    parser.add_argument("--max-elements", type=int, default=0)
    parser.add_argument("--stall", type=float, default=120)
    parser.add_argument("--seed", type=int, default=0)
    return multi_gpu(parser.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
