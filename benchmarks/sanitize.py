"""Runs every CUDA kernel on small and medium inputs, full and dim reductions, and checks
the results; meant to run under compute-sanitizer (benchmarks/gpu_check.sh sanitize runs
memcheck, racecheck, synccheck and initcheck):

    PYTORCH_NO_CUDA_MEMORY_CACHING=1 compute-sanitizer --tool racecheck python benchmarks/sanitize.py

(without the caching allocator each tensor is its own allocation, so memcheck sees an
access past its end and initcheck a read of memory never written). auto also runs every
kind of pass of the reduction geometry: short rows a lane each or tiled, rows a group of lanes each,
long rows split over blocks, gapped rows, columns vectorized or not, gapped or folded or
not, split over blocks or not, and two passes, in every dtype; and the split passes'
scratch as a stream keeps it (the same stream again, a new stream, and a CUDA graph,
which zeroes its own).
"""

import argparse
import math
import os
import time

import torch

import warpreduce_torch as wr
from warpreduce_torch.testing import in_tight_storage, random_tensor

CASES = [  # (shape, dim): every kernel
    ((1025,), None),  # small
    (((1 << 20) + 3,), None),  # medium: several blocks, several launches
    ((37, 1025), 1),
    ((1025, 37), 0),  # columns (a copy into rows for the staged kernels and cub)
    ((3, 5, 7, 11), (0, 2)),  # dims apart: two passes (or a copy)
]
AUTO_CASES = [  # every launch of the launch model (csrc/launch_model.h)
    ((4099, 3), 1),  # short rows: a lane a row (slots of 4; stepped, offset below: 8)
    ((4099, 9), 1),  # slabs: tiles of short rows
    ((41, 100, 6), 2),  # short rows: stepped, out of order, broadcast (below)
    ((4097, 4, 3), 1),  # slabs: a small reduced extent above a small inner one
    ((4099, 3, 8), 1),  # sliced: narrow partial columns (rows 8 apart, 7 wide)
    ((4096, 8), 1),  # rows of whole vectors
    ((3000, 301), 1),  # rows a warp each
    ((5, 300003), 1),  # split rows
    ((2**16 + 1, 8), 0),  # few columns: split
    ((4001, 4096), 0),  # vectorized columns (1-byte elements: 4-byte words)
    # flat columns across outer slices, 4 rows: lean (permuted, below: outer-first)
    ((4096, 4, 16), 1),
    ((5, 4, 4099), 1),  # permuted: outer-first over a short outer extent, 8 lanes of it
    # permuted: outer-first, an outer slice's 1-4 columns (by dtype) a wider span
    ((4, 4, 4099), 1),
    ((12, 3, 4099), 1),
    ((405509, 2, 32), 1),  # flat columns, tiles at once (bfloat16: 4 of 3169 tiles)
    # shifted vector columns (1-, 2-byte elements), or their elements one by one (4-,
    # 8-byte); unaligned too: the data's edges
    ((3, 100003), 0),
    ((2, 3, 5000), 1),  # column tiles, gapped columns (stepped, below)
    ((1001, 1027), 0),  # columns element by element
    ((8, 33, 1000), (0, 2)),  # two passes
    ((7, 4098), 0),  # 8-byte vector columns (4-byte types: rows 8-byte aligned alike)
    # gapped rows: sliced (x[::2, ..., :-1]) over both dims, a group of lanes a row and
    # blocks a row; stepped (x[..., ::2]) rows
    ((300, 40, 27), (1, 2)),
    ((5, 2, 40000), (1, 2)),
    ((64, 9, 1200), 2),
    # gapped inner dims (sliced: x[::2, ..., :-1]): columns over rows 1 apart, and a long
    # reduced dim over a block of kept and short reduced dims
    ((64, 300, 6), 0),
    ((64, 4, 6, 32, 6), (0, 2)),
    # ... and slab tiles over a gapped span (sliced: rows of 5 of 6, 7 of them), the gaps
    # summed in the tile and left unstored
    ((1026, 6, 7, 6), 1),
    # folded columns (a dense block of a few outputs, rows one after another), the last
    # vector or folded row partial (15 vectors of 20 rows of 3, of 4 of 5), and the block
    # in another order (transposed, below); and a full sum copied out along a broadcast
    # kept dim (x[:1].expand)
    ((65537, 2), 0),
    ((40001, 4), 0),
    ((40001, 3), 0),
    ((20011, 5, 4), 0),
    ((5, 20001), 1),
    # 2-byte elements under a long reduced dim, rows an even number apart: 4-byte pairs;
    # a gapped span read in whole vectors past its end (stepped, below), or not (tight)
    ((40, 4098), 0),
    ((64, 89, 16), (0, 1)),
    ((3, 40, 504), 1),  # ... under more rows than partial vectors take (stepped: 503)
    # ... sliced to an odd inner extent (40 rows of 341, 684 apart): 2-byte elements an
    # element a lane (few outputs), 1-byte ones 4-byte words whose partial last word is
    # read whole but at the data's end
    ((80, 342), 0),
    # short rows far apart (sliced, below: 15 of every 32): the aligned vectors that cover
    # each; partial columns of shifted vectors (2-byte types) read whole, flat tiles across
    # outer slices of 100 elements
    ((4099, 16), 1),
    ((4099, 3, 100), 1),
    # phased columns (rows not aligned alike: an odd row stride; 2-byte elements under
    # 192 rows and 2048 vectors and more, 8-byte ones; unaligned and in tight storage
    # below: the data's edges), 8-byte ones split over blocks
    ((193, 16385), 0),
    ((4099, 129), 0),
    ((3, 77, 515), 1),
    # two passes, the last in the first's launch (a tail: tail.cuh), a group of lanes an
    # output; the whole block one (sliced: two passes of a full sum); the last pass
    # shared by several blocks; three passes, the last two by one block
    ((7, 5, 63, 33), (0, 2)),
    ((256, 3, 12), None),
    ((64, 512, 20), (0, 2)),
    ((3, 23, 2, 8, 251), (0, 2, 4)),
    # 2-byte elements in rows aligned alike to 8 bytes, not 16, under 4-8 rows: 8-byte
    # quads (8 and 6 rows), the last quad of each row partial where sliced (and at the
    # data's end in tight storage)
    ((8, 4100), 0),
    ((3, 6, 4100), 1),
    # columns whose rows share sectors, loaded through L1 (cached): rows one vector wide,
    # 16 bytes apart for float32; 48 bytes apart, three vectors
    ((4097, 6, 4), 1),
    ((2053, 5, 12), 1),
]
DTYPES = (torch.float32, torch.int8, torch.bfloat16)  # every kernel
# auto's kernels are instantiated per dtype, with vectors of 16 bytes: 2 to 16 lanes.
AUTO_DTYPES = DTYPES + (
    torch.float64,
    torch.float16,
    torch.int16,
    torch.int32,
    torch.int64,
    torch.uint8,
    torch.bool,
)
FLOAT_DTYPES = (torch.float32, torch.bfloat16, torch.float16, torch.float64)  # exact's
EXTRA_DTYPES_MAX_ELEMENTS = 1 << 21
# (and a tail after split rows: its grid's ticket is in the same scratch)
SPLIT_CASES = [
    (((1 << 20) + 3,), None),
    ((5, 300003), 1),
    ((2**16 + 1, 8), 0),
    ((2, 3, 2, 100000), (1, 3)),
    ((64, 512, 20), (0, 2)),  # a tail of several blocks: two tickets
]


def check(got, x, dim):
    # The reference on the CPU: torch.sum's own CUDA kernel draws initcheck and racecheck
    # reports of its own, which would hide or be taken for ours.
    want = torch.sum(x.cpu(), dim)
    got = got.cpu()
    if want.dtype.is_floating_point:  # the CPU rounds 16-bit sums its own way: an ulp apart
        rtol = max(1e-4, 2 * torch.finfo(want.dtype).eps)
        torch.testing.assert_close(got, want, rtol=rtol, atol=1e-2)
    else:
        assert torch.equal(got, want), (x.dtype, tuple(x.shape), dim)


def run(x, dim, kernel):
    check(wr.sum(x, dim, kernel=kernel), x, dim)


def wide_row_gaps(dtype):
    """Gapped rows whose gaps pass a sector (32 bytes after every 2 or 6 elements, the
    rows' sectors 80-85% held): a full sum and one over the last two dims."""
    gap = 32 // dtype.itemsize
    for outer, width, dim in [((20011,), 2, None), ((301, 64), 6, (1, 2))]:
        yield random_tensor(outer + (width + gap,), dtype, "cuda")[..., :width], dim


def every_kernel(kernels, shapes=None):
    for kernel in kernels:
        start = time.monotonic()
        fast = kernel in ("auto", "exact")
        cases = CASES + (AUTO_CASES if fast else [])
        if shapes:
            cases = [(shape, dim) for shape, dim in cases if "x".join(map(str, shape)) in shapes]
        dtypes = AUTO_DTYPES if kernel == "auto" else FLOAT_DTYPES if kernel == "exact" else DTYPES
        for dtype in dtypes:
            for shape, dim in cases:
                if dtype not in DTYPES and math.prod(shape) > EXTRA_DTYPES_MAX_ELEMENTS:
                    continue  # the same pass as a smaller case, slow under racecheck
                x = random_tensor(shape, dtype, "cuda")
                run(x, dim, kernel)
                if x.dim() == 2:
                    run(x[:, 1:], dim, kernel)  # unaligned
                    run(x[:1].expand(3, -1), 1, kernel)  # a full sum copied out
                if fast and x.dim() >= 2 and x.shape[0] > 2:
                    run(x[::2, ..., : x.shape[-1] - 1], dim, kernel)  # sliced: short runs
                    # ... nothing past its last element
                    run(in_tight_storage(x[::2, ..., : x.shape[-1] - 1]), dim, kernel)
                if fast and x.dim() == 3:
                    run(x[..., ::2], dim, kernel)  # stepped: gapped columns or column tiles
                    # ... nothing past its last element
                    run(in_tight_storage(x[..., ::2]), dim, kernel)
                    run(x.permute(2, 1, 0), dim, kernel)  # kept dims out of order (dim 1)
                    run(x.transpose(1, 2), 0, kernel)  # a kept pair one dim in memory, reversed
                    run(x[:1].expand(3, -1, -1), dim, kernel)  # a kept dim broadcast (dim 1)
            if fast and (not shapes or "wide-gaps" in shapes):
                for x, dim in wide_row_gaps(dtype):
                    run(x, dim, kernel)
                    run(in_tight_storage(x), dim, kernel)
        torch.cuda.synchronize()
        print(f"{kernel} ({time.monotonic() - start:.1f} s): ok", flush=True)


def scratch_as_streams_keep_it():
    """The split passes again on the stream that made their scratch (tickets left at 0 by
    the last call), on a new stream (new scratch), and captured into a CUDA graph on a side
    stream, replayed on new data (scratch zeroed inside the graph). The capture needs the
    caching allocator (without it an allocation during capture is a cudaMalloc, which
    capture forbids): gpu_check.sh runs this part again with it."""
    graphs = os.environ.get("PYTORCH_NO_CUDA_MEMORY_CACHING", "0") in ("", "0")
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    for shape, dim in SPLIT_CASES:
        x = random_tensor(shape, torch.float32, "cuda", 1)
        for _ in range(2):
            run(x, dim, "auto")
        with torch.cuda.stream(side):
            for _ in range(2):
                run(x, dim, "auto")
        torch.cuda.synchronize()
        if not graphs:
            continue
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.stream(side):
            run(x, dim, "auto")  # warm-up on the capturing stream
        side.synchronize()
        with torch.cuda.graph(graph, stream=side):
            out = wr.sum(x, dim)
        for seed in (2, 3):
            x.copy_(random_tensor(shape, torch.float32, "cuda", seed))
            graph.replay()
            torch.cuda.synchronize()
            check(out, x, dim)
        del graph
    torch.cuda.synchronize()
    print(
        "split scratch (same stream, new stream"
        + (", CUDA graph" if graphs else "; CUDA graph skipped: no caching allocator")
        + "): ok",
        flush=True,
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--part", choices=["all", "kernels", "scratch"], default="all")
    parser.add_argument(
        "--kernels",
        nargs="+",
        choices=wr.kernels("cuda"),
        default=wr.kernels("cuda"),
        help="the kernels the kernels part runs (default: every one)",
    )
    parser.add_argument(
        "--shapes",
        nargs="+",
        metavar="AxB",
        help="the kernels part runs only the cases of these shapes (4099x16: a changed kernel's;"
        " wide-gaps: the gapped rows of wide_row_gaps)",
    )
    args = parser.parse_args()
    part = args.part
    if part in ("all", "kernels"):
        every_kernel(args.kernels, args.shapes)
    if part in ("all", "scratch"):
        scratch_as_streams_keep_it()
