"""warpreduce_torch.sum under load and faults, every result checked against torch.sum.

    python benchmarks/stress.py concurrency [--device cuda] [--threads 8] [--seconds 30]
    python benchmarks/stress.py stream-churn [--streams 3000]
    python benchmarks/stress.py oom
    python benchmarks/stress.py memory [--device cuda] [--calls 100000]
    python benchmarks/stress.py multi-gpu [--seconds 20]

- concurrency: threads, each on its own stream, plus one on the default stream, call
  every kernel on random shapes, dtypes, layouts and dims for a fixed time; on CUDA one
  more thread captures sums into CUDA graphs and replays them on new data meanwhile.
  A watchdog ends the process (exit 2, every thread's stack printed) if a thread stops
  making progress: a deadlock.
- stream-churn: thousands of raw CUDA streams (cupy's, or the CUDA runtime's through
  torch) wrapped in torch.cuda.ExternalStream, each used for sums that split over blocks
  and so need the per-stream scratch, then destroyed: the results stay right and
  torch.cuda.memory_allocated stays bounded (flat once the scratch cache is full).
- oom: under a small torch.cuda.set_per_process_memory_fraction, calls whose output,
  intermediate, copy or scratch cannot be allocated raise torch.OutOfMemoryError, and
  the next call on the same stream is right. Changes the process's memory fraction: run
  it in a process of its own (as here).
- memory: many calls with varying shapes, dtypes and streams; the caching allocator's
  allocated bytes and the process's resident memory come back to their level after a
  warm-up, within a bound.
- multi-gpu: inputs on one GPU while the thread's current device is another, streams
  on each device, results on the input's device; CUDA graphs captured on the second GPU.

Each prints a summary (calls, threads, seconds, wrong results, memory before and after)
and exits 0 when everything held, 1 on a wrong result, an unexpected error or memory past
its bound, 2 on a hang. Where the device or a package it needs is missing it prints
"SKIP: <reason>" and exits 0.
"""

import argparse
import contextlib
import dataclasses
import faulthandler
import gc
import math
import os
import random
import re
import sys
import threading
import time
import traceback

import torch

import warpreduce_torch as wr

# One rule for "the same result as torch.sum" across the tests and these programs.
from warpreduce_torch.testing import assert_sum_matches, random_tensor

DTYPES = wr.dtypes()

MiB = 2**20
SKIP = 0  # exit status of a program that cannot run here (it says why)


def skip(reason):
    print(f"SKIP: {reason}", flush=True)
    sys.exit(SKIP)


def cuda_or_skip(devices=1):
    if not torch.cuda.is_available():
        skip("no CUDA GPU visible")
    if torch.cuda.device_count() < devices:
        skip(f"{devices} GPUs needed, {torch.cuda.device_count()} visible")


def mib(n):
    return f"{n / MiB:.2f} MiB"


def rss_bytes():
    """The process's resident memory: psutil where installed, else /proc/self/statm."""
    try:
        import psutil

        return psutil.Process().memory_info().rss
    except ImportError:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


# --- random calls -----------------------------------------------------------------------

LAYOUTS = ("contiguous", "transposed", "sliced", "offset", "expanded")

# Shapes and dims that take each kind of pass of auto's geometry on CUDA, several of them
# through the split kernels and so the per-stream scratch: the full sum over blocks, few
# long rows, short rows tiled, columns split over blocks (few columns, or a column count
# that is not a multiple of a vector), vectorized columns, a middle dim, two passes.
PATH_CASES = [
    (((1 << 20) + 3,), None),
    ((6, 100_003), -1),
    ((70_001, 8), -1),
    ((20_000, 100), -1),
    ((2**18 + 1, 8), 0),
    ((2**16, 128), 0),
    ((2**16 + 3, 130), 0),
    ((4097, 512), 0),
    ((64, 33, 300), 1),
    ((32, 64, 28, 28), (0, 2, 3)),
    ((16, 1000, 64), (0, 2)),
]


@dataclasses.dataclass
class Call:
    """One call of warpreduce_torch.sum, as data: printed when its result is wrong."""

    shape: tuple
    dtype: torch.dtype
    layout: str
    dim: object
    keepdim: bool
    out_dtype: object
    kernel: str
    seed: int

    def base_and_view(self, device):
        """A fresh random base tensor and the view of it that the call reads."""
        shape = tuple(self.shape)
        if self.layout == "contiguous" or not shape:
            base = random_tensor(shape, self.dtype, device, self.seed)
            return base, base
        if self.layout == "transposed" and len(shape) >= 2:
            base = random_tensor(shape[:-2] + (shape[-1], shape[-2]), self.dtype, device, self.seed)
            return base, base.transpose(-1, -2)
        if self.layout == "sliced":  # every other element of the first dim
            base = random_tensor((2 * shape[0],) + shape[1:], self.dtype, device, self.seed)
            return base, base[::2]
        if self.layout == "offset":  # the data pointer one element past the allocation's
            base = random_tensor(shape[:-1] + (shape[-1] + 1,), self.dtype, device, self.seed)
            return base, base[..., 1:]
        if self.layout == "expanded":  # the first dim broadcast: stride 0
            base = random_tensor((1,) + shape[1:], self.dtype, device, self.seed)
            return base, base.expand(shape)
        base = random_tensor(shape, self.dtype, device, self.seed)
        return base, base

    def run(self, x):
        return wr.sum(x, self.dim, self.keepdim, dtype=self.out_dtype, kernel=self.kernel)

    def check(self, got, x):
        assert_sum_matches(got, x, self.dim, self.keepdim, self.out_dtype, self.kernel)


def random_dim(rng, ndim):
    """None, (), a dim (negative too), or a tuple of distinct dims in any order."""
    if ndim == 0:
        return rng.choice([None, 0, -1, ()])
    r = rng.random()
    if r < 0.15:
        return None
    if r < 0.2:
        return ()
    if r < 0.6:
        return rng.randrange(-ndim, ndim)
    dims = rng.sample(range(ndim), rng.randint(1, ndim))
    return tuple(d - ndim if rng.random() < 0.3 else d for d in dims)


def random_shape(rng, max_elements):
    """Rank 0 to 4, sizes from 0 (rarely) to large, at most max_elements elements."""
    rank = rng.choice([0, 1, 1, 2, 2, 2, 3, 3, 4])
    shape, budget = [], max_elements
    for _ in range(rank):
        if rng.random() < 0.03:
            size = 0
        elif rng.random() < 0.15:
            size = 1
        else:  # log-uniform: short and long dims alike
            size = int(math.exp(rng.uniform(0, math.log(max(budget, 2)))))
        size = min(size, budget)
        shape.append(size)
        budget = max(1, budget // max(size, 1))
    return tuple(shape)


def random_call(rng, device, kernels, max_elements, path_share=0.25):
    if device.startswith("cuda") and rng.random() < path_share:
        shape, dim = rng.choice(PATH_CASES)
    else:
        shape = random_shape(rng, max_elements)
        dim = random_dim(rng, len(shape))
    dtype = rng.choice(DTYPES)
    # dtype= now and then: widening, or a cast to the other kind
    out_dtype = rng.choice([None] * 8 + [torch.float32, torch.float64, torch.int64])
    layout = rng.choice(LAYOUTS) if shape and min(shape) > 0 else "contiguous"
    return Call(
        shape,
        dtype,
        layout,
        dim,
        rng.random() < 0.5,
        out_dtype,
        rng.choice(kernels),
        rng.randrange(2**31),
    )


# --- tallies and the watchdog -------------------------------------------------------------


class Tally:
    """What one thread did. Only its own thread writes it."""

    def __init__(self, name):
        self.name = name
        self.calls = self.wrong = self.errors = self.captures = self.replays = 0
        self.notes = []
        self.progress = time.monotonic()
        self.done = False

    def note(self, kind, call, detail):
        if kind == "wrong":
            self.wrong += 1
        else:
            self.errors += 1
        if len(self.notes) < 5:
            self.notes.append(f"{self.name}: {kind.upper()} {call}: {detail}")

    def check(self, call, got, x):
        try:
            call.check(got, x)
        except AssertionError as e:
            self.note("wrong", call, str(e)[:300] or "AssertionError")

    @property
    def failed(self):
        return self.wrong + self.errors


def run_threads(targets, seconds, stall_s):
    """Runs targets (name -> fn(stop, tally)) on threads for `seconds`, then stops them.
    A thread that makes no progress for stall_s ends the process with exit status 2
    and every thread's stack: a hang is not waited out."""
    stop = threading.Event()
    tallies = {name: Tally(name) for name in targets}

    def wrap(fn, tally):
        try:
            fn(stop, tally)
        except BaseException:  # noqa: BLE001  (a thread's death is a failure to report)
            tally.errors += 1
            tally.notes.append(f"{tally.name}: DIED\n{traceback.format_exc()}")
        finally:
            tally.done = True

    threads = [
        threading.Thread(target=wrap, args=(fn, tallies[name]), name=name, daemon=True)
        for name, fn in targets.items()
    ]
    start = time.monotonic()
    for t in threads:
        t.start()
    while any(t.is_alive() for t in threads):
        time.sleep(0.2)
        now = time.monotonic()
        if now - start >= seconds:
            stop.set()
        stalled = [t for t in tallies.values() if not t.done and now - t.progress > stall_s]
        if stalled:
            print(
                f"HANG: no progress for {stall_s:.0f} s in "
                f"{', '.join(t.name for t in stalled)}; stacks:",
                flush=True,
            )
            faulthandler.dump_traceback(all_threads=True)
            sys.stdout.flush()
            os._exit(2)
    return tallies, time.monotonic() - start


def summarize(tallies):
    calls = sum(t.calls for t in tallies.values())
    wrong = sum(t.wrong for t in tallies.values())
    errors = sum(t.errors for t in tallies.values())
    for t in tallies.values():
        for n in t.notes:
            print(n)
    return calls, wrong, errors


def verdict(ok, line):
    print(f"{line}: {'PASS' if ok else 'FAIL'}", flush=True)
    return 0 if ok else 1


# --- concurrency ----------------------------------------------------------------------------


def eager_worker(device, stream, kernels, max_elements, seed, batch=4):
    """Random calls in batches of `batch` queued before any is checked, so that several
    are in flight on the stream at once; each checked against torch.sum on the same
    stream."""

    def work(stop, tally):
        rng = random.Random(seed)
        ctx = torch.cuda.stream(stream) if stream is not None else contextlib.nullcontext()
        with ctx:
            while not stop.is_set():
                pending = []
                for _ in range(batch):
                    call = random_call(rng, device, kernels, max_elements)
                    _, x = call.base_and_view(device)
                    try:
                        pending.append((call, x, call.run(x)))
                    except Exception as e:  # noqa: BLE001
                        tally.note("error", call, f"{type(e).__name__}: {e}"[:300])
                    tally.calls += 1
                for call, x, got in pending:
                    tally.check(call, got, x)
                tally.progress = time.monotonic()

    return work


def graph_worker(device, kernels, max_elements, seed, replays=3):
    """Captures one random call at a time into a CUDA graph on a side stream (warm-up
    first, as CUDA graphs need), then replays it on new data, while the other threads
    run eagerly. thread_local capture mode: the other threads may allocate meanwhile."""

    def work(stop, tally):
        rng = random.Random(seed)
        side = torch.cuda.Stream(device)
        while not stop.is_set():
            call = random_call(rng, device, kernels, max_elements)
            if 0 in call.shape:
                continue  # nothing to launch: an empty graph
            with torch.cuda.stream(side):
                base, view = call.base_and_view(device)
                for _ in range(2):
                    call.run(view)
            side.synchronize()
            graph = torch.cuda.CUDAGraph()
            try:
                with torch.cuda.graph(graph, stream=side, capture_error_mode="thread_local"):
                    out = call.run(view)
            except Exception as e:  # noqa: BLE001
                tally.note("error", call, f"capture: {type(e).__name__}: {e}"[:300])
                tally.progress = time.monotonic()
                continue
            tally.captures += 1
            with torch.cuda.stream(side):
                for r in range(replays):
                    fresh = random_tensor(tuple(base.shape), base.dtype, device, call.seed + r + 1)
                    base.copy_(fresh)
                    graph.replay()
                    tally.check(call, out, view)
                    tally.replays += 1
                    tally.calls += 1
            side.synchronize()
            del graph, out
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


# --- stream churn -------------------------------------------------------------------------


class RawStreams:
    """Creates and destroys raw CUDA streams: cupy's where cupy is installed, else the CUDA
    runtime's (cudaStreamCreate) through torch's binding of it."""

    def __init__(self, source):
        self.cupy = None
        if source in ("auto", "cupy"):
            try:
                import cupy

                self.cupy = cupy
            except Exception as e:  # noqa: BLE001  (ImportError, or a CUDA mismatch)
                if source == "cupy":
                    skip(f"cupy not usable: {type(e).__name__}: {e}")
        self.name = "cupy.cuda.Stream" if self.cupy else "cudaStreamCreate"

    def create(self):
        """(handle, keepalive)"""
        if self.cupy:
            s = self.cupy.cuda.Stream(non_blocking=True)
            return s.ptr, s
        import ctypes

        handle = ctypes.c_void_p(0)
        err = torch.cuda.cudart().cudaStreamCreate(ctypes.addressof(handle))
        if int(err) != 0:
            raise RuntimeError(f"cudaStreamCreate: error {int(err)}")
        return handle.value, None

    def destroy(self, handle, keepalive):
        if self.cupy:
            del keepalive  # cupy destroys the stream with its last reference
        else:
            err = torch.cuda.cudart().cudaStreamDestroy(handle)
            if int(err) != 0:
                raise RuntimeError(f"cudaStreamDestroy: error {int(err)}")


def stream_churn(args):
    cuda_or_skip()
    raw = RawStreams(args.source)
    # Two calls a stream, both split over blocks (and so through the per-stream scratch):
    # a full sum of 2^20 float32 and a dim-0 sum of 2^16 x 128, split across the rows.
    full = random_tensor((1 << 20,), torch.float32, "cuda", 1)
    cols = random_tensor((1 << 16, 128), torch.float32, "cuda", 2)
    want_full, want_cols = wr.sum(full), wr.sum(cols, 0)
    assert_sum_matches(want_full, full)
    assert_sum_matches(want_cols, cols, 0)
    torch.cuda.synchronize()
    gc.collect()
    before = torch.cuda.memory_allocated()
    reserved_before = torch.cuda.memory_reserved()
    # `alive` streams at a time, the oldest checked and destroyed as each new one comes:
    # more streams alive than the library keeps scratch for, so that every new stream
    # (whatever handle the driver reuses) needs scratch, and so that a stream's scratch
    # is evicted while the stream is still alive.
    alive = []  # (handle, keepalive, ExternalStream, results)
    handles = set()
    samples = {}  # streams so far -> allocated bytes
    wrong = 0
    notes = []

    def retire():
        nonlocal wrong
        handle, keep, stream, results = alive.pop(0)
        stream.synchronize()
        # The split paths give the same bits every run (tests/test_dims.py); the first
        # result was checked against torch.sum above.
        for name, got, want in zip(("full", "cols"), results, (want_full, want_cols), strict=True):
            if not torch.equal(got, want):
                wrong += 1
                if len(notes) < 5:
                    notes.append(
                        f"WRONG {name} sum on stream {handle:#x}: "
                        f"max difference {(got - want).abs().max().item():.3g}"
                    )
        del results, got
        raw.destroy(handle, keep)

    start = time.monotonic()
    for i in range(args.streams):
        handle, keep = raw.create()
        handles.add(handle)
        stream = torch.cuda.ExternalStream(handle)
        stream.wait_stream(torch.cuda.current_stream())  # nothing pending, but as a caller would
        with torch.cuda.stream(stream):
            results = (wr.sum(full), wr.sum(cols, 0))
            if i % 100 == 0:  # torch.sum itself, on the same stream, now and then
                try:
                    assert_sum_matches(results[0], full)
                    assert_sum_matches(results[1], cols, 0)
                except AssertionError as e:
                    wrong += 1
                    notes.append(f"WRONG on stream {i}: {e}")
        alive.append((handle, keep, stream, results))
        if len(alive) > args.alive:
            retire()
        if (i + 1) % max(1, args.streams // 20) == 0 or i + 1 == args.streams:
            samples[i + 1] = torch.cuda.memory_allocated()
    while alive:
        retire()
    elapsed = time.monotonic() - start
    gc.collect()
    torch.cuda.synchronize()
    after = torch.cuda.memory_allocated()
    for n in notes:
        print(n)
    counts = sorted(samples)
    half = min(counts, key=lambda c: abs(c - args.streams // 2))
    print(
        "allocated after n streams: "
        + ", ".join(f"{c}: {mib(samples[c])}" for c in counts[:: max(1, len(counts) // 6)])
    )
    growth = after - before
    late_growth = samples[counts[-1]] - samples[half]
    print(
        f"reserved (the caching allocator's pools, per stream; not the library's) "
        f"{mib(reserved_before)} -> {mib(torch.cuda.memory_reserved())}"
    )
    ok = (
        wrong == 0
        and growth <= args.max_growth_mib * MiB
        and late_growth <= args.plateau_kib * 1024
    )
    return verdict(
        ok,
        f"stream-churn: {args.streams} streams ({raw.name}, {len(handles)} distinct "
        f"handles, {args.alive} alive at a time), {2 * args.streams} calls, "
        f"{elapsed:.1f} s, wrong {wrong}, allocated {mib(before)} -> {mib(after)} "
        f"(growth {mib(growth)}, bound {args.max_growth_mib} MiB; from stream "
        f"{half} to {counts[-1]}: {late_growth / 1024:+.1f} KiB, bound "
        f"{args.plateau_kib} KiB)",
    )


# --- out of memory --------------------------------------------------------------------------


class MemoryLimit:
    """torch.cuda.set_per_process_memory_fraction, set so that the caching allocator may
    reserve `headroom` bytes more than it holds now."""

    def __init__(self):
        self.total = torch.cuda.mem_get_info()[1]  # the total the allocator's limit is of

    def set(self, headroom):
        gc.collect()
        torch.cuda.synchronize()
        torch.cuda.empty_cache()
        limit = torch.cuda.memory_reserved() + headroom
        torch.cuda.set_per_process_memory_fraction(min(1.0, limit / self.total))

    def lift(self):
        torch.cuda.set_per_process_memory_fraction(1.0)


def tried_to_allocate(e):
    """The size in the caching allocator's out-of-memory message."""
    m = re.search(r"Tried to allocate [0-9.]+ [KMG]?i?B", str(e))
    return m.group(0) if m else str(e)[:80]


def oom(args):
    cuda_or_skip()
    kernels = wr.kernels("cuda")
    staged = [k for k in kernels if k != "auto"]  # these copy what is not rows into rows
    limit = MemoryLimit()
    big = 512 * MiB  # what each provoked allocation needs, against `headroom` available
    headroom = 64 * MiB
    # What the next call on the stream runs: sums split over blocks, which use the
    # stream's scratch (a ticket left set, or scratch half made, would show there).
    probes = [
        (random_tensor((1 << 20,), torch.float32, "cuda", 1), None),
        (random_tensor((1 << 16, 128), torch.float32, "cuda", 2), 0),
    ]
    torch.cuda.synchronize()  # made on the default stream, read on others
    failures, lines = [], []

    def provoke(name, make, call, kernel="auto"):
        """make() -> inputs, made without the limit; call(*inputs) under it must raise
        torch.OutOfMemoryError, and the next calls on the stream must be right."""
        stream = torch.cuda.Stream()
        with torch.cuda.stream(stream):
            inputs = make()
            wr.sum(probes[0][0], kernel=kernel)  # the stream's scratch made before the limit
        limit.set(headroom)
        try:
            with torch.cuda.stream(stream):
                out = call(*inputs)
            stream.synchronize()
            outcome = f"no error (result {tuple(out.shape)})"
            failures.append(f"{name} [{kernel}]: expected torch.OutOfMemoryError, got {outcome}")
            del out
        except torch.OutOfMemoryError as e:
            outcome = f"OutOfMemoryError ({tried_to_allocate(e)})"
        except Exception as e:  # noqa: BLE001
            outcome = f"{type(e).__name__}: {str(e)[:200]}"
            failures.append(f"{name} [{kernel}]: expected torch.OutOfMemoryError, got {outcome}")
        del inputs
        outcome += next_calls_are_right(
            stream, kernel, probes, limit, failures, f"{name} [{kernel}]"
        )
        lines.append(f"  {name} [{kernel}]: {outcome}")

    # The output: one float32 broadcast to (rows, 4096, 2), summed over the last dim.
    for kernel in kernels:
        provoke(
            "output",
            lambda: (torch.ones(1, device="cuda").expand(big // 4 // 4096, 4096, 2),),
            lambda x, k=kernel: wr.sum(x, -1, kernel=k),
            kernel,
        )
    # The copy into rows that the staged kernels and cub read: a broadcast (rows, 2^16)
    # summed over dim 0, a small output but a copy of `big` bytes.
    for kernel in staged:
        provoke(
            "copy into rows",
            lambda: (
                random_tensor((1, 1 << 16), torch.float32, "cuda", 3).expand(big // 4 >> 16, -1),
            ),
            lambda x, k=kernel: wr.sum(x, 0, kernel=k),
            kernel,
        )
    # auto's intermediate between two passes: int8 (A, B, 2) over dims (0, 2) first sums
    # rows of 2 into A x B int64 partials (4x the input), then the columns.
    provoke(
        "intermediate of two passes",
        lambda: (random_tensor((big // 8 // 4096, 4096, 2), torch.int8, "cuda", 4),),
        lambda x: wr.sum(x, (0, 2)),
    )
    # dtype=: the cast before the sum.
    provoke(
        "dtype= cast",
        lambda: (random_tensor((big // 8,), torch.float32, "cuda", 5),),
        lambda x: wr.sum(x, dtype=torch.float64),
    )
    lines.append(oom_scratch(limit, probes, failures))

    print("\n".join(lines))
    for f in failures:
        print("FAIL", f)
    return verdict(
        not failures,
        f"oom: {len(lines)} cases, {mib(headroom)} free under the "
        f"limit against {mib(big)} needed, failures {len(failures)}",
    )


def next_calls_are_right(stream, kernel, probes, limit, failures, name):
    """The probes summed on `stream` under the limit still in force, then checked against
    torch.sum (whose float64 reference needs more memory) once it is lifted."""
    try:
        with torch.cuda.stream(stream):
            results = [wr.sum(x, dim, kernel=kernel) for x, dim in probes]
        stream.synchronize()
    except Exception as e:  # noqa: BLE001
        failures.append(f"{name}: next call on the stream: {type(e).__name__}: {str(e)[:200]}")
        return "; NEXT CALL FAILED"
    finally:
        limit.lift()
    try:
        with torch.cuda.stream(stream):
            for (x, dim), got in zip(probes, results, strict=True):
                assert_sum_matches(got, x, dim)
    except AssertionError as e:
        failures.append(f"{name}: next call on the stream is wrong: {e}")
        return "; NEXT CALL WRONG"
    return "; next calls right"


def oom_scratch(limit, probes, failures):
    """Out of memory at the scratch allocation: a new stream gets its scratch on its first
    split call. The caching allocator gives a stream blocks of its own 2 MiB segments:
    with room for one segment, fill the stream's with 512-byte tensors, free one for the
    output, and sum. Returns the report's line."""
    name = "scratch of a new stream [auto]"
    x = probes[0][0]
    stream = torch.cuda.Stream()
    limit.set(2 * MiB)
    ballast = []
    try:
        with torch.cuda.stream(stream):
            while len(ballast) < 20_000:
                ballast.append(torch.empty(128, dtype=torch.float32, device="cuda"))
    except torch.OutOfMemoryError:
        pass
    if len(ballast) >= 20_000 or not ballast:
        limit.lift()
        return f"  {name}: not provoked (could not fill the stream's memory: {len(ballast)} blocks)"
    ballast.pop()
    try:
        with torch.cuda.stream(stream):
            out = wr.sum(x)
        stream.synchronize()
        # Not a failure of the library: the allocator found room after all.
        outcome = f"not provoked (no error: the allocator found room for {tuple(out.shape)})"
        del out
    except torch.OutOfMemoryError as e:
        outcome = f"OutOfMemoryError ({tried_to_allocate(e)})"
    except Exception as e:  # noqa: BLE001
        outcome = f"{type(e).__name__}: {str(e)[:200]}"
        failures.append(f"{name}: expected torch.OutOfMemoryError, got {outcome}")
    ballast.clear()
    # The probes' dim sum needs more than the stream's one segment: the full sum only.
    outcome += next_calls_are_right(stream, "auto", probes[:1], limit, failures, name)
    return f"  {name}: {outcome}"


# --- memory stays flat ----------------------------------------------------------------------


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


# --- several GPUs -------------------------------------------------------------------------


def cross_device_worker(
    data_device, current_device, side_stream, kernels, max_elements, seed, batch=4
):
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
            pending = []
            for _ in range(batch):
                call = random_call(rng, dev, kernels, max_elements)
                _, x = call.base_and_view(dev)
                try:
                    got = call.run(x)
                    if got.device != x.device:
                        tally.note("wrong", call, f"result on {got.device}, input on {x.device}")
                    else:
                        pending.append((call, x, got))
                except Exception as e:  # noqa: BLE001
                    tally.note("error", call, f"{type(e).__name__}: {e}"[:300])
                tally.calls += 1
            for call, x, got in pending:
                tally.check(call, got, x)
            if torch.cuda.current_device() != current_device:
                tally.note("error", call, "the call changed the thread's current device")
            tally.progress = time.monotonic()

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
                with torch.cuda.stream(side):
                    base, view = call.base_and_view(dev)
                    call.run(view)
                side.synchronize()
                graph = torch.cuda.CUDAGraph()
                with torch.cuda.graph(graph, stream=side):
                    out = call.run(view)
                tally.captures += 1
                if out.device != view.device:
                    tally.note("wrong", call, f"captured result on {out.device}")
                with torch.cuda.stream(side):
                    for r in range(3):
                        base.copy_(random_tensor(tuple(base.shape), base.dtype, dev, 100 + r))
                        graph.replay()
                        tally.check(call, out, view)
                        tally.replays += 1
                        tally.calls += 1
                side.synchronize()


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


# --- command line ---------------------------------------------------------------------------


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("concurrency", help="threads on streams of their own, graphs, every kernel")
    p.add_argument("--device", choices=["cuda", "cpu"], default="cuda")
    p.add_argument("--threads", type=int, default=8, help="threads on a stream each")
    p.add_argument("--seconds", type=float, default=30)
    p.add_argument("--max-elements", type=int, default=0, help="of a random shape (0: by device)")
    p.add_argument("--no-graphs", action="store_true")
    p.add_argument("--stall", type=float, default=120, help="seconds without progress: a hang")
    p.add_argument("--seed", type=int, default=0)
    p.set_defaults(fn=concurrency)

    p = sub.add_parser("stream-churn", help="raw streams created, used once and destroyed")
    p.add_argument("--streams", type=int, default=3000)
    p.add_argument("--alive", type=int, default=100, help="streams alive at a time")
    p.add_argument("--source", choices=["auto", "cupy", "cudart"], default="auto")
    p.add_argument(
        "--max-growth-mib",
        type=float,
        default=16,
        help="bound on allocated bytes after the churn less before",
    )
    p.add_argument(
        "--plateau-kib",
        type=float,
        default=512,
        help="bound on the growth over the second half of the churn",
    )
    p.set_defaults(fn=stream_churn)

    p = sub.add_parser("oom", help="out of memory raised as torch.OutOfMemoryError, then right")
    p.set_defaults(fn=oom)

    p = sub.add_parser("memory", help="allocated and resident memory flat over many calls")
    p.add_argument("--device", choices=["cuda", "cpu"], default="cuda")
    p.add_argument("--calls", type=int, default=100_000)
    p.add_argument(
        "--warmup",
        type=int,
        default=None,
        help="calls before the first level (default: a tenth of --calls)",
    )
    p.add_argument("--streams", type=int, default=4, help="side streams, besides the default one")
    p.add_argument("--max-elements", type=int, default=0, help="of a random shape (0: by device)")
    p.add_argument("--check-every", type=int, default=1, help="check every n-th result")
    p.add_argument("--max-alloc-kib", type=float, default=64)
    p.add_argument("--max-rss-mib", type=float, default=16)
    p.add_argument("--seed", type=int, default=0)
    p.set_defaults(fn=memory)

    p = sub.add_parser("multi-gpu", help="inputs on a device that is not current; graphs on cuda:1")
    p.add_argument("--threads", type=int, default=4)
    p.add_argument("--seconds", type=float, default=20)
    p.add_argument("--max-elements", type=int, default=0)
    p.add_argument("--stall", type=float, default=120)
    p.add_argument("--seed", type=int, default=0)
    p.set_defaults(fn=multi_gpu)

    args = parser.parse_args(argv)
    return args.fn(args)


if __name__ == "__main__":
    sys.exit(main())
