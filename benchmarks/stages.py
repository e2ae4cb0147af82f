"""The staged kernels' table (issue 3): the same as
`python -m warpreduce_torch.bench.stages` and `python -m warpreduce_torch.bench --stages-table`.

    python benchmarks/stages.py --sizes 24 28 --dtypes int32 float32
"""

from warpreduce_torch.bench.stages import main

if __name__ == "__main__":
    raise SystemExit(main())
