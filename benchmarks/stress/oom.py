"""Out of memory inside warpreduce_torch.sum: torch.OutOfMemoryError, then right results.

    python benchmarks/stress/oom.py

Under a small torch.cuda.set_per_process_memory_fraction, calls whose output,
intermediate, copy or scratch cannot be allocated raise torch.OutOfMemoryError, and the
next call on the same stream is right. Changes the process's memory fraction: run it in a
process of its own (as here). Exit status and SKIP as in common.py.
"""

import argparse
import gc
import re
import sys

import torch
from common import MiB, cuda_or_skip, mib, verdict

import warpreduce_torch as wr
from warpreduce_torch.testing import assert_sum_matches, random_tensor


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


def out_of_memory(stream, name, failures, call, *inputs, room_fails=True):
    """call(*inputs) on `stream` under the limit in force, where it should raise
    torch.OutOfMemoryError: what happened, in words. Another error is added to `failures`,
    and so is no error at all where room_fails."""
    try:
        with torch.cuda.stream(stream):
            out = call(*inputs)
        stream.synchronize()
    except torch.OutOfMemoryError as e:
        return f"OutOfMemoryError ({tried_to_allocate(e)})"
    except Exception as e:  # noqa: BLE001
        outcome = f"{type(e).__name__}: {str(e)[:200]}"
        failures.append(f"{name}: expected torch.OutOfMemoryError, got {outcome}")
        return outcome
    shape = tuple(out.shape)
    del out
    if not room_fails:
        return f"not provoked (no error: the allocator found room for {shape})"
    outcome = f"no error (result {shape})"
    failures.append(f"{name}: expected torch.OutOfMemoryError, got {outcome}")
    return outcome


def oom(args):
    cuda_or_skip()
    kernels = wr.kernels("cuda")
    # The staged kernels and cub read rows: they copy what is not rows into rows (auto and
    # exact read any layout in place).
    staged = wr.kernels("cuda", "stage") + wr.kernels("cuda", "baseline")
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
        outcome = out_of_memory(stream, f"{name} [{kernel}]", failures, call, *inputs)
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
    # No error is not a failure of the library here: the allocator found room after all.
    outcome = out_of_memory(stream, name, failures, wr.sum, x, room_fails=False)
    ballast.clear()
    # The probes' dim sum needs more than the stream's one segment: the full sum only.
    outcome += next_calls_are_right(stream, "auto", probes[:1], limit, failures, name)
    return f"  {name}: {outcome}"


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    return oom(parser.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
