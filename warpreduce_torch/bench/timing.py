"""How the benchmarks measure: the device's peak, inputs that L2 cannot serve, GPU time
per call from CUDA events over a loop, and wall time from torch.utils.benchmark."""

import csv
import dataclasses
import functools
import math
import statistics

import torch
import torch.utils.benchmark as benchmark

import warpreduce_torch as wr
from warpreduce_torch.testing import random_tensor


@dataclasses.dataclass
class Device:
    name: str
    sm_count: int = 0
    l2_bytes: int = 0
    peak_gbps: float = float("nan")  # memory clock x bus width x 2 (DDR)

    @classmethod
    def current(cls):
        if not torch.cuda.is_available():
            return cls(name="cpu")
        p = torch.cuda.get_device_properties(torch.cuda.current_device())
        clock_khz = getattr(p, "memory_clock_rate", 0)
        bus_bits = getattr(p, "memory_bus_width", 0)
        peak = (
            clock_khz * 1e3 * (bus_bits / 8) * 2 / 1e9 if clock_khz and bus_bits else float("nan")
        )
        return cls(p.name, p.multi_processor_count, p.L2_cache_size, peak)

    def describe(self):
        if self.name == "cpu":
            return "cpu (no GPU found)"
        return (
            f"{self.name}, {self.sm_count} SMs, L2 {self.l2_bytes / 2**20:.0f} MiB, "
            f"theoretical peak {self.peak_gbps:.0f} GB/s"
        )


# The dtypes warpreduce.sum takes, by torch's names: the benchmarks' --dtypes choices.
DTYPES = {str(t).removeprefix("torch."): t for t in wr.dtypes()}

ROTATE_BYTES = 1 << 30  # GPU inputs are rotated over at least this much memory, beyond L2
ROUNDS = 7  # interleaved rounds of GPU loops, each implementation taking a turn in each


def rotating_inputs(n, dtype, device, rotate_bytes=ROTATE_BYTES, max_views=4096):
    """Views of n elements spread over one random buffer of at least `rotate_bytes`
    (1 GiB) and two inputs, so that a loop cycling through them reads from DRAM, not
    from the 50-60 MB of L2 of an H100/H200. Views start on 256-element boundaries."""
    if device == "cpu":
        return [random_tensor((n,), dtype, device)]
    step = max(256, -(-n // 256) * 256)
    count = max(2, min(max_views, rotate_bytes // (step * dtype.itemsize)))
    buffer = random_tensor((count * step,), dtype, device)
    return [buffer[i * step : i * step + n] for i in range(count)]


class GpuLoop:
    """GPU time per call: CUDA events around a loop of calls over rotated inputs, divided
    by the count. The loop is long enough (min_loop_s) that launch gaps between calls are
    part of the figure only when the host cannot keep up."""

    def __init__(self, fn, inputs, min_loop_s=0.02):
        self.fn, self.inputs = fn, inputs
        for x in inputs[:3]:
            fn(x)  # warm-up: module load, allocator, autotuning
        torch.cuda.synchronize()
        self.start = torch.cuda.Event(enable_timing=True)
        self.end = torch.cuda.Event(enable_timing=True)
        self.calls = 1
        one = max(self.sample(), 1e-6)
        self.calls = max(len(inputs), min(5000, math.ceil(min_loop_s / one)))

    def sample(self):
        """Seconds per call of one loop."""
        self.start.record()
        for i in range(self.calls):
            self.fn(self.inputs[i % len(self.inputs)])
        self.end.record()
        self.end.synchronize()
        return self.start.elapsed_time(self.end) / 1e3 / self.calls


def rotated(make, nbytes, max_inputs=64):
    """Inputs made by make(seed) for seeds 0, 1, ...: enough of them (two at least,
    max_inputs at most) that a loop over them reads ROTATE_BYTES, when each reads
    `nbytes`."""
    count = max(2, min(max_inputs, ROTATE_BYTES // max(nbytes, 1)))
    return [make(seed) for seed in range(count)]


def interleaved_gpu_times(fns, inputs, rounds=ROUNDS):
    """Median seconds per call of each of `fns` (GpuLoop), the implementations taking
    turns in every round so that drift falls on all alike. `inputs`: the list every
    implementation cycles through, or a dict of such lists by implementation."""
    loops = {
        name: GpuLoop(fn, inputs[name] if isinstance(inputs, dict) else inputs)
        for name, fn in fns.items()
    }
    samples = {name: [] for name in fns}
    for _ in range(rounds):
        for name, loop in loops.items():
            samples[name].append(loop.sample())
    return {name: statistics.median(s) for name, s in samples.items()}


def gpu_time(fn, inputs, min_loop_s=0.02, repeats=7):
    """Median GPU time per call of `repeats` loops (GpuLoop)."""
    loop = GpuLoop(fn, inputs, min_loop_s)
    return statistics.median(loop.sample() for _ in range(repeats))


def wall_measurement(fn, x, label, sub_label, description, min_run_time=0.2, threads=1):
    """torch.utils.benchmark's wall time per call (it synchronizes CUDA around each
    block of calls): what a caller of the op waits, host overhead included; on the CPU at
    `threads` threads (torch.utils.benchmark's default is 1)."""
    timer = benchmark.Timer(
        stmt="fn(x)",
        globals={"fn": fn, "x": x},
        num_threads=threads,
        label=label,
        sub_label=sub_label,
        description=description,
    )
    return timer.blocked_autorange(min_run_time=min_run_time)


def interleaved_wall_times(fns, x, label, sub_label, min_run_time, rounds=5, threads=1):
    """Wall time of each of `fns` (a merged torch.utils.benchmark Measurement), in
    interleaved rounds of min_run_time / rounds seconds each, so that a drift in the
    machine's speed falls on all alike. `x`: the input of every implementation, or a
    dict of inputs by implementation."""
    walls = {name: [] for name in fns}
    for _ in range(rounds):
        for name, fn in fns.items():
            own = x[name] if isinstance(x, dict) else x
            walls[name].append(
                wall_measurement(
                    fn, own, label, sub_label, name, min_run_time / rounds, threads=threads
                )
            )
    return {name: benchmark.Measurement.merge(m)[0] for name, m in walls.items()}


def side_by_side(fns, inputs, label, sub_label, min_run_time, rounds=ROUNDS):
    """Wall time (a merged torch.utils.benchmark Measurement) and median GPU time per call
    (seconds; None without a GPU) of each of `fns`, measured in interleaved rounds: every
    implementation takes its turn in every round, so that a drift in the speed of a shared
    machine's host (a microsecond or two a call, over seconds) falls on all of them alike."""
    on_gpu = inputs[0].is_cuda
    loops = {name: GpuLoop(fn, inputs) for name, fn in fns.items()} if on_gpu else {}
    walls = {name: [] for name in fns}
    gpu = {name: [] for name in fns}
    for _ in range(rounds):
        for name, fn in fns.items():
            walls[name].append(
                wall_measurement(
                    fn, inputs[0], label, sub_label, name, min_run_time=min_run_time / rounds
                )
            )
            if on_gpu:
                gpu[name].append(loops[name].sample())
    return {
        name: (
            benchmark.Measurement.merge(walls[name])[0],
            statistics.median(gpu[name]) if on_gpu else None,
        )
        for name in fns
    }


def implementation(name, dim=None):
    """A callable x -> sum of x (over `dim`, when given) for a name: "torch.sum",
    "torch.compile" (Inductor's kernel for torch.sum, compiled afresh for each call of
    this function, for one shape: dynamo recompiles for new shapes only up to its cache
    limit, then silently runs eagerly), or a kernel of warpreduce_torch; "auto" is
    warpreduce_torch.sum as users call it, with no wrapper around it for a full sum."""
    if name == "torch.compile":
        torch._dynamo.reset()
        if dim is None:
            return torch.compile(lambda x: torch.sum(x), dynamic=False)
        return torch.compile(lambda x: torch.sum(x, dim), dynamic=False)
    if name == "torch.sum":
        return torch.sum if dim is None else lambda x: torch.sum(x, dim)
    if name == "auto":
        return wr.sum if dim is None else lambda x: wr.sum(x, dim)
    if dim is None:
        return functools.partial(wr.sum, kernel=name)
    return lambda x: wr.sum(x, dim, kernel=name)


def check_close_to_sum(name, got, x, dim, case):
    """A smoke test before measuring (the tests compare properly): `got`, what `name`
    returned for a sum of x over `dim`, is torch.sum's float64 result to within 1% of
    sum |x|."""
    expected = torch.sum(x.double(), dim)
    scale = torch.sum(x.double().abs(), dim).clamp_min(1)
    assert torch.all((got.double() - expected).abs() <= 1e-2 * scale), f"{name} disagrees on {case}"


def write_csv(rows, path):
    """Rows (dicts with the same keys) as a CSV file with a header: every table's CSV."""
    with open(path, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
