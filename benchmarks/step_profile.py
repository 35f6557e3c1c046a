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

    .venv/bin/python benchmarks/step_profile.py [--regimes lesson matched] [--rounds 5]
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable

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
    args = parser.parse_args()
    peak = peak_matmul_flops()
    print(f"float32 matmul peak measured here: {peak / 1e9:.1f} GFLOP/s")
    for regime in args.regimes:
        profile(regime, args.profile, args.rounds, args.repeats, peak)


if __name__ == "__main__":
    main()
