"""Where a random case's time goes: for the rows of a random-shape CSV below a ratio of
auto / torch.sum, the event-timed loop (as the benchmark times it), the kernels alone
(torch.profiler, device time per call) and the host's time per call (calls issued with no
synchronisation, against a GPU kept busy), for torch.sum and auto, with auto's kernels by
name. A loop time well above the kernel time means launch gaps or a host that cannot keep
up; a kernel time above torch.sum's the kernels themselves.

    python benchmarks/why_slow.py benchmarks/random_h100.csv [--below 0.95] [--limit 40]
"""

import argparse
import ast
import collections
import csv
import functools
import time

import torch
from torch.profiler import ProfilerActivity, profile

from warpreduce_torch.bench.random_shapes import Case, needed_bytes, plan_passes
from warpreduce_torch.bench.timing import GpuLoop, implementation, rotated


def case_of(row):
    layout, _, order = row["layout"].partition(" ")
    dims = None if row["dims"] == "all" else tuple(int(d) for d in row["dims"].split(","))
    shape = tuple(int(s) for s in row["shape"].split("x"))
    return Case(shape, dims, layout, row["dtype"], ast.literal_eval(order) if order else ())


def kernel_us(fn, inputs, calls=50):
    """Device time per call of each kernel name, and in all."""
    for x in inputs[:3]:
        fn(x)
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for i in range(calls):
            fn(inputs[i % len(inputs)])
        torch.cuda.synchronize()
    by_name = collections.Counter()
    for event in prof.events():
        if event.device_type == torch.autograd.DeviceType.CUDA:
            by_name[event.name[:60]] += event.device_time / calls
    return sum(by_name.values()), by_name


def host_events(fn, inputs, calls=50):
    """Host time per call by event (torch.profiler's CPU activity: ATen ops, CUDA
    runtime calls), self time, the largest first."""
    for x in inputs[:3]:
        fn(x)
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        for i in range(calls):
            fn(inputs[i % len(inputs)])
        torch.cuda.synchronize()
    rows = []
    for event in prof.key_averages():
        if event.self_cpu_time_total > 0 and event.key != "cudaDeviceSynchronize":
            rows.append((event.self_cpu_time_total / calls, event.count / calls, event.key[:60]))
    return sorted(rows, reverse=True)[:12]


def host_us(fn, x, calls=200):
    """Host time per call: calls issued without synchronising, behind a long kernel so
    that the GPU never waits for them."""
    busy = torch.empty(1 << 28, device="cuda")
    for _ in range(3):
        fn(x)
    torch.cuda.synchronize()
    busy.mul_(1.0001)  # ~1 ms of GPU work queued ahead of the calls
    started = time.perf_counter()
    for _ in range(calls):
        fn(x)
    spent = time.perf_counter() - started
    torch.cuda.synchronize()
    return spent / calls * 1e6


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("csv")
    parser.add_argument("--below", type=float, default=0.95)
    parser.add_argument("--limit", type=int, default=40)
    parser.add_argument("--host-events", action="store_true", help="host time by event")
    args = parser.parse_args(argv)
    rows = [r for r in csv.DictReader(open(args.csv)) if r["auto_vs_torch.sum"] != ""]
    rows = sorted(rows, key=lambda r: float(r["auto_vs_torch.sum"]))
    rows = [r for r in rows if float(r["auto_vs_torch.sum"]) < args.below][: args.limit]
    for row in rows:
        case = case_of(row)
        probe = case.make("cuda", 0)
        inputs = rotated(functools.partial(case.make, "cuda"), needed_bytes(probe))
        line = [f"{case.name} (was {float(row['auto_vs_torch.sum']):.2f})"]
        for name in ("torch.sum", "auto"):
            fn = implementation(name, case.dims)
            loop = GpuLoop(fn, inputs)
            looped = min(loop.sample() for _ in range(5)) * 1e6
            total, by_name = kernel_us(fn, inputs)
            host = host_us(fn, inputs[0])
            line.append(
                f"  {name:9s} loop {looped:7.1f} us  kernels {total:7.1f} us  host {host:5.1f} us"
            )
            if name == "auto":
                for kernel, us in by_name.most_common():
                    line.append(f"      {us:7.1f} us  {kernel}")
            if args.host_events:
                for us, count, key in host_events(fn, inputs):
                    line.append(f"      host {us:6.2f} us  x{count:4.1f}  {key}")
        line.append(f"  plan: {plan_passes(probe, case.dims)}")
        print("\n".join(line), flush=True)
        del inputs, probe
        torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
