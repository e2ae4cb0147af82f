"""Where a small call's time goes on the host: wall time per call (torch.utils.benchmark,
median) of one small float32 sum through each way in, on the default stream and on a
side stream. Below ~2^20 elements every implementation is bound by this, not by its
kernel (benchmarks/RESULTS.md).

    python benchmarks/host_overhead.py [--sizes 10 13 14 16]

- torch.sum: PyTorch's generated binding and its reduction.
- warpreduce_torch.sum: the Python function, then the C++ binding (csrc/python.cpp).
- _C.sum: the binding alone: the difference is what the Python function adds.
- torch.ops.warpreduce.sum: the boxed path the binding replaces.
- Small sums run in one block; larger ones split over blocks (rows_split), which need
  the per-stream scratch, so a side stream (which could be capturing a CUDA graph) also
  pays for asking the driver whether it is.
"""

import argparse

import torch
import torch.utils.benchmark as benchmark

import warpreduce_torch as wr
from warpreduce_torch import _C

ENTRIES = {
    "torch.sum": torch.sum,
    "warpreduce_torch.sum": wr.sum,
    "_C.sum": _C.sum,
    "torch.ops.warpreduce.sum": torch.ops.warpreduce.sum,
}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10, 13, 14, 16])
    parser.add_argument("--min-run-time", type=float, default=0.3)
    args = parser.parse_args(argv)
    streams = {"default stream": torch.cuda.default_stream(), "side stream": torch.cuda.Stream()}
    results = []
    for log2 in args.sizes:
        x = torch.randn(1 << log2, device="cuda")
        for stream_name, stream in streams.items():
            with torch.cuda.stream(stream):
                for name, fn in ENTRIES.items():
                    timer = benchmark.Timer(
                        "fn(x)",
                        globals={"fn": fn, "x": x},
                        label="Wall time per call, float32 (us)",
                        sub_label=f"2^{log2}, {stream_name}",
                        description=name,
                    )
                    results.append(timer.blocked_autorange(min_run_time=args.min_run_time))
    print(torch.cuda.get_device_name())
    benchmark.Compare(results).print()


if __name__ == "__main__":
    main()
