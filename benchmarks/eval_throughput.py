"""Evaluation throughput: scoring the recall chapter's test sequences as the chapter does (one
model at a time, 8 sequences per call) against larger calls and against the seeds of one spec
stacked and scored by one ``jax.vmap``-ed program.

The chapters evaluate many models on the same inputs (seeds, lengths, probe masks). Each way is
timed after an untimed call that compiles it, on the `cpu` profile's RoPE recall models (seeds
0..S-1 from the zoo's cache, trained if absent), at the training context and at ``--factor`` times
it, best of ``--rounds``. Prints ms per model and each way's speed over today's, and checks that
every way marks the same answers right (they must: the same models on the same sequences).

    .venv/bin/python benchmarks/eval_throughput.py [--seeds 3] [--factor 8] [--rounds 3]
"""

from __future__ import annotations

import argparse
import functools
import time

import jax
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec

from ropebook import evaluation, tasks, zoo
from ropebook.analysis import recall


def stacked_scorer(config, chunk: int):
    """Score S models at once: params stacked on a leading axis, one vmapped program per call,
    the sequences split over the devices as ``evaluation.task_outputs`` splits them."""
    outputs = jax.jit(
        jax.vmap(
            functools.partial(evaluation.answer_outputs, config=config), in_axes=(0, None, None)
        )
    )
    mesh = Mesh(np.asarray(jax.devices()), ("data",))
    split, replicated = (
        NamedSharding(mesh, PartitionSpec("data")),
        NamedSharding(mesh, PartitionSpec()),
    )

    def score(stacked, batch) -> np.ndarray:
        n_models = jax.tree.leaves(stacked)[0].shape[0]
        right = np.zeros((n_models, *batch.tokens.shape), bool)
        stacked = jax.device_put(stacked, replicated)
        for start in range(0, len(batch.tokens), chunk):
            part = slice(start, start + chunk)
            tokens, targets = jax.device_put((batch.tokens[part], batch.targets[part]), split)
            _, correct = outputs(stacked, tokens, targets)
            right[:, part] = np.asarray(correct) & batch.mask[part]
        return right

    return score


def best_of(rounds: int, run) -> tuple[float, np.ndarray]:
    run()  # compiles
    times, out = [], None
    for _ in range(rounds):
        start = time.perf_counter()
        out = run()
        times.append(time.perf_counter() - start)
    return min(times), out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--factor", type=int, default=8, help="longest length, × the context")
    parser.add_argument("--sequences", type=int, default=64, help="the chapter's n_sequences")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    runs = [
        zoo.load("rope", seed=s, profile="cpu", regime="task", domain="recall", progress=False)
        for s in range(args.seeds)
    ]
    config = runs[0].config
    stacked = jax.tree.map(lambda *leaves: np.stack(leaves), *[m.params for m in runs])
    print(f"{args.seeds} RoPE recall models (cpu profile), {args.sequences} sequences per length, "
          f"{len(jax.devices())} device(s)")  # fmt: skip
    for factor in (1, args.factor):
        batch = recall.task_batch(tasks.get("recall"), factor * config.context, args.sequences)
        ways = {
            "one model at a time, 8 per call (today)": functools.partial(
                lambda b: np.stack([recall.score(m.params, m.config, b) for m in runs]), batch),
            "one model at a time, 64 per call": functools.partial(
                lambda b: np.stack([recall.score(m.params, m.config, b, chunk=64) for m in runs]),
                batch),
            "models stacked, 8 per call": functools.partial(
                stacked_scorer(config, 8), stacked, batch),
            "models stacked, 32 per call": functools.partial(
                stacked_scorer(config, 32), stacked, batch),
        }  # fmt: skip
        results = {name: best_of(args.rounds, run) for name, run in ways.items()}
        today_seconds, today = next(iter(results.values()))
        print(f"\nlength {factor * config.context} ({factor}× the context):")
        for name, (seconds, right) in results.items():
            same = "same answers" if np.array_equal(right, today) else "ANSWERS DIFFER"
            print(f"  {name:42s} {1e3 * seconds / len(runs):8.1f} ms per model  "
                  f"{today_seconds / seconds:5.2f}× today  ({same})")  # fmt: skip


if __name__ == "__main__":
    main()
