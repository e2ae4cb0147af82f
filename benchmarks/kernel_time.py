"""Device time of the kernels alone, per call, from torch.profiler: what the GPU spends
on a sum when the host is not the bottleneck. Between 2^20 and 2^22 elements the
event-timed loop of the main benchmark is bound by host overhead (~8 us a call on the
GPU machine) for torch.sum and warpreduce alike; this shows the kernels underneath.

    python benchmarks/kernel_time.py [--sizes 20 22 24] [--dtypes float32]
"""

import argparse

import torch
from torch.profiler import ProfilerActivity, profile

from warpreduce_torch.bench.timing import DTYPES, implementation, rotating_inputs


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[20, 22, 24])
    parser.add_argument("--dtypes", nargs="+", default=["float32"], choices=DTYPES)
    parser.add_argument("--calls", type=int, default=100)
    args = parser.parse_args(argv)

    print(f"{torch.cuda.get_device_name()}: kernel time per call in us (torch.profiler)")
    print(f"{'dtype':10s}{'size':>6s}" + "".join(f"{n:>12s}" for n in ["torch.sum", "auto", "cub"]))
    for name in args.dtypes:
        for log2 in args.sizes:
            inputs = rotating_inputs(1 << log2, DTYPES[name], "cuda")
            cells = []
            for impl in ["torch.sum", "auto", "cub"]:
                fn = implementation(impl)
                for x in inputs[:3]:
                    fn(x)
                torch.cuda.synchronize()
                with profile(activities=[ProfilerActivity.CUDA]) as prof:
                    for i in range(args.calls):
                        fn(inputs[i % len(inputs)])
                    torch.cuda.synchronize()
                kernels = [
                    e for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA
                ]
                cells.append(sum(e.device_time for e in kernels) / args.calls)
            print(f"{name:10s}{'2^' + str(log2):>6s}" + "".join(f"{c:12.1f}" for c in cells))


if __name__ == "__main__":
    main()
