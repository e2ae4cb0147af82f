"""Random shapes: warpreduce's auto against torch.sum, torch.compile(torch.sum) and the
full sum of the bytes the input needs, over shapes that nobody picked.

    python -m warpreduce_torch.bench --random 200 --seed 1 --max-seconds 540
    python -m warpreduce_torch.bench --random 100 --cpu          # the CPU kernel
    python -m warpreduce_torch.bench --random 200 --seed 1 --pick 17 42   # two shapes again
    python -m warpreduce_torch.bench --small-extents             # 2-8 reduced, in the middle

Shapes (sample_cases, the same for the same seed): rank 1-6; each extent small (1-8)
with probability 0.35, the log of the rest of the size split at random among the other
dims; the input's size log-uniform in a byte range (8-256 MiB on a GPU, 2-32 MiB on the
CPU; a broadcast input's base too); a random non-empty set of dims reduced, now and then
every dim (a full sum), some named by negative numbers; each layout of
warpreduce_torch.testing.VIEW_LAYOUTS, the last dim with stride 2 (`base[..., ::2]`) and
the dims in a random memory order; float32, bfloat16, float16, float64, int32, int8 and
bool, floats more often.

Bytes that must be read: the distinct 32-byte sectors of memory that the view touches,
times 32 (a broadcast dim counts once); GB/s is those bytes over the time, for every
implementation. The roofline is auto's full sum of a contiguous tensor of those bytes,
timed in the same rounds. A sum over short dims also writes a result nearly as large as
its input (int64 results eight times an int8 input's bytes), which the roofline does not
count: the memory bound scales its time by the bytes read and written over the bytes
read (written_mib: the result's bytes), the least time the call can take at the
roofline's bandwidth. On a GPU: CUDA events around loops over inputs rotated beyond
L2 (timing.GpuLoop: 1 GiB of copies, 64 at most, 512 MiB of 8 MiB inputs), the
implementations taking turns in 7 interleaved rounds; torch.compile compiled for each
shape (dynamic=False), its failures recorded. On the CPU: wall time
(torch.utils.benchmark at torch's default thread count), 5 interleaved rounds, one input.

Prints each shape as it is measured (with its index in the sample), then the distribution
of each ratio and the worst shapes; writes random.csv and random.png (small_extents.csv
and small_extents.png) and a JSON of the device and the command into --out.
"""

import csv
import dataclasses
import math
import random
import statistics
import time

import torch

import warpreduce_torch as wr
from warpreduce_torch.testing import VIEW_LAYOUTS, random_tensor, random_view

from . import plots
from .dims import plan_summary
from .timing import (
    check_close_to_sum,
    implementation,
    interleaved_gpu_times,
    interleaved_wall_times,
    rotated,
    rotating_inputs,
)

MIB = 1 << 20
SECTOR = 32  # bytes: the unit in which DRAM is read, on the GPU and as a CPU's half line

# Layouts: the tests' views, the innermost dim with stride 2, and a random memory order.
LAYOUTS = VIEW_LAYOUTS + ["strided_last", "permuted_randomly"]
# Those that read every byte between their first and last (the rest skip or re-read).
DENSE_LAYOUTS = ("contiguous", "transposed", "permuted", "permuted_randomly")
NEEDS_TWO_DIMS = ("transposed", "permuted", "permuted_randomly", "expanded")
# How often each is drawn, relative to the others.
LAYOUT_WEIGHTS = {layout: 2 if layout == "contiguous" else 1 for layout in LAYOUTS}
DTYPE_WEIGHTS = {
    "float32": 4,
    "bfloat16": 3,
    "float16": 1,
    "float64": 1,
    "int32": 1,
    "int8": 0.5,
    "bool": 0.5,
}
RANK_WEIGHTS = {1: 1, 2: 3, 3: 3, 4: 2, 5: 1, 6: 1}
SMALL_EXTENT_P = 0.35  # each dim's chance of a small extent, 1-8
FULL_SUM_P = 0.1  # a full sum, dims None or every dim named (and every 1-D input)
NEGATIVE_DIM_P = 0.3  # each reduced dim's chance of being named by a negative number

GPU_MIB = (8, 256)
CPU_MIB = (2, 32)
# The small-extent family: (outer, reduced, inner), the middle dim reduced.
SMALL_REDUCED = range(2, 9)
SMALL_INNER = sorted([1 << k for k in range(13)] + [3, 5, 12, 100, 1000])
SMALL_MIB = {"cuda": 64, "cpu": 16}
IMPLS = ["torch.sum", "torch.compile", "auto", "roofline"]


@dataclasses.dataclass(frozen=True)
class Case:
    shape: tuple
    dims: object  # a tuple of dims (some negative), or None: the full sum
    layout: str  # one of LAYOUTS
    dtype: str
    order: tuple = ()  # permuted_randomly: the dims from outermost to innermost in memory

    @property
    def name(self):
        shape = " x ".join(map(str, self.shape))
        dims = "None" if self.dims is None else ",".join(map(str, self.dims))
        order = f" {self.order}" if self.order else ""
        return f"{self.dtype} {shape} dims ({dims}) {self.layout}{order}"

    def make(self, device, seed=0):
        """The input: random data (around 0.5; around 0 for float16, whose sums of 2^17
        such values would pass its largest finite value) in the case's layout."""
        dtype = getattr(torch, self.dtype)
        mean = 0.0 if dtype == torch.float16 else 0.5
        shape = tuple(self.shape)
        if self.layout == "strided_last":  # every other element of a last dim twice as long
            base = random_tensor(shape[:-1] + (2 * shape[-1],), dtype, device, seed, mean=mean)
            return base[..., ::2]
        if self.layout == "permuted_randomly":
            stored = tuple(shape[d] for d in self.order)
            base = random_tensor(stored, dtype, device, seed, mean=mean)
            return base.permute(*(self.order.index(d) for d in range(len(shape))))
        return random_view(shape, self.layout, dtype, device, seed, mean=mean)


def sample_cases(n, seed, min_bytes, max_bytes):
    """n random cases (Case), the same for the same arguments, each of min_bytes to
    max_bytes of input (the view's elements, not its base)."""
    rng = random.Random(seed)
    return [sample_case(rng, min_bytes, max_bytes) for _ in range(n)]


def weighted(rng, weights):
    return rng.choices(list(weights), list(weights.values()))[0]


def sample_case(rng, min_bytes, max_bytes):
    while True:  # drawn again until the size falls in the range
        rank = weighted(rng, RANK_WEIGHTS)
        dtype = weighted(rng, DTYPE_WEIGHTS)
        layouts = {k: w for k, w in LAYOUT_WEIGHTS.items() if rank > 1 or k not in NEEDS_TWO_DIMS}
        layout = weighted(rng, layouts)
        itemsize = getattr(torch, dtype).itemsize
        nbytes = math.exp(rng.uniform(math.log(min_bytes), math.log(max_bytes)))
        if layout == "expanded":  # the first dim broadcast, the base in the range too
            if nbytes < 2 * min_bytes:
                continue
            times = round(math.exp(rng.uniform(math.log(2), math.log(nbytes / min_bytes))))
            shape = (times,) + sample_extents(rng, rank - 1, nbytes / itemsize / times)
            if math.prod(shape[1:]) * itemsize < min_bytes:
                continue
        else:
            shape = sample_extents(rng, rank, nbytes / itemsize)
        if not min_bytes <= math.prod(shape) * itemsize <= max_bytes:
            continue
        order = ()
        if layout == "permuted_randomly":
            while not order or order == tuple(range(rank)):
                order = tuple(rng.sample(range(rank), rank))
        if rank == 1 or rng.random() < FULL_SUM_P:
            dims = None if rng.random() < 0.5 else tuple(rng.sample(range(rank), rank))
        else:
            dims = tuple(rng.sample(range(rank), rng.randint(1, rank - 1)))
        if dims is not None:
            dims = tuple(d - rank if rng.random() < NEGATIVE_DIM_P else d for d in dims)
        return Case(shape, dims, layout, dtype, order)


def sample_extents(rng, rank, numel):
    """Extents of about `numel` elements in all: each small (1-8) with probability
    SMALL_EXTENT_P (one at least is not), the log of what is left split at random among
    the others."""
    small = [rng.random() < SMALL_EXTENT_P for _ in range(rank)]
    if all(small):
        small[rng.randrange(rank)] = False
    shape = [rng.randint(1, 8) if s else 0 for s in small]
    large = [i for i in range(rank) if not small[i]]
    rest = max(numel / math.prod(s for s in shape if s), 1.0)
    shares = [rng.random() for _ in large]
    for i, share in zip(large, shares):
        shape[i] = max(1, round(rest ** (share / sum(shares))))
    biggest = max(large, key=lambda i: shape[i])  # takes up the rounding
    shape[biggest] = max(1, round(shape[biggest] * numel / math.prod(shape)))
    return tuple(shape)


def small_extent_cases(device):
    """The middle dim of (outer, reduced, inner) summed, reduced 2-8, inner 1-4096, float32
    and bfloat16; outer as many as make SMALL_MIB[device] MiB or more."""
    cases = []
    for dtype in ("float32", "bfloat16"):
        itemsize = getattr(torch, dtype).itemsize
        for reduced in SMALL_REDUCED:
            for inner in SMALL_INNER:
                outer = -(-SMALL_MIB[device] * MIB // (reduced * inner * itemsize))
                cases.append(Case((outer, reduced, inner), (1,), "contiguous", dtype))
    return cases


def needed_bytes(x):
    """The bytes a sum of x must read: the distinct 32-byte sectors of memory that its
    elements lie in, times 32, counted on x's device by marking the elements of its
    storage that x reads (a broadcast dim marks its elements once)."""
    if x.numel() == 0:
        return 0
    itemsize = x.element_size()
    storage = x.untyped_storage()
    lead = storage.data_ptr() % SECTOR // itemsize  # elements before the storage's start
    per_sector = SECTOR // itemsize
    count = lead + storage.nbytes() // itemsize
    marks = torch.zeros(-(-count // per_sector) * per_sector, dtype=torch.bool, device=x.device)
    read = [d for d in range(x.dim()) if x.stride(d) != 0 and x.size(d) > 1]
    marks.as_strided(
        [x.size(d) for d in read], [x.stride(d) for d in read], lead + x.storage_offset()
    ).fill_(True)
    return int(marks.view(-1, per_sector).any(1).sum()) * SECTOR


def result_bytes(x, dims):
    """The bytes of torch.sum(x, dims)'s result (its dtype: int64 for integers and bool)."""
    itemsize = torch.sum(torch.ones(1, dtype=x.dtype)).element_size()
    if dims is None:
        return itemsize
    reduced = {d % x.dim() for d in dims}
    return math.prod(n for d, n in enumerate(x.shape) if d not in reduced) * itemsize


def plan_passes(x, dims):
    """auto's plan for the sum (warpreduce_torch._C.plan): each pass's fields."""
    plan = wr._C.plan(x, None if dims is None else list(dims))
    passes = [
        p["kind"] + "(" + ", ".join(f"{k}={v}" for k, v in p.items() if k != "kind") + ")"
        for p in plan["passes"]
    ]
    tail = f" ({plan['tail']})" if plan["tail"] else ""
    return " ; ".join(passes) + tail + (" (copied)" if plan["copied"] else "")


def first_line(error):
    text = str(error).strip().splitlines()
    return f"{type(error).__name__}: {text[0] if text else ''}"[:200]


def checked(fns, x, case, errors):
    """fns without those that fail on x or disagree with torch.sum (a smoke test; the
    tests compare properly), their errors in `errors`; the seconds torch.compile's
    first call took (compiling), or None."""
    kept, compile_s = {}, None
    for name, fn in fns.items():
        started = time.perf_counter()
        try:
            check_close_to_sum(name, fn(x), x, case.dims, case.name)
        except Exception as error:  # noqa: BLE001  (recorded and reported, not timed)
            errors[name] = first_line(error)
            continue
        if name == "torch.compile":
            compile_s = time.perf_counter() - started
        kept[name] = fn
    return kept, compile_s


def measure_gpu(case, with_compile):
    """Seconds per call of each implementation (GPU time), and what the row needs."""
    probe = case.make("cuda", 0)
    needed = needed_bytes(probe)
    names = ["torch.sum", "auto"] + (["torch.compile"] if with_compile else [])
    errors = {}
    fns, compile_s = checked(
        {name: implementation(name, case.dims) for name in names}, probe, case, errors
    )
    del probe
    inputs = rotated(lambda seed: case.make("cuda", seed), needed)
    full = rotating_inputs(needed // inputs[0].element_size(), inputs[0].dtype, "cuda")
    fns["roofline"] = implementation("auto")
    times = interleaved_gpu_times(fns, {**{name: inputs for name in fns}, "roofline": full})
    x = inputs[0]
    facts = (x, needed, errors, compile_s)
    del inputs, full
    return times, facts


def measure_cpu(case, min_run_time):
    """Seconds per call of each implementation (median wall time), at torch's default
    thread count."""
    x = case.make("cpu", 0)
    needed = needed_bytes(x)
    errors = {}
    fns, _ = checked(
        {name: implementation(name, case.dims) for name in ("torch.sum", "auto")}, x, case, errors
    )
    fns["roofline"] = implementation("auto")
    full = random_tensor((needed // x.element_size(),), x.dtype, "cpu")
    inputs = {**{name: x for name in fns}, "roofline": full}
    walls = interleaved_wall_times(
        fns, inputs, "wall time per call", case.name, min_run_time, threads=torch.get_num_threads()
    )
    return {name: m.median for name, m in walls.items()}, (x, needed, errors, None)


def make_row(index, case, times, facts):
    x, needed, errors, compile_s = facts
    written = result_bytes(x, case.dims)
    row = {
        "index": index,
        "dtype": case.dtype,
        "shape": "x".join(map(str, case.shape)),
        "strides": "x".join(map(str, x.stride())),
        "dims": "all" if case.dims is None else ",".join(map(str, case.dims)),
        "layout": case.layout + (f" {case.order}" if case.order else ""),
        "mib": x.numel() * x.element_size() / MIB,
        "needed_mib": needed / MIB,
        "written_mib": written / MIB,
    }
    for name in IMPLS:
        seconds = times.get(name)
        row[f"{name}_us"] = "" if seconds is None else seconds * 1e6
        row[f"{name}_gbps"] = "" if seconds is None else needed / seconds / 1e9
    for name in IMPLS:
        if name != "auto":
            known = "auto" in times and name in times
            row[f"auto_vs_{name}"] = times[name] / times["auto"] if known else ""
    # The roofline's time for the bytes read and written (the module's docstring).
    if "auto" in times and "roofline" in times and needed > 0:
        moved = (needed + written) / needed
        row["auto_vs_memory"] = times["roofline"] * moved / times["auto"]
    else:
        row["auto_vs_memory"] = ""
    row["compile_s"] = "" if compile_s is None else compile_s
    row["plan"] = plan_summary(x, case.dims) or "no kernel"
    row["plan_passes"] = plan_passes(x, case.dims)
    row["errors"] = "; ".join(f"{name}: {text}" for name, text in errors.items())
    return row


def gbps_text(value):
    """GB/s to three digits or the unit ("" when not measured)."""
    return "" if value == "" else f"{value:.0f}" if value >= 100 else f"{value:.3g}"


def describe_row(row, case):
    gbps = ", ".join(
        f"{name} {gbps_text(row[f'{name}_gbps'])}" for name in IMPLS if row[f"{name}_gbps"] != ""
    )
    ratios = ", ".join(
        f"auto/{name} {row[f'auto_vs_{name}']:.2f}"
        for name in IMPLS
        if name != "auto" and row[f"auto_vs_{name}"] != ""
    )
    line = (
        f"[{row['index']:3d}] {case.name}: {row['mib']:.1f} MiB, {row['needed_mib']:.1f} needed;"
        f" GB/s {gbps}; {ratios}; {row['plan']}"
    )
    return line + (f"; ERRORS {row['errors']}" if row["errors"] else "")


def run(indexed_cases, measure, max_seconds=math.inf, progress=None, on_row=None):
    """Rows of measurements, one per (index, case) in turn, each printed as it comes (and
    passed to on_row(rows)), until the next case might end after max_seconds (judged by
    the longest case so far)."""
    rows, longest, start = [], 0.0, time.monotonic()
    for index, case in indexed_cases:
        if time.monotonic() - start + longest > max_seconds:
            print(f"Stopped after {len(rows)} shapes: --max-seconds {max_seconds:g}.", flush=True)
            break
        began = time.monotonic()
        try:
            times, facts = measure(case)
            rows.append(make_row(index, case, times, facts))
            del times, facts  # the input, before the next case's
        except torch.OutOfMemoryError as error:
            print(f"[{index:3d}] {case.name}: skipped, {first_line(error)}", flush=True)
            continue
        finally:
            if torch.cuda.is_available():
                torch.cuda.empty_cache()
        rows[-1]["case_s"] = time.monotonic() - began
        longest = max(longest, rows[-1]["case_s"])
        print(describe_row(rows[-1], case), flush=True)
        if on_row:
            on_row(rows)
        if progress:
            progress.update(1)
    if rows:
        seconds = time.monotonic() - start
        print(
            f"Measured {len(rows)} shapes in {seconds:.0f} s ({seconds / len(rows):.1f} s a shape)"
        )
    return rows


def read_rows(paths):
    """The rows of CSVs that this module wrote (a run split over several calls), by index,
    numbers as numbers."""
    numeric = ("_us", "_gbps", "mib", "_s")
    rows = {}
    for path in paths:
        with open(path, newline="") as f:
            for row in csv.DictReader(f):
                for key, value in row.items():
                    if value != "" and (key.endswith(numeric) or key.startswith("auto_vs_")):
                        row[key] = float(value)
                row["index"] = int(row["index"])
                rows[row["index"]] = row
    return [rows[i] for i in sorted(rows)]


def percentile(values, q):
    """The q-th percentile (0-100), linear between the two nearest."""
    v = sorted(values)
    at = (len(v) - 1) * q / 100
    lo = math.floor(at)
    return v[lo] + (v[min(lo + 1, len(v) - 1)] - v[lo]) * (at - lo)


def distribution(label, values):
    """A markdown row: the min, 10th percentile, median and geometric mean of `values`."""
    if not values:
        return f"| {label} | 0 | | | | |"
    geomean = math.exp(statistics.fmean(math.log(v) for v in values))
    return (
        f"| {label} | {len(values)} | {min(values):.3f} | {percentile(values, 10):.3f} "
        f"| {statistics.median(values):.3f} | {geomean:.3f} |"
    )


def ratios(rows, name, layouts=None):
    key = f"auto_vs_{name}"
    return [
        r[key]
        for r in rows
        if r.get(key, "") != "" and (layouts is None or r["layout"].split()[0] in layouts)
    ]


def summary(rows):
    """The distribution of each ratio (auto's GB/s over the other's; above 1, auto is
    faster), the roofline's split by layout, and the shapes with errors, as markdown."""
    sliced = [layout for layout in LAYOUTS if layout not in DENSE_LAYOUTS]
    lines = [
        f"\n{len(rows)} shapes; ratio = auto's GB/s / the other's (above 1: auto is faster)\n",
        "| ratio | shapes | min | 10th percentile | median | geomean |",
        "|---|---|---|---|---|---|",
    ]
    for name in IMPLS:
        if name != "auto":
            lines.append(distribution(f"auto / {name}", ratios(rows, name)))
    for layouts in (DENSE_LAYOUTS, sliced):
        label = f"auto / roofline: {', '.join(layouts)}"
        lines.append(distribution(label, ratios(rows, "roofline", layouts)))
    label = "auto / memory bound (the roofline counting the result's bytes too)"
    lines.append(distribution(label, ratios(rows, "memory")))
    compiled = [r["compile_s"] for r in rows if r["compile_s"] != ""]
    if compiled:
        lines.append(
            f"\ntorch.compile's first call (compiling): {statistics.median(compiled):.1f} s "
            f"median, {max(compiled):.1f} s longest"
        )
    failed = [r for r in rows if r["errors"]]
    if failed:
        lines.append(f"\nErrors ({len(failed)} shapes; those implementations not timed there):")
    for r in failed:
        lines.append(f"  [{r['index']}] {r['dtype']} {r['shape']} dims {r['dims']}: {r['errors']}")
    return "\n".join(lines)


def worst_table(rows, name, count=10):
    """The `count` shapes where auto / `name` is lowest, as a markdown table."""
    key = f"auto_vs_{name}"
    worst = sorted((r for r in rows if r[key] != ""), key=lambda r: r[key])[:count]
    lines = [
        f"\nThe {len(worst)} lowest auto / {name} (GB/s of the bytes that must be read):",
        "| # | dtype | shape | strides | dims | layout | MiB | needed | torch.sum | torch.compile "
        f"| auto | roofline | auto / {name} | plan |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in worst:
        gbps = " | ".join(gbps_text(r[f"{n}_gbps"]) for n in IMPLS)
        lines.append(
            f"| {r['index']} | {r['dtype']} | {r['shape']} | {r['strides']} | {r['dims']} "
            f"| {r['layout']} | {r['mib']:.1f} | {r['needed_mib']:.1f} | {gbps} | {r[key]:.3f} "
            f"| {r['plan']} |"
        )
    return "\n".join(lines)


def small_extents_table(rows):
    """auto / roofline of each shape of the small-extent family, and those under 85%."""
    lines = [
        "\n| dtype | outer x reduced x inner | MiB | torch.sum | auto | roofline "
        "| auto / roofline | plan |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        gbps = " | ".join(gbps_text(r[f"{n}_gbps"]) for n in ("torch.sum", "auto", "roofline"))
        ratio = "" if r["auto_vs_roofline"] == "" else f"{r['auto_vs_roofline']:.0%}"
        lines.append(
            f"| {r['dtype']} | {r['shape']} | {r['mib']:.0f} | {gbps} | {ratio} | {r['plan']} |"
        )
    under = [r for r in rows if r["auto_vs_roofline"] != "" and r["auto_vs_roofline"] < 0.85]
    lines.append(f"\n{len(under)} of {len(rows)} shapes under 85% of the roofline")
    return "\n".join(lines)


def plot(rows, title, path):
    """auto / torch.sum and auto / roofline against the input's size, a point a shape,
    coloured by layout."""
    fig, axes = plots.panels(2, 7, 5.5)
    colours = dict(zip(LAYOUTS, plots.pyplot().get_cmap("tab10").colors))
    for ax, name in zip(axes, ("torch.sum", "roofline")):
        key = f"auto_vs_{name}"
        for layout in LAYOUTS:
            pts = [
                (r["mib"], r[key])
                for r in rows
                if r[key] != "" and r["layout"].split()[0] == layout
            ]
            if pts:
                ax.scatter(*zip(*pts), s=16, color=colours[layout], label=layout)
        ax.axhline(1.0, color="black", linewidth=1, linestyle="--")
        ax.set_yscale("log")
        plots.label(
            ax, f"auto / {name}, {title}", f"auto / {name} (GB/s ratio)", "input MiB", legend_size=7
        )
    plots.save(fig, path)


def plot_small_extents(rows, title, path):
    """auto / roofline against the inner extent, a line per reduced extent, a panel a
    dtype."""
    dtypes = list(dict.fromkeys(r["dtype"] for r in rows))
    fig, axes = plots.panels(len(dtypes), 7, 5)
    for ax, dtype in zip(axes, dtypes):
        for reduced in SMALL_REDUCED:
            pts = [
                (int(r["shape"].split("x")[2]), r["auto_vs_roofline"])
                for r in rows
                if r["dtype"] == dtype
                and int(r["shape"].split("x")[1]) == reduced
                and r["auto_vs_roofline"] != ""
            ]
            if pts:
                ax.plot(*zip(*sorted(pts)), marker="o", markersize=3, label=f"reduced {reduced}")
        ax.axhline(0.85, color="black", linewidth=1, linestyle="--", label="85%")
        title_ = f"{dtype}: (outer, reduced, inner) summed over the middle, {title}"
        plots.label(ax, title_, "auto / roofline", "inner extent", legend_size=7)
    plots.save(fig, path)
