"""Zoo throughput: several seeds of one spec trained by one ``jax.vmap``-ed program, against the
same models trained one after another.

Seeds of a spec differ only in their initial weights and batches, so one compiled step can train
them all on stacked parameters, handing the CPU batched matrix products instead of one model's.
The run checks that the vmapped models end with exactly the weights of the sequential ones, then
prints tokens/s summed over models for both and the ratio (> 1: vmapping wins). ``make zoo``
trains sequentially unless this ratio says otherwise on the profile's model. Both place batches
as :func:`ropebook.train.train` does: split over the CPU devices ``ropebook.runtime`` makes (one
per core), parameters replicated.

    .venv/bin/python benchmarks/zoo_throughput.py [--profile cpu] [--models 3] [--steps 5]
"""

from __future__ import annotations

import argparse
import time

import jax
import jax.numpy as jnp
import numpy as np
import optax
from jax.sharding import NamedSharding, PartitionSpec

from ropebook import model, train, zoo


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--profile", default="cpu", choices=tuple(zoo.PROFILES))
    parser.add_argument("--name", default="rope", choices=tuple(zoo.SPECS))
    parser.add_argument("--models", type=int, default=3)
    parser.add_argument("--steps", type=int, default=5)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    cfg, tc = zoo.configs(args.name, profile=args.profile)
    optimizer = train.make_optimizer(tc)

    def step(params, state, batch):
        loss, grads = jax.value_and_grad(model.loss_fn)(params, batch, cfg)
        updates, state = optimizer.update(grads, state, params)
        return optax.apply_updates(params, updates), state, loss

    single, stacked = jax.jit(step), jax.jit(jax.vmap(step))
    seeds = range(args.models)
    params = [model.init_params(jax.random.key(s), cfg) for s in seeds]
    states = [optimizer.init(p) for p in params]
    rng = np.random.default_rng(0)
    batches = rng.integers(0, cfg.vocab_size, (args.models, tc.batch_size, cfg.context + 1))
    split, replicated = train._shardings(tc.batch_size)
    params, states = jax.device_put((params, states), replicated)
    one_each = [jax.device_put(b.astype(np.int32), split) for b in batches]
    batches = jax.device_put(
        batches.astype(np.int32), NamedSharding(split.mesh, PartitionSpec(None, "data"))
    )

    def stack(trees):
        return jax.tree.map(lambda *leaves: jnp.stack(leaves), *trees)

    def run_sequential(n):
        out = [(p, s) for p, s in zip(params, states, strict=True)]
        for _ in range(n):
            out = [single(p, s, one_each[i])[:2] for i, (p, s) in enumerate(out)]
        return jax.block_until_ready(out)

    def run_stacked(n):
        p, s = stack(params), stack(states)
        for _ in range(n):
            p, s, _ = stacked(p, s, batches)
        return jax.block_until_ready((p, s))

    sequential, vmapped = run_sequential(2), run_stacked(2)  # also compiles both
    diff = max(
        float(jnp.abs(a - b[i]).max())
        for i, (p, _) in enumerate(sequential)
        for a, b in zip(jax.tree.leaves(p), jax.tree.leaves(vmapped[0]), strict=True)
    )
    seconds = {"sequential": [], "vmapped": []}
    for _ in range(args.rounds):
        for label, run in (("sequential", run_sequential), ("vmapped", run_stacked)):
            start = time.perf_counter()
            run(args.steps)
            seconds[label].append(time.perf_counter() - start)
    tokens = args.models * args.steps * tc.batch_size * cfg.context
    print(f"{args.models} x {args.name}, {args.profile} profile, {args.steps} steps each, "
          f"{len(split.mesh.devices.flat)} CPU device(s), "
          f"largest weight difference vmapped vs sequential after 2 steps: {diff:.1e}")  # fmt: skip
    rates = {k: tokens / min(v) for k, v in seconds.items()}
    for label, rate in rates.items():
        print(f"{label:10s} {rate:9,.0f} tokens/s summed over models")
    print(f"ratio vmapped / sequential: {rates['vmapped'] / rates['sequential']:.2f}")


if __name__ == "__main__":
    main()
