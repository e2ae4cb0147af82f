"""warpreduce.sum and torch.sum on a DTensor sharded over GPUs, next to one GPU's half.

A float32 and a bfloat16 tensor of 2^31 elements (shape [2^31 / 4096, 4096]), sharded on
dim 0 over the ranks, each rank holding its own shard (2^30 elements with 2 ranks),
summed fully and over the last dim. Per call, from CUDA events on rank 0 after a
barrier, median of --rounds loops of --calls calls:

- one GPU: the plain op on rank 0's shard alone (half the data with 2 ranks);
- DTensor: the op on the DTensor; a full sum gives a Partial result, each rank's own
  partial sum, and no communication;
- DTensor + whole: the same, then made whole on every rank (full_tensor(): an
  all-reduce of one number for the full sum, an all-gather of the rows' sums for the
  last dim).

    torchrun --nproc-per-node 2 benchmarks/dtensor_sum.py [--log2-elements 31]

Prints a markdown table. Without a GPU it runs on CPU with gloo, on 2^22 elements by
default, to show that it works: those times say nothing about GPUs.
"""

import os

# NVLink multicast (NVLS) stays off on the GPU machine: set before any process group.
os.environ.setdefault("NCCL_NVLS_ENABLE", "0")
os.environ.setdefault("TORCH_SYMM_MEM_DISABLE_MULTICAST", "1")
# Loopback for the ranks' own connections (one machine).
os.environ.setdefault("NCCL_SOCKET_IFNAME", "lo")
os.environ.setdefault("GLOO_SOCKET_IFNAME", "lo")

import argparse  # noqa: E402
import datetime  # noqa: E402
import functools  # noqa: E402
import statistics  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
from torch.distributed.device_mesh import init_device_mesh  # noqa: E402
from torch.distributed.tensor import DTensor, Shard  # noqa: E402

import warpreduce_torch as wr  # noqa: E402

DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16}

SUMS = {"warpreduce": wr.sum, "torch.sum": torch.sum}
REDUCTIONS = {"full": {}, "last dim": {"dim": -1}}


def time_per_call(fn, rounds, calls, on_gpu):
    """Milliseconds a call of fn() takes on rank 0: median over rounds of a loop of calls,
    every rank starting each loop together (fn may communicate)."""
    fn()  # warm-up: allocations, NCCL's first use, DTensor's sharding cache
    times = []
    for _ in range(rounds):
        dist.barrier()
        if on_gpu:
            torch.cuda.synchronize()
            start = torch.cuda.Event(enable_timing=True)
            end = torch.cuda.Event(enable_timing=True)
            start.record()
            for _ in range(calls):
                fn()
            end.record()
            end.synchronize()
            times.append(start.elapsed_time(end) / calls)
        else:
            start = time.perf_counter()
            for _ in range(calls):
                fn()
            times.append((time.perf_counter() - start) * 1e3 / calls)
    return statistics.median(times)


def whole(result):
    return result.full_tensor()


def made_whole_sum(sum_fn, x, kwargs):
    return whole(sum_fn(x, **kwargs))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--log2-elements",
        type=int,
        default=None,
        help="elements of each tensor, all ranks together (default 31; 22 on CPU)",
    )
    parser.add_argument("--cols", type=int, default=4096, help="length of the last dim")
    parser.add_argument("--dtypes", nargs="+", default=list(DTYPES), choices=list(DTYPES))
    parser.add_argument("--calls", type=int, default=20, help="calls a timed loop")
    parser.add_argument("--rounds", type=int, default=5, help="timed loops (the median is kept)")
    args = parser.parse_args(argv)

    if "RANK" not in os.environ or "WORLD_SIZE" not in os.environ:
        sys.exit(
            "Run it under torchrun, one process a GPU: "
            "torchrun --nproc-per-node 2 benchmarks/dtensor_sum.py"
        )
    rank = int(os.environ["RANK"])
    world_size = int(os.environ["WORLD_SIZE"])
    local_rank = int(os.environ.get("LOCAL_RANK", rank))

    on_gpu = torch.cuda.is_available()
    if on_gpu and torch.cuda.device_count() < int(os.environ.get("LOCAL_WORLD_SIZE", world_size)):
        sys.exit(
            f"{torch.cuda.device_count()} GPUs visible for "
            f"{os.environ.get('LOCAL_WORLD_SIZE', world_size)} ranks on this machine: "
            "NCCL needs one GPU a rank (use --nproc-per-node <= the GPU count)."
        )
    device = "cuda" if on_gpu else "cpu"
    log2_elements = args.log2_elements or (31 if on_gpu else 22)
    rows = (1 << log2_elements) // args.cols
    if rows % world_size:
        sys.exit(f"{rows} rows do not split evenly over {world_size} ranks: pick --cols")

    if on_gpu:
        torch.cuda.set_device(local_rank)
        dist.init_process_group("nccl", device_id=torch.device("cuda", local_rank))
    else:
        dist.init_process_group("gloo")
    mesh = init_device_mesh(device, (world_size,))
    timing = (args.rounds, args.calls, on_gpu)

    table = []
    for dtype_name in args.dtypes:
        dtype = DTYPES[dtype_name]
        # Each rank makes its own shard (random, positive: sums of many do not cancel), so
        # that no rank ever holds the whole tensor.
        generator = torch.Generator(device).manual_seed(rank)
        local = torch.rand(
            rows // world_size, args.cols, device=device, generator=generator, dtype=torch.float32
        ).to(dtype)
        sharded = DTensor.from_local(local, mesh, [Shard(0)], run_check=False)
        for reduction, kwargs in REDUCTIONS.items():
            # The two sums agree (a placement or a shard gone wrong would show here).
            ours = whole(wr.sum(sharded, **kwargs)).float()
            theirs = whole(torch.sum(sharded, **kwargs)).float()
            torch.testing.assert_close(
                ours, theirs, rtol=1e-3 if dtype == torch.float32 else 3e-2, atol=0
            )
            for name, sum_fn in SUMS.items():
                one_gpu = time_per_call(functools.partial(sum_fn, local, **kwargs), *timing)
                dtensor = time_per_call(functools.partial(sum_fn, sharded, **kwargs), *timing)
                made_whole = time_per_call(
                    functools.partial(made_whole_sum, sum_fn, sharded, kwargs), *timing
                )
                table.append((dtype_name, reduction, name, one_gpu, dtensor, made_whole))
        del local, sharded
        if on_gpu:
            torch.cuda.empty_cache()

    if rank == 0:
        where = torch.cuda.get_device_name() if on_gpu else "CPU (gloo): not GPU figures"
        command = f"torchrun --nproc-per-node {world_size} benchmarks/dtensor_sum.py " + " ".join(
            sys.argv[1:]
        )
        nccl = ""
        if on_gpu:
            version = torch.cuda.nccl.version()  # a tuple, or an int in some builds
            version = ".".join(map(str, version)) if isinstance(version, tuple) else version
            nccl = f", NCCL {version}"
        print(
            f"{world_size} x {where}, {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} "
            f"UTC, torch {torch.__version__}{nccl}"
        )
        print(f"`{command.strip()}`")
        print(
            f"[{rows}, {args.cols}] = 2^{log2_elements} elements a tensor, Shard(0) over "
            f"{world_size} ranks; ms per call on rank 0 (median of {args.rounds} x "
            f"{args.calls} calls)\n"
        )
        print(
            f"| dtype | sum | op | one {device.upper()}, 1/{world_size} of the data | "
            f"DTensor | DTensor + whole | whole / one |"
        )
        print("|---|---|---|---:|---:|---:|---:|")
        for dtype_name, reduction, name, one_gpu, dtensor, made_whole in table:
            print(
                f"| {dtype_name} | {reduction} | {name} | {one_gpu:.3f} | {dtensor:.3f} | "
                f"{made_whole:.3f} | {made_whole / one_gpu:.2f} |"
            )

    dist.destroy_process_group()


if __name__ == "__main__":
    main()
