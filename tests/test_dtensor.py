"""warpreduce.sum on sharded DTensors, against torch.sum of the gathered tensor.

Each test starts its own group of processes, one a rank: gloo on CPU (2 and 4 ranks,
always), NCCL on GPUs (one rank a GPU, where there are that many). Starting a group
costs seconds, so one group runs a whole batch of cases and reports every failing case
at the end. Ranks talk over 127.0.0.1 only.
"""

import datetime
import functools
import math
import os
import socket
import sys
import tempfile
import traceback

import pytest
import torch
import torch.distributed as dist
import torch.multiprocessing as mp

import warpreduce_torch as wr
from warpreduce_torch.testing import random_tensor, reduced_length

pytestmark = pytest.mark.skipif(
    not dist.is_available(), reason="this torch build has no torch.distributed"
)

if dist.is_available():
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.tensor import DTensor, Partial, Replicate, Shard, distribute_tensor


def needs_gpus(n):
    return pytest.mark.skipif(
        torch.cuda.device_count() < n,
        reason=f"NCCL runs one rank a GPU: {n} ranks need {n} GPUs, "
        f"{torch.cuda.device_count()} visible",
    )


GROUPS = [
    pytest.param("gloo", 2, id="gloo-2"),
    pytest.param("gloo", 4, id="gloo-4"),
    pytest.param("nccl", 2, marks=needs_gpus(2), id="nccl-2"),
    pytest.param("nccl", 4, marks=needs_gpus(4), id="nccl-4"),
]
TWO_RANK_GROUPS = [g for g in GROUPS if g.values[1] == 2]


# --- running a batch of checks on every rank ------------------------------------------


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run_ranks(check, backend, world_size):
    """Runs check(device) on `world_size` fresh processes, in one process group."""
    # spawn (not fork): NCCL and CUDA need fresh processes. A failing rank's traceback
    # comes back in the ProcessRaisedException that spawn raises.
    mp.spawn(
        _rank_main, args=(check, backend, world_size, free_port()), nprocs=world_size, join=True
    )


def _rank_main(rank, check, backend, world_size, port):
    # Loopback only, for the collectives' own connections too (gloo and NCCL pick an
    # interface of their own otherwise).
    os.environ.setdefault("GLOO_SOCKET_IFNAME", "lo")
    os.environ.setdefault("NCCL_SOCKET_IFNAME", "lo")
    # Each rank its own Inductor cache: ranks compiling the same kernel at once into a
    # shared one could load a library another rank was still writing (an abort, about one
    # run in seven of the compiled exact check on two gloo ranks).
    os.environ["TORCHINDUCTOR_CACHE_DIR"] = tempfile.mkdtemp(prefix=f"inductor-rank{rank}-")
    device = "cpu"
    if backend == "nccl":
        torch.cuda.set_device(rank)
        device = "cuda"
    dist.init_process_group(
        backend,
        init_method=f"tcp://127.0.0.1:{port}",
        rank=rank,
        world_size=world_size,
        # A rank that fails leaves the others waiting in a collective: end them soon.
        timeout=datetime.timedelta(seconds=120),
    )
    try:
        check(device)
    finally:
        # Every rank done before any tears the group down: a gloo rank aborted once in CI
        # ("terminate called without an active exception", 2 ranks) as the group ended.
        try:
            dist.barrier()
        except Exception:
            pass  # a rank that failed mid-way: the others time out or end anyway
        dist.destroy_process_group()
    # A rank that passed leaves without the interpreter's teardown, whose destructors
    # aborted a gloo rank twice in CI even after the barrier ("terminate called without
    # an active exception", 2 ranks, the checks done). A failure above raises instead,
    # for spawn to report.
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


class Failures:
    """Collects failing cases, so that one run reports all of them. Every rank runs the
    same cases in the same order, so their collectives stay matched after a failure."""

    def __init__(self):
        self.cases = []

    def run(self, name, fn, *args):
        try:
            fn(*args)
        except Exception:
            self.cases.append(f"--- {name}\n{traceback.format_exc()}")

    def raise_if_any(self, total):
        if self.cases:
            raise AssertionError(
                f"rank {dist.get_rank()}: {len(self.cases)} of {total} cases failed\n"
                + "\n".join(self.cases)
            )


# --- building inputs and checking results ---------------------------------------------


def make_dtensor(shape, dtype, mesh, placements, seed):
    """A DTensor of random data with these placements, and the whole tensor it stands
    for, both made on every rank without communication. Along a Partial mesh dim the
    ranks hold different random pieces, and the tensor is their sum in the dtype, as
    DTensor's all-reduce adds them (int8 wraps, bfloat16 rounds)."""
    partial_dims = [i for i, p in enumerate(placements) if isinstance(p, Partial)]
    assert len(partial_dims) <= 1, "one Partial mesh dim is enough here"
    parts = mesh.size(partial_dims[0]) if partial_dims else 1
    pieces = [
        random_tensor(shape, dtype, "cpu", seed + 1000 * i).to(mesh.device_type)
        for i in range(parts)
    ]
    full = functools.reduce(torch.add, pieces)
    mine = pieces[mesh.get_coordinate()[partial_dims[0]]] if partial_dims else full
    # src_data_rank=None: every rank cuts its shard from its own copy, no scatter.
    others = [Replicate() if isinstance(p, Partial) else p for p in placements]
    local = distribute_tensor(mine, mesh, others, src_data_rank=None).to_local()
    source = DTensor.from_local(
        local, mesh, placements, run_check=False, shape=full.shape, stride=full.stride()
    )
    return source, full


def assert_matches_full_sum(result, full, dim, keepdim, dtype, combined_parts, input_parts):
    """result.full_tensor() is torch.sum(full, dim, keepdim, dtype=dtype): the same
    shape and dtype; integers exactly; floats within a tolerance that grows with the
    reduced length, against a float64 reference.

    Two more roundings where partial values meet: `combined_parts` partial sums (one a
    rank of a Partial result) were rounded to the result's dtype and added in it by the
    all-reduce; and `full`, gathered from `input_parts` pieces of a Partial input, was
    added up in the input's dtype, while the op summed the pieces themselves (with
    dtype=float32 on bfloat16 pieces, more exactly than `full` holds them)."""
    got = result.full_tensor()
    expected = torch.sum(full, dim=dim, keepdim=keepdim, dtype=dtype)
    assert got.shape == expected.shape, (got.shape, expected.shape)
    assert got.dtype == expected.dtype, (got.dtype, expected.dtype)
    if not expected.dtype.is_floating_point:
        assert torch.equal(got, expected), (got, expected)
        return
    source = (full if dtype is None else full.to(dtype)).double()
    ref = torch.sum(source, dim=dim, keepdim=keepdim)
    abs_ref = torch.sum(source.abs(), dim=dim, keepdim=keepdim)
    n = reduced_length(tuple(full.shape), dim)
    eps = torch.finfo(expected.dtype).eps
    acc_eps = torch.finfo(torch.float64 if expected.dtype == torch.float64 else torch.float32).eps
    tol = (
        eps * ref.abs()  # the result's own rounding
        + 2 * acc_eps * math.log2(n + 2) * abs_ref  # the summation, pairwise-like
        + combined_parts * eps * abs_ref  # partial sums rounded, then added
    )
    if full.dtype.is_floating_point:
        tol += input_parts * torch.finfo(full.dtype).eps * abs_ref  # pieces added
    err = (got.double() - ref).abs()
    if not torch.all(err <= tol):
        worst = torch.argmax(err - tol)
        raise AssertionError(
            f"error {err.flatten()[worst].item():.3g} over tolerance "
            f"{tol.flatten()[worst].item():.3g}"
        )


def assert_same_bits(got, expected):
    assert got.shape == expected.shape and got.dtype == expected.dtype
    ints = {2: torch.int16, 4: torch.int32, 8: torch.int64}[got.element_size()]
    same = (got.view(ints) == expected.view(ints)) | (got.isnan() & expected.isnan())
    assert bool(same.all()), (got, expected)


def expected_placements(source, result_dtype, torch_sum_placements, exact_floats=False):
    """The result's placements: torch.sum's on DTensors, except on a mesh dim where the
    input is Partial and the parts may not be summed one by one (an int8 input wraps in
    int8 before its sum is taken in int64): there the input is gathered first. Exact
    float sums are never Partial: made whole by exchanging digits, or gathered first."""
    linear = (source.dtype.is_floating_point and result_dtype.is_floating_point) or (
        source.dtype == result_dtype == torch.int64
    )
    return tuple(
        Replicate()
        if (isinstance(p, Partial) and not linear) or (exact_floats and isinstance(q, Partial))
        else q
        for p, q in zip(source.placements, torch_sum_placements)
    )


def check_case(mesh, shape, placements, dtype, dim, keepdim, sum_dtype, kernel, seed, use_op):
    source, full = make_dtensor(shape, dtype, mesh, placements, seed)
    if use_op:
        result = torch.ops.warpreduce.sum(source, dim, keepdim, dtype=sum_dtype, kernel=kernel)
    else:
        result = wr.sum(source, dim, keepdim, dtype=sum_dtype, kernel=kernel)
    assert isinstance(result, DTensor)

    # dim=() reduces every dim, as dim=None does; the reference says None, since
    # torch.sum on a DTensor takes dim=() as "reduce no dim" for its placements.
    torch_dim = None if dim in ((), []) else dim
    reference = torch.sum(source, torch_dim, keepdim, dtype=sum_dtype)
    exact_floats = kernel == "exact" and result.dtype.is_floating_point
    want = expected_placements(source, result.dtype, reference.placements, exact_floats)
    assert result.placements == want, (result.placements, want)
    if exact_floats:
        # The bits of the exact sum of the whole tensor on one device.
        whole = wr.sum(source.full_tensor(), dim, keepdim, dtype=sum_dtype, kernel="exact")
        assert_same_bits(result.full_tensor(), whole)
        if want != reference.placements:
            return  # made whole: each rank holds the whole sum, not its shard's

    combined_parts = math.prod(
        mesh.size(i) for i, p in enumerate(result.placements) if isinstance(p, Partial)
    )
    input_parts = math.prod(
        mesh.size(i) for i, p in enumerate(source.placements) if isinstance(p, Partial)
    )
    assert_matches_full_sum(
        result, full, torch_dim, keepdim, sum_dtype, combined_parts, input_parts
    )

    # dim, keepdim, dtype= and kernel= reached each rank's local call unchanged: its
    # local result is the plain op on its own shard (where nothing was gathered first).
    gathered_first = any(
        isinstance(p, Partial) and isinstance(w, Replicate) for p, w in zip(source.placements, want)
    )
    if not gathered_first:
        local = wr.sum(source.to_local(), dim, keepdim, dtype=sum_dtype, kernel=kernel)
        assert torch.equal(result.to_local(), local)


# Awkward shapes: sizes that do not divide by 2 or 4 (uneven shards), a dim smaller than
# the mesh (empty shards), an empty tensor, 1-D and 0-d.
MAIN_SHAPE = (7, 5)
OTHER_SHAPES = [(3, 5, 6), (11,), (1, 6), (0, 4), ()]
DTYPES = [
    torch.float32,
    torch.float64,
    torch.bfloat16,
    torch.int64,
    torch.int32,
    torch.int8,
    torch.bool,
]
FEW_DTYPES = [torch.float32, torch.bfloat16, torch.int8]
# dtype= casts first: widening, narrowing, float to int, int to float.
CASTS = [
    (torch.float32, torch.float64),
    (torch.bfloat16, torch.float32),
    (torch.int8, torch.float64),
    (torch.float32, torch.int32),
    (torch.int32, torch.int64),
]


def dims_for(ndim):
    if ndim == 0:
        return [None, (), 0, -1]
    if ndim == 1:
        return [None, 0, [-1]]
    if ndim == 2:
        return [None, (), 0, [1], -1, (0, 1)]
    return [None, 1, [0, 2], -1, (2, 0, 1)]


def layouts_for(mesh, ndim):
    """Placements to try on `mesh`: shards of every dim, replicated, partial, and on a
    2-D mesh, both mesh dims on one tensor dim and mixtures."""
    if mesh.ndim == 1:
        return [[Shard(d)] for d in range(ndim)] + [[Replicate()], [Partial()]]
    last = max(ndim - 1, 0)
    if ndim == 0:
        return [[Replicate(), Replicate()], [Partial(), Replicate()]]
    return [
        [Shard(0), Shard(last)],
        [Shard(last), Shard(0)],
        [Shard(0), Shard(0)],
        [Replicate(), Shard(last)],
        [Partial(), Shard(0)],
        [Replicate(), Partial()],
    ]


def check_sums_match_torch_sum(device):
    world = dist.get_world_size()
    meshes = [init_device_mesh(device, (world,))]
    if world == 4:
        meshes.append(init_device_mesh(device, (2, 2), mesh_dim_names=("dp", "tp")))
    kernels = wr.kernels(device)
    # Every dtype and shape with 2 ranks; with 4 (on a 2-core machine, all the CI has),
    # fewer, where 4 ranks and a 2-D mesh make new layouts rather than new arithmetic.
    if world == 2:
        main_dtypes = [(t, None) for t in DTYPES] + CASTS
        other_shapes = OTHER_SHAPES
    else:
        main_dtypes = [(t, None) for t in FEW_DTYPES] + [(torch.int8, torch.float64)]
        other_shapes = [(3, 5, 6), (1, 6)]
    cases = []
    for mesh in meshes:
        for shape in [MAIN_SHAPE, *other_shapes]:
            if shape == MAIN_SHAPE:
                dtype_pairs = main_dtypes
            else:
                dtype_pairs = [(torch.float32, None), (torch.int8, None)]
            for placements in layouts_for(mesh, len(shape)):
                for dtype, sum_dtype in dtype_pairs:
                    if dtype == torch.bool and any(isinstance(p, Partial) for p in placements):
                        continue  # a sum of bools is no bool
                    for dim in dims_for(len(shape)):
                        for keepdim in (False, True):
                            cases.append((mesh, shape, placements, dtype, dim, keepdim, sum_dtype))
    failures = Failures()
    for i, (mesh, shape, placements, dtype, dim, keepdim, sum_dtype) in enumerate(cases):
        kernel = kernels[i % len(kernels)]  # every kernel of the device, in turn
        name = (
            f"mesh {tuple(mesh.shape)} shape {shape} {placements} {dtype} dim={dim} "
            f"keepdim={keepdim} dtype={sum_dtype} kernel={kernel}"
        )
        failures.run(
            name,
            check_case,
            mesh,
            shape,
            placements,
            dtype,
            dim,
            keepdim,
            sum_dtype,
            kernel,
            i,
            i % 2 == 1,
        )
    failures.raise_if_any(len(cases))


@pytest.mark.parametrize("backend,world_size", GROUPS)
def test_sums_match_torch_sum(backend, world_size):
    run_ranks(check_sums_match_torch_sum, backend, world_size)


# --- autograd, torch.compile, determinism ---------------------------------------------


def check_gradient(mesh, placements, dim, keepdim, dtype):
    """The gradient through wr.sum equals the one through torch.sum, values and
    placements (the output gradient broadcast back over the reduced dims)."""
    x = random_tensor((7, 6), dtype, "cpu", seed=3).to(mesh.device_type)
    weight = random_tensor(torch.sum(x, dim, keepdim).shape, torch.float64, "cpu", 4)
    weight = weight.to(mesh.device_type)
    grads = []
    for sum_fn in (wr.sum, torch.sum):
        source = distribute_tensor(x, mesh, placements).requires_grad_()
        out = sum_fn(source, dim, keepdim, dtype=torch.float64)
        (out.full_tensor() * weight).sum().backward()
        grads.append(source.grad)
    ours, theirs = grads
    assert ours.placements == theirs.placements, (ours.placements, theirs.placements)
    assert ours.dtype == dtype
    assert torch.equal(ours.full_tensor(), theirs.full_tensor())


def check_compiled(mesh):
    """A compiled function calling the op on DTensors gives the eager results, their
    placements (a Partial and a Shard) too, and the eager gradients."""

    def f(t):
        return wr.sum(t * 2, dim=1), wr.sum(t, dim=0, keepdim=True)

    # Even shards: with uneven ones, torch 2.14's FX graph cache (shared by the ranks on
    # one machine) can hand one rank the code compiled for another's shard, local sizes
    # and all, which then fails its size check; torch.sum fails the same way.
    x = random_tensor((8, 6), torch.float32, "cpu", seed=5).to(mesh.device_type)
    eager_in = distribute_tensor(x, mesh, [Shard(1)]).requires_grad_()
    compiled_in = distribute_tensor(x, mesh, [Shard(1)]).requires_grad_()
    eager = f(eager_in)
    compiled = torch.compile(f, fullgraph=True)(compiled_in)
    placements = [c.placements for c in compiled]
    assert placements == [(Partial(),), (Shard(1),)], placements
    for c, e in zip(compiled, eager):
        assert c.placements == e.placements, (c.placements, e.placements)
        torch.testing.assert_close(c.full_tensor(), e.full_tensor())
    sum(e.full_tensor().sum() for e in eager).backward()
    sum(c.full_tensor().sum() for c in compiled).backward()
    assert torch.equal(compiled_in.grad.full_tensor(), eager_in.grad.full_tensor())


def check_repeatable(mesh):
    """The same call on the same mesh gives bitwise the same result: the local sums are
    deterministic and so is the all-reduce that adds them."""
    x = random_tensor((1001, 37), torch.float32, "cpu", seed=6).to(mesh.device_type)
    source = distribute_tensor(x, mesh, [Shard(0)])
    first = wr.sum(source).full_tensor()
    for _ in range(3):
        assert torch.equal(wr.sum(source).full_tensor(), first)


def check_autograd_compile_repeatable(device):
    mesh = init_device_mesh(device, (dist.get_world_size(),))
    failures = Failures()
    total = 0
    for placements in ([Shard(0)], [Shard(1)], [Replicate()]):
        for dim, keepdim in ((0, False), (1, True), (None, False), ((0, 1), True)):
            for dtype in (torch.float32, torch.bfloat16):
                total += 1
                failures.run(
                    f"gradient {placements} dim={dim} keepdim={keepdim} {dtype}",
                    check_gradient,
                    mesh,
                    placements,
                    dim,
                    keepdim,
                    dtype,
                )
    total += 1
    failures.run("compile", check_compiled, mesh)
    total += 1
    failures.run("repeatable", check_repeatable, mesh)
    failures.raise_if_any(total)


@pytest.mark.parametrize("backend,world_size", TWO_RANK_GROUPS)
def test_autograd_compile_and_repeatability(backend, world_size):
    run_ranks(check_autograd_compile_repeatable, backend, world_size)


# --- kernel="exact": the bits of the unsharded sum, for any mesh ----------------------

EXACT_GROUPS = [
    pytest.param("gloo", 1, id="gloo-1"),
    *GROUPS,
]


def check_exact_case(mesh, x, placements, dim, keepdim=False, dtype=None):
    """The exact sum of x distributed with `placements` is, bit for bit, the exact sum of
    x on one device; mesh dims sharding a reduced dim come out replicated."""
    source = distribute_tensor(x, mesh, placements, src_data_rank=None)
    result = wr.sum(source, dim, keepdim, dtype=dtype, kernel="exact")
    whole = wr.sum(x, dim, keepdim, dtype=dtype, kernel="exact")
    assert_same_bits(result.full_tensor(), whole)
    reduced = set(range(x.dim())) if dim is None else {d % x.dim() for d in dim}
    for p, q in zip(placements, result.placements):
        if isinstance(p, Shard) and p.dim in reduced:
            assert q == Replicate(), result.placements
    # torch.ops reaches the same handler.
    op_result = torch.ops.warpreduce.sum(source, dim, keepdim, dtype=dtype, kernel="exact")
    assert_same_bits(op_result.to_local(), result.to_local())


def check_exact_sums(device):
    from .test_exact import cancelling_rows

    world = dist.get_world_size()
    meshes = [init_device_mesh(device, (world,))]
    if world == 4:
        meshes.append(init_device_mesh(device, (2, 2), mesh_dim_names=("dp", "tp")))
    failures = Failures()
    total = 0
    # Every float dtype with 1 and 2 ranks; with 4 (on a 2-core machine, all the CI has),
    # fewer cases, where the ranks add layouts rather than arithmetic.
    dtypes = [torch.float32, torch.bfloat16, torch.float64]
    shapes = [(12, 1001), (5, 3)]  # 3: empty shards
    if world <= 2:
        dtypes.append(torch.float16)
        shapes.append((3, 40_001))
    for dtype in dtypes:
        # The same data on every rank (seeded), cancelling pairs of huge values with
        # small ones: a rounded partial sum a rank would lose the small ones.
        for rows, length in shapes:
            x = cancelling_rows(dtype, device, rows, length, seed=rows)
            for mesh in meshes:
                if mesh.ndim == 1:
                    layouts = [
                        ([Shard(1)], [1]),
                        ([Shard(1)], None),
                        ([Shard(0)], [0]),
                        ([Shard(0)], [1]),
                        ([Replicate()], [1]),
                    ]
                else:
                    layouts = [
                        ([Shard(0), Shard(1)], None),
                        ([Shard(1), Shard(1)], [1]),
                        ([Shard(1), Shard(0)], [1]),
                    ]
                for placements, dim in layouts:
                    for keepdim, sum_dtype in ((False, None), (True, torch.float64)):
                        total += 1
                        failures.run(
                            f"{dtype} {(rows, length)} mesh {tuple(mesh.shape)} {placements} "
                            f"dim={dim} keepdim={keepdim} dtype={sum_dtype}",
                            check_exact_case,
                            mesh,
                            x,
                            placements,
                            dim,
                            keepdim,
                            sum_dtype,
                        )

    # A Partial input: the exact sum of the tensor it stands for.
    def partial_input():
        mesh = meshes[0]
        piece = cancelling_rows(torch.float32, device, 4, 101, seed=dist.get_rank())
        source = DTensor.from_local(piece, mesh, [Partial()], run_check=False)
        result = wr.sum(source, [1], kernel="exact")
        assert result.placements == (Replicate(),)
        whole = wr.sum(source.full_tensor(), [1], kernel="exact")
        assert_same_bits(result.full_tensor(), whole)

    # The gradient is torch.sum's, placements and values.
    def gradient():
        mesh = meshes[0]
        x = random_tensor((7, 6), torch.float32, "cpu", seed=3).to(device)
        grads = []
        for kernel in ("exact", "auto"):
            source = distribute_tensor(x, mesh, [Shard(1)]).requires_grad_()
            wr.sum(source, 1, kernel=kernel).full_tensor().sum().backward()
            grads.append(source.grad)
        assert grads[0].placements == grads[1].placements
        assert torch.equal(grads[0].full_tensor(), grads[1].full_tensor())

    # Under torch.compile, the same bits and placements (the handler traced, digits and
    # all-reduce in the graph).
    def compiled():
        mesh = meshes[0]
        x = cancelling_rows(torch.float32, device, 8, 6, seed=5)

        def f(t):
            return wr.sum(t * 2, dim=1, kernel="exact"), wr.sum(t, dim=0, kernel="exact")

        source = distribute_tensor(x, mesh, [Shard(1)])
        for c, e in zip(torch.compile(f, fullgraph=True)(source), f(source)):
            assert c.placements == e.placements, (c.placements, e.placements)
            assert_same_bits(c.full_tensor(), e.full_tensor())

    checks = [("partial input", partial_input), ("gradient", gradient)]
    if world == 2:  # compiling costs seconds a rank
        checks.append(("compiled", compiled))
    for name, fn in checks:
        total += 1
        failures.run(name, fn)
    failures.raise_if_any(total)


@pytest.mark.parametrize("backend,world_size", EXACT_GROUPS)
def test_exact_sums_give_the_unsharded_bits(backend, world_size):
    run_ranks(check_exact_sums, backend, world_size)


# --- bad input: DTensor's usual errors ------------------------------------------------


def same_error_as_torch_sum(call, match=None):
    """call(sum_fn) raises for wr.sum what it raises for torch.sum: the same type, and
    a message matching `match`."""
    errors = []
    for sum_fn in (wr.sum, torch.sum):
        try:
            call(sum_fn)
        except Exception as e:  # noqa: BLE001  (comparing whatever is raised)
            errors.append(e)
        else:
            raise AssertionError(f"{sum_fn} raised nothing")
    ours, theirs = errors
    assert type(ours) is type(theirs), (repr(ours), repr(theirs))
    if match:
        assert match in str(ours), str(ours)


def check_bad_input(device):
    mesh = init_device_mesh(device, (dist.get_world_size(),))
    x = random_tensor((7, 5), torch.float32, "cpu", seed=7).to(device)
    source = distribute_tensor(x, mesh, [Shard(1)])
    plain = torch.ones(5, device=device)
    failures = Failures()
    cases = {
        "a tensor dim that does not exist": lambda s: s(source, 2),
        "a repeated dim": lambda s: s(source, (0, 0)),
        "placements for a mesh dim that does not exist": lambda s: s(
            distribute_tensor(x, mesh, [Shard(0), Shard(1)])
        ),
        "a shard of a tensor dim that does not exist": lambda s: s(
            DTensor.from_local(x, mesh, [Shard(2)])
        ),
        "the result mixed with a plain tensor": lambda s: s(source, 0) + plain,
        "the result redistributed to a dim that does not exist": lambda s: s(
            source, 0
        ).redistribute(mesh, [Shard(1)]),
    }
    for name, call in cases.items():
        match = "mixed torch.Tensor and DTensor" if "mixed" in name else None
        failures.run(name, same_error_as_torch_sum, call, match)

    def unknown_kernel():
        # DTensor reports the fake kernel's ValueError as it reports any error found
        # while it works out the result's placements.
        with pytest.raises((ValueError, RuntimeError), match="unknown kernel 'nope'"):
            wr.sum(source, kernel="nope")

    def unsupported_dtype():
        with pytest.raises(NotImplementedError, match="does not support dtype"):
            wr.sum(source.to(torch.float8_e4m3fn))

    failures.run("an unknown kernel", unknown_kernel)
    failures.run("an unsupported dtype", unsupported_dtype)
    failures.raise_if_any(len(cases) + 2)


@pytest.mark.parametrize("backend,world_size", TWO_RANK_GROUPS)
def test_bad_input_gets_dtensor_errors(backend, world_size):
    run_ranks(check_bad_input, backend, world_size)
