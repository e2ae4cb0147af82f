"""torch.sum through warpreduce's op, without changing a model's code.

    import warpreduce_torch as wr

    with wr.sums():                  # kernel="auto"
        loss = model(x).sum()        # every aten sum on CPU and CUDA tensors: the op's
        loss.backward()              # (the backward's sums too)

    wr.enable(kernel="auto")         # the same, until wr.disable()

What is routed: aten's three sum overloads, ``aten::sum`` (``torch.sum(x)``),
``aten::sum.dim_IntList`` (``torch.sum(x, dim)``, ``x.sum(...)``, the sums inside
autograd formulas such as a bias gradient's ``sum_to_size``) and ``aten::sum.IntList_out``
(``out=``; ATen's CPU mean calls it), on CPU and CUDA tensors. The kernels are registered
with ``torch.library.Library("aten", "IMPL")`` at the CPU and CUDA dispatch keys, below
autograd: aten's own autograd kernel for sum still runs above them, so gradients are
torch.sum's. Other reductions (mean on CUDA, softmax, norms, a fused layer norm's
gradient) are their kernels' own; ``wr.calls()`` counts what went where.

Falls back to ATen's own kernel, captured with ``torch.library.get_kernel`` before the
override is registered, for a call the op does not take: a dtype (or ``dtype=``) its
checks refuse (asked of the op once per dtype pair, so a dtype the op learns later is
routed without a change here), a kernel name the tensor's device lacks (say "cub" for a
CPU tensor), and ``out=`` tensors of another shape, device or dtype rule's making, or
sharing the input's memory (ATen resizes, warns or refuses those). Sparse, quantized,
nested and meta tensors have dispatch keys of their own and never reach these kernels.
A sum reached from inside a routed or fallen-back call (ATen's full sum calls its
``dim`` overload) goes straight to ATen: no recursion, one count per call.

``disable()`` (or leaving ``sums``) destroys the registration: the dispatcher's table is
ATen's again, entry for entry, and ``torch.sum`` gives its own bits.

Rules:

- ``enable`` replaces what is in force; enabling again with the same arguments changes
  nothing. ``disable`` turns the override off, however often it was enabled.
- ``sums(...)`` restores, on exit, what was in force on entry: nested blocks behave as a
  stack, the innermost block's kernel wins, and a ``disable()`` inside a block lasts
  until that block ends.
- Threads: the registration is process-wide, like every dispatcher registration: while
  it is on, every thread's sums are routed, and ``sums`` is a global switch, not a
  thread-local one. Enter and leave it from one thread (the one driving the model);
  blocks entered by several threads at once end in the state of the last exit.
  The routed call runs a little Python (with the GIL) and releases the GIL while the op
  runs, as torch's own bindings do.

torch.compile: Inductor lowers aten's sums to its own fused reductions, so a compiled
graph would not reach the kernels above. ``compiled="op"`` (the default) adds a
post-grad graph pass (Inductor's ``post_grad_custom_pre_pass``) that rewrites each
aten sum in the graphs Inductor compiles, forward and backward, to the op
(``warpreduce::_sum``, which Inductor calls as an extern kernel), with the same
fallbacks; the pass's uuid carries the kernel name, so Inductor's and AOTAutograd's
caches keep the two kinds of graphs apart. ``compiled="inductor"`` leaves compiled
graphs to Inductor's fusion; it is refused for kernels that promise bits Inductor's
sums would not give ("exact"). Code compiled before a change of that setting would
keep what it was compiled with, so turning the pass on or off (or changing its
kernel) calls ``torch.compiler.reset()``: compiled functions recompile on their next
call. Enter ``sums`` once around a training loop, not once per step.
"""

import contextlib
import functools
import sys
import threading
import warnings

import torch

from . import _C
from .ops import kernels

__all__ = ["calls", "current", "disable", "enable", "is_enabled", "reset_calls", "sums"]

# The aten overloads routed, by their dispatcher names. sum.dim_DimnameList and
# sum.DimnameList_out (named dims) are composite and end in these.
OVERLOADS = ("aten::sum", "aten::sum.dim_IntList", "aten::sum.IntList_out")
DEVICES = {"cpu": "CPU", "cuda": "CUDA"}  # device type -> dispatch key
COMPILED = ("op", "inductor")
# Kernels whose point is their bits: a compiled graph must not swap in Inductor's sum.
BITWISE_KERNELS = frozenset({"exact"})

_lock = threading.RLock()  # enable/disable from several threads: one at a time
_active = None  # the _Override in force, or None
_counts = [0, 0]  # calls routed to the op, calls that fell back to ATen
_inside = threading.local()  # set while a routed or fallen-back call runs


def enable(kernel="auto", *, compiled="op"):
    """Routes aten's sums on CPU and CUDA tensors to ``warpreduce_torch.sum(...,
    kernel=kernel)`` until ``disable()``.

    `kernel` is a name of ``kernels("cpu")`` or ``kernels("cuda")``; devices whose list
    lacks it keep ATen's sum. `compiled` says what ``torch.compile`` does with sums:
    "op" (the default) routes them to the op too, "inductor" leaves them to Inductor's
    fused reductions (not allowed for "exact"). The module docstring gives the rules
    for repeated calls, nesting and threads.
    """
    _set(_Setting(kernel, compiled))


def disable():
    """Gives aten's sums back their own kernels (and Inductor its sums)."""
    _set(None)


def is_enabled():
    """Whether aten's sums are routed now; ``current()`` says how."""
    return _active is not None


def current():
    """The (kernel, compiled) in force, or None."""
    return None if _active is None else (_active.setting.kernel, _active.setting.compiled)


@contextlib.contextmanager
def sums(kernel="auto", *, compiled="op"):
    """``enable(kernel, compiled=compiled)`` for the block; on exit, whatever was in
    force on entry is restored (nested blocks: the innermost wins)."""
    setting = _Setting(kernel, compiled)  # checked before anything changes
    with _lock:
        before = None if _active is None else _active.setting
        _set(setting)
    try:
        yield
    finally:
        _set(before)


def calls():
    """{"op": sums routed to the op, "aten": sums that fell back to ATen's kernel},
    counted in eager calls since the last ``reset_calls()`` (a compiled graph's sums
    are counted by the profiler, not here: they call the op directly)."""
    return {"op": _counts[0], "aten": _counts[1]}


def reset_calls():
    _counts[0] = _counts[1] = 0


class _Setting:
    __slots__ = ("kernel", "compiled", "devices")

    def __init__(self, kernel, compiled):
        if compiled not in COMPILED:
            raise ValueError(f"compiled must be one of {COMPILED}, not {compiled!r}")
        self.devices = tuple(d for d in DEVICES if kernel in kernels(d))
        if not self.devices:
            valid = sorted({k for d in DEVICES for k in kernels(d)})
            raise ValueError(f"unknown kernel {kernel!r}; valid names: {', '.join(valid)}")
        if compiled == "inductor" and kernel in BITWISE_KERNELS:
            raise ValueError(
                f'kernel="{kernel}" gives its own bits, which Inductor\'s fused sums would '
                'not: compiled graphs must call the op (compiled="op")'
            )
        self.kernel = kernel
        self.compiled = compiled

    def __eq__(self, other):
        return isinstance(other, _Setting) and (self.kernel, self.compiled) == (
            other.kernel,
            other.compiled,
        )

    def graph_pass_kernel(self):
        return self.kernel if self.compiled == "op" else None


def _set(setting):
    global _active
    with _lock:
        old = _active.setting if _active is not None else None
        if setting == old:
            return
        if _active is not None:
            _active.remove()
            _active = None
        if setting is not None:
            _active = _Override(setting)
        old_pass = old.graph_pass_kernel() if old is not None else None
        new_pass = setting.graph_pass_kernel() if setting is not None else None
        if old_pass != new_pass:
            _set_graph_pass(new_pass)


class _Override:
    """One registration of the three overloads at the dispatch keys of the devices
    whose kernel list has the kernel; destroying its library removes it."""

    def __init__(self, setting):
        self.setting = setting
        originals = {
            (name, device): torch.library.get_kernel(name, DEVICES[device])
            for name in OVERLOADS
            for device in setting.devices
        }
        self.library = torch.library.Library("aten", "IMPL")
        try:
            with warnings.catch_warnings():
                # torch 2.11 warns, once, that an aten kernel is being overridden: that
                # is the point here.
                warnings.filterwarnings("ignore", message="Warning only once for all operators")
                for device in setting.devices:
                    impls = _kernels_for(setting.kernel, device, originals)
                    for name, fn in zip(OVERLOADS, impls):
                        self.library.impl(
                            name.removeprefix("aten::"), fn, DEVICES[device], with_keyset=True
                        )
        except BaseException:
            self.remove()
            raise

    def remove(self):
        self.library._destroy()


def _kernels_for(kernel, device, originals):
    """The three kernels for one device: the op where it takes the call, else ATen's
    kernel as it was before the override."""
    orig_all = originals[("aten::sum", device)]
    orig_dim = originals[("aten::sum.dim_IntList", device)]
    orig_out = originals[("aten::sum.IntList_out", device)]
    takes = _DtypeRule(kernel, device)
    op = _C.sum
    counts = _counts
    inside = _inside

    def route(orig, keyset, self, aten_args, dim, keepdim, dtype):
        """The op where it takes the call, else ATen's kernel `orig` with aten_args; ATen's
        kernel too for a sum inside one of these. One more Python call than a body per
        overload: 0.025 us against 3.2 us a routed torch.sum of 8 floats on the CPU."""
        if getattr(inside, "on", False):
            return orig.call_boxed(keyset, self, *aten_args, dtype=dtype)
        inside.on = True
        try:
            if takes(self.dtype, dtype):
                counts[0] += 1
                return op(self, dim, keepdim, dtype=dtype, kernel=kernel)
            counts[1] += 1
            return orig.call_boxed(keyset, self, *aten_args, dtype=dtype)
        finally:
            inside.on = False

    # PythonKernelHolder passes arguments that equal their defaults as absent, so every
    # optional argument has its schema default here.
    def sum_all(keyset, self, *, dtype=None):
        return route(orig_all, keyset, self, (), None, False, dtype)

    def sum_dim(keyset, self, dim, keepdim=False, *, dtype=None):
        return route(orig_dim, keyset, self, (dim, keepdim), dim, keepdim, dtype)

    def sum_out(keyset, self, dim, keepdim=False, *, dtype=None, out):
        if getattr(inside, "on", False):
            return orig_out.call_boxed(keyset, self, dim, keepdim, dtype=dtype, out=out)
        inside.on = True
        try:
            # Without dtype=, ATen sums in out's dtype: ask the op for that dtype.
            computed = out.dtype if dtype is None else dtype
            if (
                out.device == self.device
                and takes(self.dtype, computed)
                and out.untyped_storage().data_ptr() != self.untyped_storage().data_ptr()
            ):
                result = op(self, dim, keepdim, dtype=computed, kernel=kernel)
                if result.dtype == out.dtype and result.shape == out.shape:
                    counts[0] += 1
                    return out.copy_(result)
            # Another shape (ATen resizes it, with a warning when it held elements),
            # another device, or memory shared with the input: ATen's rules.
            counts[1] += 1
            return orig_out.call_boxed(keyset, self, dim, keepdim, dtype=dtype, out=out)
        finally:
            inside.on = False

    return sum_all, sum_dim, sum_out


class _DtypeRule:
    """Whether the op takes (input dtype, dtype=) on a device with a kernel: the op's
    own check, asked once per pair."""

    def __init__(self, kernel, device):
        self.kernel, self.device = kernel, device
        self.known = {}

    def __call__(self, dtype, result_dtype):
        key = (dtype, result_dtype)
        taken = self.known.get(key)
        if taken is None:
            try:
                torch.ops.warpreduce._check_args(dtype, result_dtype, self.device, self.kernel)
                taken = True
            except NotImplementedError:  # a dtype the op does not support
                taken = False
            self.known[key] = taken
        return taken


# --- torch.compile


def _set_graph_pass(kernel):
    """Installs the graph pass for `kernel` in Inductor's config (None: removes it), and
    resets torch.compile's caches of compiled code if anything was compiled."""
    from torch._inductor import config

    chain, route_sums = _pass_classes()
    others = [
        p
        for p in _as_list(config.post_grad_custom_pre_pass, chain)
        if not isinstance(p, route_sums)
    ]
    ours = [route_sums(kernel)] if kernel is not None else []
    config.post_grad_custom_pre_pass = _from_list(others + ours, chain)
    if "torch._dynamo" in sys.modules:
        torch.compiler.reset()


def _as_list(passes, chain):
    if passes is None:
        return []
    if isinstance(passes, chain):
        return list(passes.passes)
    if isinstance(passes, (list, tuple)):
        return list(passes)
    return [passes]


def _from_list(passes, chain):
    if not passes:
        return None
    return passes[0] if len(passes) == 1 else chain(passes)


@functools.cache
def _pass_classes():
    """The pass classes, made on first use: Inductor's CustomGraphPass, which they
    subclass so that Inductor's caches take them, costs an import of torch._inductor."""
    from torch._inductor.custom_graph_pass import CustomGraphPass, get_hash_for_files

    class Chain(CustomGraphPass):
        """Several post-grad passes in one slot (torch 2.11's config takes one)."""

        def __init__(self, passes):
            self.passes = tuple(passes)

        def __call__(self, graph):
            for p in self.passes:
                p(graph)

        def uuid(self):
            uuids = tuple(p.uuid() if hasattr(p, "uuid") else None for p in self.passes)
            return None if None in uuids else ("chain", uuids)

    class RouteSums(CustomGraphPass):
        """Inductor post-grad pass: each aten sum of a graph becomes
        ``warpreduce::_sum`` with the kernel `kernel`, where the op takes its input's
        dtype and device, carrying the original node's metadata (its fake value: the
        op's fake kernel is torch.sum's shape, dtype and stride rule)."""

        def __init__(self, kernel):
            self.kernel = kernel
            self.rules = {d: _DtypeRule(kernel, d) for d in DEVICES if kernel in kernels(d)}

        def uuid(self):
            # The kernel, and this file: a graph cached under another kernel, or under
            # another version of this pass, is not reused.
            return ("warpreduce.sum", self.kernel, get_hash_for_files((__file__,)).hex())

        def __call__(self, graph):
            aten = torch.ops.aten
            for node in list(graph.nodes):
                if node.op != "call_function":
                    continue
                if node.target is aten.sum.default:
                    x, dim, keepdim = node.args[0], None, False
                elif node.target is aten.sum.dim_IntList:
                    x, dim = node.args[0], node.args[1]
                    keepdim = (
                        node.args[2] if len(node.args) > 2 else node.kwargs.get("keepdim", False)
                    )
                else:
                    continue
                dtype = node.kwargs.get("dtype")
                value = x.meta.get("val") if isinstance(x, torch.fx.Node) else None
                rule = self.rules.get(getattr(getattr(value, "device", None), "type", None))
                if rule is None or not rule(value.dtype, dtype):
                    continue
                with graph.inserting_before(node):
                    routed = graph.call_function(
                        torch.ops.warpreduce._sum.default, (x, dim, keepdim, dtype, self.kernel)
                    )
                routed.meta.update(node.meta)
                node.replace_all_uses_with(routed)
                graph.erase_node(node)

    return Chain, RouteSums
