"""What the stress programs in this folder share: skipping where the device is missing,
random calls of warpreduce_torch.sum checked against torch.sum, threads run under a
watchdog with a tally each, and the verdict line.

Each program prints a summary (calls, threads, seconds, wrong results, memory before and
after) and exits 0 when everything held, 1 on a wrong result, an unexpected error or
memory past its bound, 2 on a hang. Where the device or a package it needs is missing it
prints "SKIP: <reason>" and exits 0.
"""

import dataclasses
import faulthandler
import math
import os
import sys
import threading
import time
import traceback

import torch

import warpreduce_torch as wr

# One rule for "the same result as torch.sum" across the tests and these programs.
from warpreduce_torch.testing import assert_sum_matches, random_tensor

DTYPES = wr.dtypes()


def dtypes_on(device):
    """The dtypes a random call on `device` draws from: complex32 on CUDA only, where
    torch.sum (and so the op) sums it."""
    return [t for t in DTYPES if t != torch.complex32 or device.startswith("cuda")]


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
    dtype = rng.choice(dtypes_on(device))
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


# --- what the workers share -----------------------------------------------------------------


def call_batch(rng, device, kernels, max_elements, tally, batch=4):
    """`batch` random calls queued on the current stream before any is checked, so that
    several are in flight on it at once; then each result checked: on the input's device,
    and against torch.sum on the same stream. Returns the last call."""
    pending = []
    for _ in range(batch):
        call = random_call(rng, device, kernels, max_elements)
        _, x = call.base_and_view(device)
        try:
            pending.append((call, x, call.run(x)))
        except Exception as e:  # noqa: BLE001
            tally.note("error", call, f"{type(e).__name__}: {e}"[:300])
        tally.calls += 1
    for queued, x, got in pending:
        if got.device != x.device:
            tally.note("wrong", queued, f"result on {got.device}, input on {x.device}")
        else:
            tally.check(queued, got, x)
    tally.progress = time.monotonic()
    return call


def capture(call, device, side, warmups=1, **graph_options):
    """The call warmed up on the side stream (CUDA graphs need it), then captured into a
    CUDA graph there: (graph, base, view, out), out being the graph's result."""
    with torch.cuda.stream(side):
        base, view = call.base_and_view(device)
        for _ in range(warmups):
            call.run(view)
    side.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph, stream=side, **graph_options):
        out = call.run(view)
    return graph, base, view, out


def replay_checked(captured, call, device, side, tally, seeds):
    """A graph from capture() replayed on the side stream on new data, the base refilled
    from each seed in turn; each result checked against torch.sum."""
    graph, base, view, out = captured
    with torch.cuda.stream(side):
        for seed in seeds:
            base.copy_(random_tensor(tuple(base.shape), base.dtype, device, seed))
            graph.replay()
            tally.check(call, out, view)
            tally.replays += 1
            tally.calls += 1
    side.synchronize()
