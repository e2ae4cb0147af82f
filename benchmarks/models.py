"""Real model definitions with torch.sum routed to warpreduce's op without code changes
(warpreduce_torch.sums): time per forward and per training step, eager and compiled,
with the override off and on; how many sums went through the op; and whether the sums
of one sample give the same bits at batch sizes 1, 8 and 64.

    python benchmarks/models.py                       # on a GPU: llama and vit, auto (and exact)
    python benchmarks/models.py --tiny --models llama vit   # toy sizes: a CPU smoke run
    python benchmarks/models.py --models qwen2 resnet --kernels auto --modes eager

Models, random weights from configs built here (nothing is downloaded):
- llama: transformers' LlamaForCausalLM, hidden 1024, 8 layers, 16 heads (8 key/value
  heads), MLP 2816, vocabulary 32000; batch 8 of 512 tokens; next-token loss.
- qwen2: transformers' Qwen2ForCausalLM of the same size (biases on q, k, v).
- vit: timm's vit_base_patch16_224 (ViT-B/16), batch 64 of 224x224 images, 1000 classes.
- resnet: timm's resnet50, batch 64 of 224x224 images.
bfloat16 weights and inputs on a GPU, float32 on the CPU. --tiny shrinks every size
(hidden 64, 2 layers, 32 tokens, 32x32 images, batch 2) for a smoke run anywhere.

Timing: "forward" is model(inputs) under no_grad; "train" is forward, loss, backward
and an SGD step. Eager, then torch.compile(model) ("compiled"), each with the override
off and then on (`with warpreduce_torch.sums(kernel)`, compiled="op": compiled graphs
call the op too; entering recompiles). Median of --iters steps after --warmup (the
first compiled steps compile), by CUDA events on a GPU, by the wall clock on the CPU.

Sums counted over one more step under torch.profiler: "sums" is aten::sum calls plus
the op's calls made by compiled graphs, i.e. every sum that was not fused away by
Inductor; "via op" is warpreduce::_sum calls (in eager: those the override routed,
also counted by warpreduce_torch.override.calls(), printed as a check). Where a model
sums: the backward's broadcast reductions (a bias's gradient, an RMSNorm weight's, a
position embedding's: autograd's sum_to_size) and, on the CPU, every mean (ATen's CPU
mean calls sum's out= overload). CUDA means, softmax, layer norm and cross entropy have
kernels of their own and are not sums.

Batch invariance: matmuls are not batch-invariant (cuBLAS picks its kernel by shape),
so a model's output for sample 0 differs between batch sizes whatever the sums do, and
comparing outputs would test the matmuls. The check keeps the sums' inputs fixed
instead: the model's final activations (last hidden states; timm's forward_features)
for 64 samples are computed once; batches of 1, 8 and 64 are copies of their first 1,
8 and 64 rows (so sample 0's activation is the same bits in each); and the reductions
a model makes over a sample (the last dim, dim 1, and all of a sample's dims) are
taken with torch.sum at each batch size, eager and compiled, with the override off
(ATen's sum, Inductor's) and on. "same bits" says whether sample 0's result has the
same bits at all three batch sizes; "max diff" is the largest difference from batch 1.

Prints markdown tables; writes models.csv and batch_invariance.csv to --out. On a CPU
shared with other work, times are noise: an OpenMP region waits for a descheduled
thread (a 64x64 matmul took 16 us to 31 ms on the 2-core dev machine under load); the
CPU run checks that everything runs, not how fast.
"""

import argparse
import contextlib
import csv
import os
import statistics
import time

import torch

import warpreduce_torch as wr
from warpreduce_torch import override

BATCH_SIZES = (1, 8, 64)


# --- models


def text_model(name, tiny):
    import transformers

    size = (
        dict(hidden_size=64, intermediate_size=176, num_hidden_layers=2, num_attention_heads=4)
        if tiny
        else dict(
            hidden_size=1024, intermediate_size=2816, num_hidden_layers=8, num_attention_heads=16
        )
    )
    heads = size["num_attention_heads"]
    common = dict(
        **size,
        num_key_value_heads=heads // 2,
        vocab_size=256 if tiny else 32000,
        max_position_embeddings=4096,
    )
    if name == "llama":
        model = transformers.LlamaForCausalLM(transformers.LlamaConfig(**common))
    else:
        model = transformers.Qwen2ForCausalLM(transformers.Qwen2Config(**common))
    batch, tokens = (2, 32) if tiny else (8, 512)
    vocab = common["vocab_size"]

    def inputs(n, seed=0):
        g = torch.Generator().manual_seed(seed)
        return {"input_ids": torch.randint(0, vocab, (n, tokens), generator=g)}

    def forward(m, x):
        return m(**x).logits

    def loss(m, x):
        return m(**x, labels=x["input_ids"]).loss

    def features(m, x):
        return m.model(**x).last_hidden_state

    return model, batch, inputs, forward, loss, features


def image_model(name, tiny):
    import timm

    arch = {"vit": "vit_base_patch16_224", "resnet": "resnet50"}[name]
    kwargs = {}
    if tiny:
        arch = {"vit": "vit_tiny_patch16_224", "resnet": "resnet18"}[name]
        kwargs = {"num_classes": 10}
        if name == "vit":
            kwargs.update(img_size=32, patch_size=8)
    model = timm.create_model(arch, pretrained=False, **kwargs)
    batch, side = (2, 32) if tiny else (64, 224)
    classes = model.num_classes

    def inputs(n, seed=0):
        g = torch.Generator().manual_seed(seed)
        return {
            "x": torch.randn(n, 3, side, side, generator=g),
            "target": torch.randint(0, classes, (n,), generator=g),
        }

    def forward(m, x):
        return m(x["x"])

    def loss(m, x):
        return torch.nn.functional.cross_entropy(m(x["x"]).float(), x["target"])

    def features(m, x):
        return m.forward_features(x["x"])

    return model, batch, inputs, forward, loss, features


MODELS = {"llama": text_model, "qwen2": text_model, "vit": image_model, "resnet": image_model}


def to_device(inputs, device, dtype):
    return {
        k: v.to(device, dtype) if v.is_floating_point() else v.to(device) for k, v in inputs.items()
    }


# --- timing and counting


def median_ms(step, device, warmup, iters):
    for _ in range(warmup):
        step()
    times = []
    if device == "cuda":
        torch.cuda.synchronize()
        for _ in range(iters):
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            step()
            end.record()
            end.synchronize()
            times.append(start.elapsed_time(end))
    else:
        for _ in range(iters):
            start = time.perf_counter()
            step()
            times.append((time.perf_counter() - start) * 1e3)
    return statistics.median(times)


def count_sums(step):
    """(sums, via op) in one step: aten::sum calls plus the op's own calls from compiled
    graphs, and the op's calls (warpreduce::_sum), from torch.profiler's CPU events."""
    from torch.profiler import ProfilerActivity, profile

    override.reset_calls()
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        step()
    counts = {e.key: e.count for e in prof.key_averages()}
    op = counts.get("warpreduce::_sum", 0)
    routed_eager = override.calls()["op"]  # each also an aten::sum event
    return counts.get("aten::sum", 0) + op - routed_eager, op, override.calls()


def run_model(name, args, device, dtype, rows):
    model, batch, inputs, forward, loss, features = MODELS[name](name, args.tiny)
    model = model.to(device, dtype)
    x = to_device(inputs(batch), device, dtype)
    optimizer = torch.optim.SGD(model.parameters(), lr=1e-6)
    compiled = torch.compile(model)
    settings = ["off"] + args.kernels
    loss(model, x).backward()  # untimed: first-call costs land on no row
    optimizer.zero_grad(set_to_none=True)

    for setting in settings:
        block = wr.sums(setting) if setting != "off" else contextlib.nullcontext()
        with block:
            for mode in args.modes:
                m = compiled if mode == "compiled" else model

                def forward_step(m=m):
                    with torch.no_grad():
                        forward(m, x)

                def train_step(m=m):
                    loss(m, x).backward()
                    optimizer.step()
                    optimizer.zero_grad(set_to_none=True)

                for phase, step in (("forward", forward_step), ("train", train_step)):
                    ms = median_ms(step, device, args.warmup, args.iters)
                    sums, via_op, calls = count_sums(step)
                    rows.append(
                        dict(
                            model=name,
                            mode=mode,
                            phase=phase,
                            override=setting,
                            batch=batch,
                            dtype=str(dtype).removeprefix("torch."),
                            median_ms=round(ms, 4),
                            sums=sums,
                            via_op=via_op,
                            eager_calls_counted=calls["op"],
                            fell_back=calls["aten"],
                        )
                    )
                    print(
                        f"  {name} {mode} {phase} override={setting}: {ms:.3f} ms, "
                        f"{sums} sums, {via_op} via the op",
                        flush=True,
                    )
    invariance = batch_invariance(name, model, inputs, features, device, dtype, args)
    torch.compiler.reset()
    return invariance


# --- batch invariance of the sums themselves


REDUCTIONS = {
    "last dim": lambda t: t.sum(-1),
    "dim 1": lambda t: t.sum(1),
    "whole sample": lambda t: t.sum(tuple(range(1, t.dim()))),
}


def batch_invariance(name, model, inputs, features, device, dtype, args):
    """Rows of batch_invariance.csv for one model (the module docstring says how)."""
    big = max(BATCH_SIZES)
    with torch.no_grad():
        chunks = []
        for first in range(0, big, 8):  # 8 samples at a time: memory, not bits, matters
            x = to_device(inputs(min(8, big - first), seed=1 + first), device, dtype)
            chunks.append(features(model, x))
        activations = torch.cat(chunks)
    rows = []
    for setting in ["off"] + args.kernels:
        block = wr.sums(setting) if setting != "off" else contextlib.nullcontext()
        with block:
            for mode in args.modes:
                for reduction, fn in REDUCTIONS.items():
                    run = torch.compile(fn, dynamic=False) if mode == "compiled" else fn
                    firsts = [run(activations[:n].clone())[0].float().cpu() for n in BATCH_SIZES]
                    same = all(torch.equal(firsts[0], f) for f in firsts[1:])
                    diff = max((f - firsts[0]).abs().max().item() for f in firsts[1:])
                    rows.append(
                        dict(
                            model=name,
                            activation=tuple(activations.shape[1:]),
                            dtype=str(dtype).removeprefix("torch."),
                            override=setting,
                            mode=mode,
                            reduction=reduction,
                            same_bits=same,
                            max_diff=diff,
                        )
                    )
    return rows


# --- output


def markdown(rows, columns):
    lines = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    for row in rows:
        lines.append("| " + " | ".join(str(row[c]) for c in columns) + " |")
    return "\n".join(lines)


def with_speed(rows):
    """Each row with its time relative to the same step with the override off."""
    base = {
        (r["model"], r["mode"], r["phase"]): r["median_ms"] for r in rows if r["override"] == "off"
    }
    for r in rows:
        r["vs_off"] = round(r["median_ms"] / base[(r["model"], r["mode"], r["phase"])], 3)
    return rows


def write_csv(rows, path):
    with open(path, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--models", nargs="+", choices=sorted(MODELS), default=["llama", "vit"])
    parser.add_argument("--kernels", nargs="+", default=None, help="default: auto, and exact")
    parser.add_argument("--modes", nargs="+", choices=["eager", "compiled"], default=None)
    parser.add_argument("--device", choices=["cpu", "cuda"], default=None)
    parser.add_argument("--tiny", action="store_true", help="toy sizes, for a CPU smoke run")
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--iters", type=int, default=10)
    parser.add_argument("--out", default="results")
    args = parser.parse_args(argv)
    device = args.device or ("cuda" if torch.cuda.is_available() else "cpu")
    dtype = torch.bfloat16 if device == "cuda" else torch.float32
    if args.kernels is None:
        args.kernels = ["auto"] + (["exact"] if "exact" in wr.kernels(device) else [])
    args.modes = args.modes or ["eager", "compiled"]
    name = torch.cuda.get_device_name() if device == "cuda" else "cpu"
    print(f"Device: {name}; torch {torch.__version__}; {dtype}; warpreduce {wr.build_info()}")

    rows, invariance = [], []
    for model in args.models:
        invariance += run_model(model, args, device, dtype, rows)
    with_speed(rows)
    print()
    print(
        markdown(
            rows,
            ["model", "mode", "phase", "override", "median_ms", "vs_off", "sums", "via_op"],
        )
    )
    print()
    print(
        markdown(
            invariance,
            ["model", "activation", "override", "mode", "reduction", "same_bits", "max_diff"],
        )
    )
    os.makedirs(args.out, exist_ok=True)
    write_csv(rows, os.path.join(args.out, "models.csv"))
    write_csv(invariance, os.path.join(args.out, "batch_invariance.csv"))
    print(f"\nwrote {args.out}/models.csv and {args.out}/batch_invariance.csv")


if __name__ == "__main__":
    main()
