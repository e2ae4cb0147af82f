"""Benchmarks of warpreduce_torch.sum: `python -m warpreduce_torch.bench` (the sweep,
the main job) and `python -m warpreduce_torch.bench.stages` (the staged kernels)."""
