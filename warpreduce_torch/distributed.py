"""warpreduce.sum on DTensors: the sharding rule that torch.distributed.tensor asks for.

DTensor runs an op on each rank's local tensor once it knows, from the input's
placements, which placements the result has. A sum is linear, so every rank sums its
own shard with the same arguments (dim, keepdim, dtype=, kernel=), and:

- a shard of a reduced dim leaves a partial sum on each rank: the result is
  ``Partial("sum")``, made whole by DTensor's all-reduce when it is redistributed;
- a shard of a kept dim stays a shard, of the dim it becomes after the reduction;
- a replicated input gives a replicated result;
- a ``Partial("sum")`` input gives a ``Partial("sum")`` result where summing the parts
  first and the pieces first agree (see `_partial_input_is_linear`); any other
  placement is replicated before the call.

kernel="exact" (exact float sums, csrc/exact.h) must give the bits of the unsharded sum,
which rounded partial sums added by an all-reduce would not: warpreduce.sum calls the op
_exact_sum for it, which has a handler of its own here. Where a reduced dim is sharded,
each rank exports its exact partial sums as int64 digits (_exact_digits), an all-reduce
adds them (SUM over int64: exact), and every rank rounds the total once
(_exact_from_digits): the result is replicated along those mesh dims, never Partial.
Partial inputs are made whole first, as the sum of rounded pieces is what they stand
for. Integer sums are exact already and go as for the other kernels.

Registering the rule needs torch.distributed (absent on some builds): this module
registers nothing where it is unavailable.
"""

import torch

_sum = torch.ops.warpreduce._sum.default
_exact_sum = torch.ops.warpreduce._exact_sum.default


def _reduced_dims(dim, ndim):
    """The dims that warpreduce::_sum reduces, torch.sum's rule: None or [] is all of
    them; a 0-d tensor takes dim 0 or -1 and has none."""
    if not dim or ndim == 0:
        return set(range(ndim))
    return {d % ndim for d in dim}


def _result_dtype(input_dtype, dtype):
    """torch.sum's result dtype: dtype= if given, else integers and bool give int64."""
    if dtype is not None:
        return dtype
    if input_dtype.is_floating_point or input_dtype.is_complex:
        return input_dtype
    return torch.int64


def _partial_input_is_linear(input_dtype, result_dtype):
    """Whether the sum of a ``Partial("sum")`` input may be taken piece by piece.

    Summing each rank's piece and then adding the results equals summing the whole
    tensor only where no cast sits in between that is not linear: floats summed to
    floats (up to rounding), and int64 to int64 (exactly, both wrap modulo 2^64). An
    int8 input, say, holds values whose sum wraps in int8 before the int64 sum sees it,
    and a cast to an integer dtype truncates; such inputs are made whole first.
    """
    if input_dtype.is_floating_point and result_dtype.is_floating_point:
        return True
    return input_dtype == result_dtype == torch.int64


def _register():
    import torch.distributed._functional_collectives as funcol
    from torch.distributed.tensor import DTensor, Partial, Replicate, Shard
    from torch.distributed.tensor._dtensor_spec import DTensorSpec
    from torch.distributed.tensor._op_schema import OpSpec, OpStrategy, RuntimeSchemaInfo
    from torch.distributed.tensor._ops.utils import generate_redistribute_costs

    def sum_strategy(op_schema, exact_op=False):
        # The arguments of _sum and _exact_sum, all positional: the input's strategy (one
        # OpSpec for each layout the input may take), then dim, keepdim, dtype (and
        # _sum's kernel_name), which DTensor passes unchanged to every rank's local call.
        input_strategy, dim, keepdim, dtype = op_schema.args_schema[:4]
        exact = exact_op or op_schema.args_schema[4:5] == ("exact",)
        strategies = []
        for input_option in input_strategy.strategies:
            spec = input_option.output_spec
            reduced = _reduced_dims(dim, spec.ndim)
            # Where each kept dim lands in the result.
            new_dim = {}
            for d in range(spec.ndim):
                if d not in reduced:
                    new_dim[d] = d if keepdim else d - sum(r < d for r in reduced)
            result_dtype = _result_dtype(spec.tensor_meta.dtype, dtype)
            linear = _partial_input_is_linear(spec.tensor_meta.dtype, result_dtype)
            # Exact float sums take no Partial input, and give no Partial result: shards
            # of reduced dims are made whole by _exact_sum's handler (exchanging digits)
            # or, for _sum's kernel "exact", gathered first.
            exact_floats = exact and result_dtype.is_floating_point

            input_placements, output_placements = [], []
            for placement in spec.placements:
                if isinstance(placement, Shard) and placement.dim in reduced:
                    if exact_floats and not exact_op:
                        input_placements.append(Replicate())
                    else:
                        input_placements.append(placement)
                    output_placements.append(Replicate() if exact_floats else Partial("sum"))
                elif isinstance(placement, Shard):
                    input_placements.append(placement)
                    output_placements.append(Shard(new_dim[placement.dim]))
                elif isinstance(placement, Replicate) or (
                    # exactly Partial("sum"): subclasses (_NormPartial, _MaskPartial)
                    # carry other meanings
                    type(placement) is Partial
                    and placement.reduce_op == "sum"
                    and linear
                    and not exact_floats
                ):
                    input_placements.append(placement)
                    output_placements.append(placement)
                else:
                    # Other partials, strided shards (FSDP2 with TP) and the rest:
                    # gathered first, which is always right, if not the cheapest.
                    input_placements.append(Replicate())
                    output_placements.append(Replicate())

            required_input = DTensorSpec(
                spec.mesh, tuple(input_placements), tensor_meta=spec.tensor_meta
            )
            strategies.append(
                OpSpec(
                    output_specs=DTensorSpec(spec.mesh, tuple(output_placements)),
                    input_specs=(required_input,),
                    redistribute_cost=[generate_redistribute_costs(input_strategy, required_input)],
                )
            )
        return OpStrategy(strategies)

    def exact_sum_handler(op_call, args, kwargs):
        # DTensor's own steps (placements, redistribution, the local call, the result),
        # with the local call replaced, where reduced dims are sharded, by an exact
        # exchange of digits over those mesh dims.
        dispatcher = DTensor._op_dispatcher
        op_info = dispatcher.unwrap_to_op_info(op_call, args, kwargs)
        try:
            dispatcher.sharding_propagator.propagate(op_info)
        except NotImplementedError:
            raise
        except Exception as e:  # reported as DTensor reports a failing rule
            raise RuntimeError(f"{e}\n\nSharding propagation failed for {op_info.schema}") from e
        sharding = op_info.output_sharding
        input_spec = op_info.schema.args_schema[0]
        if sharding.needs_redistribute:
            input_spec = sharding.redistribute_schema.args_schema[0]
            dispatcher.redistribute_local_args(
                op_info, sharding.redistribute_schema, sharding.use_val_from_redistribute_schema
            )
        local, dim, keepdim, dtype = _exact_sum_arguments(op_info.local_args, op_info.local_kwargs)
        reduced = _reduced_dims(dim, input_spec.ndim)
        result_dtype = _result_dtype(input_spec.tensor_meta.dtype, dtype)
        mesh_dims = [
            i
            for i, p in enumerate(input_spec.placements)
            if isinstance(p, Shard) and p.dim in reduced
        ]
        if mesh_dims and result_dtype.is_floating_point:
            digits = torch.ops.warpreduce._exact_digits(local, dim, keepdim, dtype)
            for mesh_dim in mesh_dims:
                digits = funcol.all_reduce(digits, "sum", (input_spec.mesh, mesh_dim))
            result = torch.ops.warpreduce._exact_from_digits(digits, result_dtype)
        else:
            result = op_call(local, dim, keepdim, dtype)
        return dispatcher.wrap(result, sharding.output_spec)

    # DTensor caches a rule's result by the input's placements and by the arguments from
    # static_argnum on. static_argnum=1 puts dim, keepdim, dtype and kernel_name in the
    # key. (torch.distributed.tensor.experimental.register_sharding derives it from the
    # schema, as the index of the first int argument, here dtype's: the cache then gave
    # a sum over dim 1 the placements of an earlier sum over dim 0.)
    #
    # Only _sum and _exact_sum need the rule: warpreduce::sum is CompositeImplicitAutograd,
    # so DTensor sees the op it forwards to; under inference_mode, where it does see sum,
    # DTensor decomposes a CompositeImplicitAutograd op that has no rule of its own.
    propagator = DTensor._op_dispatcher.sharding_propagator
    propagator.register_op_strategy(_sum, sum_strategy, RuntimeSchemaInfo(static_argnum=1))
    propagator.register_op_strategy(
        _exact_sum,
        lambda op_schema: sum_strategy(op_schema, exact_op=True),
        RuntimeSchemaInfo(static_argnum=1),
    )
    DTensor._op_dispatcher._custom_op_handlers[_exact_sum] = exact_sum_handler


def _exact_sum_arguments(args, kwargs):
    """_exact_sum's (self, dim, keepdim, dtype), however the call passed them."""
    names = ("self", "dim", "keepdim", "dtype")
    values = dict(zip(names, args))
    values.update(kwargs)
    return tuple(values.get(name) for name in names)


if torch.distributed.is_available():
    _register()
