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

Registering the rule needs torch.distributed (absent on some builds): this module
registers nothing where it is unavailable.
"""

import torch

_sum = torch.ops.warpreduce._sum.default


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
    from torch.distributed.tensor import DTensor, Partial, Replicate, Shard
    from torch.distributed.tensor._dtensor_spec import DTensorSpec
    from torch.distributed.tensor._op_schema import OpSpec, OpStrategy, RuntimeSchemaInfo
    from torch.distributed.tensor._ops.utils import generate_redistribute_costs

    def sum_strategy(op_schema):
        # _sum's arguments, all positional: the input's strategy (one OpSpec for each
        # layout the input may take), then dim, keepdim, dtype and kernel_name, which
        # DTensor passes unchanged to every rank's local call.
        input_strategy, dim, keepdim, dtype = op_schema.args_schema[:4]
        strategies = []
        for input_option in input_strategy.strategies:
            spec = input_option.output_spec
            reduced = _reduced_dims(dim, spec.ndim)
            # Where each kept dim lands in the result.
            new_dim = {}
            for d in range(spec.ndim):
                if d not in reduced:
                    new_dim[d] = d if keepdim else d - sum(r < d for r in reduced)
            linear = _partial_input_is_linear(
                spec.tensor_meta.dtype, _result_dtype(spec.tensor_meta.dtype, dtype)
            )

            input_placements, output_placements = [], []
            for placement in spec.placements:
                if isinstance(placement, Shard) and placement.dim in reduced:
                    input_placements.append(placement)
                    output_placements.append(Partial("sum"))
                elif isinstance(placement, Shard):
                    input_placements.append(placement)
                    output_placements.append(Shard(new_dim[placement.dim]))
                elif isinstance(placement, Replicate) or (
                    # exactly Partial("sum"): subclasses (_NormPartial, _MaskPartial)
                    # carry other meanings
                    type(placement) is Partial and placement.reduce_op == "sum" and linear
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

    # DTensor caches a rule's result by the input's placements and by the arguments from
    # static_argnum on. static_argnum=1 puts dim, keepdim, dtype and kernel_name in the
    # key. (torch.distributed.tensor.experimental.register_sharding derives it from the
    # schema, as the index of the first int argument, here dtype's: the cache then gave
    # a sum over dim 1 the placements of an earlier sum over dim 0.)
    #
    # Only _sum needs the rule: warpreduce::sum is CompositeImplicitAutograd, so DTensor
    # sees the _sum it forwards to; under inference_mode, where it does see sum, DTensor
    # decomposes a CompositeImplicitAutograd op that has no rule of its own.
    DTensor._op_dispatcher.sharding_propagator.register_op_strategy(
        _sum, sum_strategy, RuntimeSchemaInfo(static_argnum=1)
    )


if torch.distributed.is_available():
    _register()
