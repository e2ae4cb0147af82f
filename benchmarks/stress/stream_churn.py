"""Thousands of raw CUDA streams, each used for sums and destroyed: results stay right
and memory stays bounded.

    python benchmarks/stress/stream_churn.py [--streams 3000]

Raw CUDA streams (cupy's, or the CUDA runtime's through torch) wrapped in
torch.cuda.ExternalStream, each used for sums that split over blocks and so need the
per-stream scratch, then destroyed: the results stay right and
torch.cuda.memory_allocated stays bounded (flat once the scratch cache is full).
Exit status and SKIP as in common.py.
"""

import argparse
import gc
import sys
import time

import torch
from common import MiB, cuda_or_skip, mib, skip, verdict

import warpreduce_torch as wr
from warpreduce_torch.testing import assert_sum_matches, random_tensor


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


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--streams", type=int, default=3000)
    parser.add_argument("--alive", type=int, default=100, help="streams alive at a time")
    parser.add_argument("--source", choices=["auto", "cupy", "cudart"], default="auto")
    parser.add_argument(
        "--max-growth-mib",
        type=float,
        default=16,
        help="bound on allocated bytes after the churn less before",
    )
    parser.add_argument(
        "--plateau-kib",
        type=float,
        default=512,
        help="bound on the growth over the second half of the churn",
    )
    return stream_churn(parser.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
