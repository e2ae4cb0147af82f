"""exact against auto on the named dim shapes, for A/Bs of exact's kernels: the float
cases of `python -m warpreduce_torch.bench --dims`, torch.sum, auto and exact side by side
(interleaved rounds, rotated inputs; no torch.compile or CUB, so a run takes ~80 s on an
H200), with whatever WARPREDUCE_* knobs the environment sets. One line a case, the
geometric mean of exact / auto, and a CSV.

    python benchmarks/exact_dims.py TAG OUT.csv [NAME_FILTER ...]

(the cases whose names contain any NAME_FILTER; every one without)"""

import csv
import math
import sys

import torch

from warpreduce_torch.bench import dims
from warpreduce_torch.bench.timing import implementation, interleaved_gpu_times, rotated

tag, out = sys.argv[1], sys.argv[2]
filters = sys.argv[3:] or [""]
cases = [c for c in dims.anchor_cases() + dims.model_cases() if any(f in c.name for f in filters)]
rows = []
for case in cases:
    probe = case.make(0)
    if not probe.dtype.is_floating_point:
        continue
    nbytes = probe.numel() * probe.element_size()
    inputs = rotated(case.make, nbytes)
    fns = {n: implementation(n, case.dim) for n in ("torch.sum", "auto", "exact")}
    ref = fns["torch.sum"](inputs[0]).double()
    got = fns["exact"](inputs[0]).double()
    assert torch.allclose(got, ref, rtol=1e-2, atol=1e-2), case.name
    t = interleaved_gpu_times(fns, inputs)
    plan = dims.plan_summary(probe, case.dim)
    r = {"tag": tag, "case": case.name, "plan": plan, **{k: v * 1e6 for k, v in t.items()}}
    rows.append(r)
    print(
        f"{tag} {case.name:45s} {plan:22s} ts {r['torch.sum']:7.1f} auto {r['auto']:7.1f} exact {r['exact']:7.1f} e/a {r['auto'] / r['exact']:.3f}",
        flush=True,
    )
    del inputs, probe
    torch.cuda.empty_cache()
g = math.exp(sum(math.log(r["auto"] / r["exact"]) for r in rows) / len(rows))
print(
    f"{tag} geomean exact/auto {g:.3f} over {len(rows)}; under torch.sum: {sum(r['exact'] > r['torch.sum'] for r in rows)}"
)
with open(out, "w", newline="") as f:
    w = csv.DictWriter(f, fieldnames=list(rows[0]))
    w.writeheader()
    w.writerows(rows)
