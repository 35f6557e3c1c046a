"""Zoo throughput: the seeds of one spec trained in one program (:func:`ropebook.train.train_seeds`)
against the same models trained one after another (:func:`ropebook.train.train`).

Seeds of a spec differ only in their initial weights and batches, so one ``jax.vmap``-ed step can
train them all on stacked parameters, handing the device batched matrix products instead of one
model's. Both ways are timed as the zoo calls them (batches sampled on the host, batches split
over the devices ``ropebook.runtime`` makes, no evaluation or checkpoints), each after an untimed
call that compiles its step, alternating for ``--rounds`` rounds (best round kept). Prints
tokens/s summed over the models for both, their ratio (> 1: batching wins) and the largest weight
difference between the two ways (float32 rounding). ``ROPEBOOK_SEED_BATCH=auto``
(:func:`ropebook.train.seed_batching`) follows this ratio: batched where it was measured faster.

    .venv/bin/python benchmarks/zoo_throughput.py [--profile cpu] [--regime lesson] [--models 3]
"""

from __future__ import annotations

import argparse
import dataclasses
import time

import jax
import numpy as np

from ropebook import runtime, train, zoo


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--profile", default="cpu", choices=tuple(zoo.PROFILES))
    parser.add_argument("--regime", default="lesson", choices=("lesson", "matched"))
    parser.add_argument("--name", default="rope", choices=tuple(zoo.SPECS))
    parser.add_argument("--models", type=int, default=3, help="seeds trained together")
    parser.add_argument("--steps", type=int, default=20, help="training steps of each model")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    config, tc = zoo.configs(
        args.name, profile=args.profile, regime=args.regime, steps=args.steps,
        warmup=args.steps // 4,  # the schedule's shape does not change the work of a step
    )  # fmt: skip
    configs = [dataclasses.replace(tc, seed=seed) for seed in range(args.models)]
    tokens = np.random.default_rng(0).integers(0, config.vocab_size, 200_000).astype(np.uint16)

    def sequential(**kwargs) -> list[train.TrainResult]:
        return [train.train(config, c, tokens, progress=False, **kwargs) for c in configs]

    def batched(**kwargs) -> list[train.TrainResult]:
        return train.train_seeds(config, configs, tokens, progress=False, **kwargs)

    ways = {"sequential": sequential, "batched": batched}
    for way in ways.values():
        way(stop_after=1)  # compiles the step
    seconds: dict[str, list[float]] = {label: [] for label in ways}
    last: dict[str, list[train.TrainResult]] = {}  # each way's models, to compare their weights
    for _ in range(args.rounds):
        for label, way in ways.items():
            start = time.perf_counter()
            last[label] = way()
            jax.block_until_ready([run.params for run in last[label]])
            seconds[label].append(time.perf_counter() - start)
    diff = max(
        float(np.max(np.abs(np.asarray(a) - np.asarray(b))) / np.max(np.abs(np.asarray(b))))
        for alone, together in zip(last["sequential"], last["batched"], strict=True)
        for a, b in zip(
            jax.tree.leaves(together.params), jax.tree.leaves(alone.params), strict=True
        )
    )
    tokens_trained = args.models * args.steps * tc.batch_size * tc.seq_len
    devices = runtime.data_parallel(tc.batch_size)[0].mesh.size
    print(
        f"{args.models} x {args.name}, {args.profile} profile, {args.regime} regime, "
        f"{args.steps} steps each, {devices} {jax.default_backend()} device(s) "
        f"({jax.devices()[0].device_kind}); largest weight difference batched vs sequential, "
        f"relative to its tensor's largest: {diff:.1e}"
    )
    rates = {label: tokens_trained / min(times) for label, times in seconds.items()}
    for label, rate in rates.items():
        print(f"{label:10s} {rate:9,.0f} tokens/s summed over models")
    print(f"ratio batched / sequential: {rates['batched'] / rates['sequential']:.2f}")


if __name__ == "__main__":
    main()
