"""Where a training step goes: each part of one step of the zoo's RoPE model, timed alone.

Every part runs forward and backward (as in training: gradients of its weights and its input)
as its own jitted program, on the step's shapes, with the batch split over the XLA CPU devices
as :func:`ropebook.train.train` splits it, and is timed over ``--rounds`` rounds of
``--repeats`` calls (median). Parts: token embedding (gather and its scatter-add), the attention
block of each layer (norm, QKV projection, rotation, attention, output projection; the attention
kernel alone listed below it), the MLP block of each layer (norm, up, ReLU², down), the head
(final norm, tied unembedding, cross entropy), the optimiser update (clipping and AdamW), and
the host's part (sampling a batch, moving it to the devices). Each is printed in milliseconds,
as a share of the whole step, and where it multiplies matrices as achieved FLOP/s against this
CPU's float32 matmul peak measured in the run (``train_throughput.peak_matmul_flops``); what
the parts do not add up to is the step's glue (residual adds, the gradient all-reduce, fusion
boundaries, dispatch).

``--by-line`` profiles the step itself instead: JAX's profiler traces ``--steps`` training steps,
and every XLA operation it timed is charged to the line of the library (``model.py``,
``attention.py``, ``rope.py``, ``train.py``) that emitted it, read from the compiled program's
stack frames; backward operations are charged to the forward line they differentiate. Times are
summed over the XLA devices (each runs its share of every op), so they add up to about the
devices' count times the step; operations without a stack frame (the gradients' all-reduce,
which includes a device's wait for the other) are listed as having no source line.

    .venv/bin/python benchmarks/step_profile.py [--regimes lesson matched] [--rounds 5]
    .venv/bin/python benchmarks/step_profile.py --by-line [--steps 10]
"""

from __future__ import annotations

import argparse
import collections
import gzip
import json
import re
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
from train_throughput import model_flops_per_token, peak_matmul_flops


def timed(fn: Callable[[], object], repeats: int, rounds: int) -> float:
    """Median seconds per call of ``fn`` (already compiled by a first call)."""
    import jax

    jax.block_until_ready(fn())
    times = []
    for _ in range(rounds):
        start = time.perf_counter()
        for _ in range(repeats):
            out = fn()
        jax.block_until_ready(out)
        times.append((time.perf_counter() - start) / repeats)
    return float(np.median(times))


def forward_backward(fn: Callable, *args, tokens=None):
    """A jitted call of ``fn``'s forward and backward at ``args`` (all differentiated; ``tokens``,
    if given, passed last and not), with a fixed random cotangent so nothing is optimised away.
    Arrays go in as arguments, never as constants XLA would fold."""
    import jax
    import jax.numpy as jnp

    extra = () if tokens is None else (tokens,)
    out_shape = jax.eval_shape(fn, *args, *extra)
    cotangent = jax.random.normal(jax.random.key(1), out_shape.shape, out_shape.dtype)

    def scalar(*xs):
        return jnp.vdot(fn(*xs), cotangent)

    grad = jax.jit(jax.grad(scalar, argnums=tuple(range(len(args)))))
    return lambda: grad(*args, *extra)


def profile(regime: str, profile_name: str, rounds: int, repeats: int, peak: float) -> None:
    import jax
    import jax.numpy as jnp

    from ropebook import attention, model, runtime, train, zoo

    cfg, tc = zoo.configs("rope", seed=0, profile=profile_name, regime=regime)
    b, t, d, h, hd = tc.batch_size, cfg.context, cfg.d_model, cfg.n_heads, cfg.head_dim
    batch_sharding, replicated = runtime.data_parallel(b)
    params = jax.device_put(model.init_params(jax.random.key(0), cfg), replicated)
    optimizer = train.make_optimizer(tc)
    opt_state = jax.device_put(optimizer.init(params), replicated)
    rng = np.random.default_rng(0)
    tokens = jax.device_put(
        rng.integers(0, cfg.vocab_size, (b, t + 1), dtype=np.int32), batch_sharding
    )
    x = jax.device_put(jax.random.normal(jax.random.key(2), (b, t, d)), batch_sharding)
    qkv_shape = (b, t, h, hd)
    q, k, v = (
        jax.device_put(jax.random.normal(jax.random.key(3 + i), qkv_shape), batch_sharding)
        for i in range(3)
    )
    layer, positions = params["layers"][0], np.arange(t)  # static, as in the model
    step_fn = train.train_step(cfg, tc)
    grads = jax.jit(jax.grad(model.loss_fn), static_argnums=2)(params, tokens, cfg)
    update = jax.jit(lambda g, s, p: optax_apply(optimizer, g, s, p))
    text = np.asarray(rng.integers(0, cfg.vocab_size, 200_000), dtype=np.uint16)

    def head(final_norm, embed, x, tokens):
        logits = (model.rms_norm(x, final_norm) @ embed.T).astype(jnp.float32)
        targets = tokens[:, 1:]
        return (
            jax.nn.logsumexp(logits, -1)
            - jnp.take_along_axis(logits, targets[..., None], -1)[..., 0]
        )

    n = cfg.n_layers
    per_token = {  # matmul FLOPs per token, forward and backward (3x forward)
        "attention block": 6 * (d * 3 * h * hd + h * hd * d) + 12 * t * h * hd,
        "  of which attention": 12 * t * h * hd,
        "MLP block": 6 * 2 * d * cfg.d_ff,
        "head": 6 * cfg.vocab_size * d,
    }
    parts: dict[str, tuple[float, int]] = {}  # name -> (seconds, times per step)
    parts["embedding"] = (
        timed(forward_backward(lambda e, tok: e[tok[:, :-1]], params["embed"], tokens=tokens),
              repeats, rounds), 1,
    )  # fmt: skip

    def block(lay, x):
        return model.attention(lay, model.rms_norm(x, lay["attn_norm"]), positions, cfg, index=0)[0]

    parts["attention block"] = (timed(forward_backward(block, layer, x), repeats, rounds), n)
    kernel = lambda q, k, v: attention.attend(q, k, v, None)  # noqa: E731
    parts["  of which attention"] = (timed(forward_backward(kernel, q, k, v), repeats, rounds), n)
    mlp = lambda lay, x: model.mlp(lay, model.rms_norm(x, lay["mlp_norm"]))  # noqa: E731
    parts["MLP block"] = (timed(forward_backward(mlp, layer, x), repeats, rounds), n)
    parts["head"] = (
        timed(forward_backward(head, params["final_norm"], params["embed"], x, tokens=tokens),
              repeats, rounds), 1,
    )  # fmt: skip
    parts["optimiser"] = (timed(lambda: update(grads, opt_state, params), repeats, rounds), 1)
    params, opt_state = jax.tree.map(jnp.copy, (params, opt_state))  # the step donates these
    parts["host: batch + transfer"] = (
        timed(lambda: jax.device_put(train.batch_at(text, tc, 0), batch_sharding), repeats, rounds), 1,
    )  # fmt: skip
    state = [params, opt_state]  # the step donates them, as train.train's does

    def training_step():
        state[0], state[1], loss, _ = step_fn(*state, tokens)
        return loss

    step = timed(training_step, repeats, rounds)
    tokens_per_step = b * t
    print(f"\n{regime} regime ({profile_name} profile): {n} layers, d={d}, {h}x{hd} heads, "
          f"d_ff={cfg.d_ff}, vocab {cfg.vocab_size}, batch {b}x{t}; {len(jax.devices())} XLA devices")  # fmt: skip
    print(f"{'part':26s} {'ms/step':>8s} {'share':>6s} {'GFLOP/s':>8s} {'of peak':>8s}")
    accounted = 0.0
    for name, (seconds, times) in parts.items():
        total = seconds * times
        if not name.startswith("  "):
            accounted += total
        flops = per_token.get(name, 0) * tokens_per_step * times
        rate = f"{flops / total / 1e9:8.1f} {flops / total / peak:8.1%}" if flops else ""
        print(f"{name:26s} {total * 1e3:8.2f} {total / step:6.1%} {rate}")
    print(
        f"{'glue (step - parts)':26s} {(step - accounted) * 1e3:8.2f} {(step - accounted) / step:6.1%}"
    )
    flops = model_flops_per_token(cfg) * tokens_per_step
    print(f"{'whole step':26s} {step * 1e3:8.2f} {1:6.1%} {flops / step / 1e9:8.1f} {flops / step / peak:8.1%}"
          f"   ({tokens_per_step / step:,.0f} tokens/s; MFU counts attention as full, as train_throughput)")  # fmt: skip


LIBRARY_FILES = ("model.py", "attention.py", "rope.py", "encodings.py", "train.py")


def source_lines(hlo: str) -> dict[str, str]:
    """Each operation of a compiled program's text, mapped to the innermost library line
    (``file:function:line``) in its stack frames ("?" where none is the library's)."""

    def table(name: str) -> str:
        return re.search(rf"^{name}\n(.*?)\n\n", hlo, re.S | re.M).group(1)

    files = dict(re.findall(r'^(\d+) "(.*)"$', table("FileNames"), re.M))
    functions = dict(re.findall(r'^(\d+) "(.*)"$', table("FunctionNames"), re.M))
    locations = {
        m[1]: f"{files[m[2]].rsplit('/', 1)[-1]}:{functions[m[3]]}:{m[4]}"
        for m in re.finditer(
            r"^(\d+) \{file_name_id=(\d+) function_name_id=(\d+) line=(\d+)",
            table("FileLocations"), re.M,
        )
    }  # fmt: skip
    # a frame's parent is written one above its number (0: none)
    frames = {
        m[1]: (m[2], int(m[3] or 0) - 1)
        for m in re.finditer(
            r"^(\d+) \{file_location_id=(\d+)(?: parent_frame_id=(\d+))?",
            table("StackFrames"), re.M,
        )
    }  # fmt: skip

    def place(frame: str | None) -> str:
        while frame in frames:
            location, parent = frames[frame]
            if locations[location].split(":")[0] in LIBRARY_FILES:
                return locations[location]
            frame = str(parent) if parent > 0 else None
        return "?"

    ops = re.finditer(r"^\s+(?:ROOT )?%([\w.\-]+) = (?:.*?stack_frame_id=(\d+))?", hlo, re.M)
    return {m[1]: place(m[2]) if m[2] else "(no source line: collectives, copies)" for m in ops}


def by_line(regime: str, profile_name: str, steps: int) -> None:
    """Trace ``steps`` training steps and print the time of the library's lines."""
    import jax

    from ropebook import model, runtime, train, zoo

    cfg, tc = zoo.configs("rope", seed=0, profile=profile_name, regime=regime)
    batch_sharding, replicated = runtime.data_parallel(tc.batch_size)
    params = jax.device_put(model.init_params(jax.random.key(0), cfg), replicated)
    state = [params, jax.device_put(train.make_optimizer(tc).init(params), replicated)]
    tokens = np.random.default_rng(0).integers(0, cfg.vocab_size, (tc.batch_size, cfg.context + 1))
    tokens = jax.device_put(tokens.astype(np.int32), batch_sharding)
    step_fn = train.train_step(cfg, tc)
    lines = source_lines(step_fn.lower(*state, tokens).compile().as_text())

    def run(n: int) -> float:
        start = time.perf_counter()
        for _ in range(n):  # blocking on each: another program between steps must not interleave
            state[0], state[1], loss, _ = jax.block_until_ready(step_fn(*state, tokens))
        return (time.perf_counter() - start) / n

    run(3)
    untraced = run(steps)
    with tempfile.TemporaryDirectory() as folder:
        with jax.profiler.trace(folder, create_perfetto_trace=True):
            run(steps)
        (trace,) = Path(folder).rglob("*.trace.json.gz")
        events = json.loads(gzip.decompress(trace.read_bytes()))["traceEvents"]
    spent: collections.Counter[str] = collections.Counter()
    top: dict[str, collections.Counter[str]] = collections.defaultdict(collections.Counter)
    for event in events:
        if event.get("ph") == "X" and event["name"] in lines:
            line = lines[event["name"]]
            spent[line] += event["dur"] / steps / 1e3  # µs over the steps → ms per step
            top[line][event["name"]] += event["dur"] / steps / 1e3
    print(f"\n{regime} regime ({profile_name} profile): step {untraced * 1e3:.1f} ms untraced, "
          f"{tc.batch_size * cfg.context / untraced:,.0f} tokens/s; ms per step summed over "
          f"{len(jax.devices())} XLA devices ({sum(spent.values()):.1f} in all)")  # fmt: skip
    for line, ms in spent.most_common(20):
        ops = ", ".join(f"{op} {t:.1f}" for op, t in top[line].most_common(3))
        print(f"{ms:8.2f}  {line:46s} {ops}")


def optax_apply(optimizer, grads, state, params):
    import optax

    updates, state = optimizer.update(grads, state, params)
    return optax.apply_updates(params, updates), state


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--profile", default="cpu")
    parser.add_argument("--regimes", nargs="+", default=["lesson", "matched"])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--by-line", action="store_true", help="profile the step by source line")
    parser.add_argument("--steps", type=int, default=10, help="steps traced with --by-line")
    args = parser.parse_args()
    if args.by_line:
        for regime in args.regimes:
            by_line(regime, args.profile, args.steps)
        return
    peak = peak_matmul_flops()
    print(f"float32 matmul peak measured here: {peak / 1e9:.1f} GFLOP/s")
    for regime in args.regimes:
        profile(regime, args.profile, args.rounds, args.repeats, peak)


if __name__ == "__main__":
    main()
