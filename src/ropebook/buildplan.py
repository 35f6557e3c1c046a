"""The zoo build planned before it starts: what is cached, what will train, and for how long here.

``python -m ropebook zoo`` (and so ``make book``) first prints, per regime, how many models are
cached and how many will train, and how long the training will take *on this machine*: a model
of each shape that will train (its ``rope`` model where there is one) runs a few training steps
here first (:func:`measure_rates`), and every model of that shape is estimated at its steps times
the measured seconds per step, plus the probe's first step (compiling) once per model. Models of
one shape differ only in their encoding, so the estimate is as good as that likeness; the build
prints the measured time per regime at the end, to compare. The probe's step is the one training
then uses (``train.train_step`` is cached per model), so its compile is not lost.

:func:`plan` and :func:`describe` are pure (items and rates in, numbers and lines out); only
:func:`measure_rates` touches the machine.
"""

from __future__ import annotations

import time
from collections.abc import Hashable, Iterable
from dataclasses import dataclass

import jax
import numpy as np
from tqdm.auto import tqdm

from ropebook import model, runtime, train
from ropebook.buildrecord import duration

LONG_SECONDS = 30 * 60  # beyond this, the plan says how to split the work
PROBE_STEPS = 5


@dataclass(frozen=True)
class Item:
    """One model of a build: its regime, whether the cache has it, and what training it costs."""

    regime: str
    cached: bool
    model_config: model.ModelConfig
    train_config: train.TrainConfig

    @property
    def shape(self) -> Hashable:
        """What sets a training step's cost, the encoding aside (models of one shape, one rate)."""
        m, t = self.model_config, self.train_config
        return (m.n_layers, m.d_model, m.n_heads, m.head_dim, m.d_ff, m.vocab_size,
                t.batch_size, t.seq_len)  # fmt: skip


@dataclass(frozen=True)
class Rate:
    """A measured training speed: seconds per step, and the first step's (compiling) seconds."""

    step_seconds: float
    first_step_seconds: float


@dataclass(frozen=True)
class RegimePlan:
    regime: str
    cached: int
    to_train: int
    steps: int
    tokens: int
    seconds: float  # estimated: every model trains all its steps (task models too)


def estimate(item: Item, rates: dict[Hashable, Rate]) -> float:
    """Seconds to train ``item`` here: steps × seconds per step + one first step (0 if cached)."""
    if item.cached:
        return 0.0
    if item.shape not in rates:
        raise KeyError(f"no measured rate for the shape {item.shape} of a {item.regime} model")
    rate = rates[item.shape]
    return item.train_config.steps * rate.step_seconds + rate.first_step_seconds


def plan(items: Iterable[Item], rates: dict[Hashable, Rate]) -> list[RegimePlan]:
    """Per regime (in order of first appearance): models cached and to train, the steps and
    tokens to train, and the estimated seconds (:func:`estimate`)."""
    rows: dict[str, list[int | float]] = {}
    for item in items:
        row = rows.setdefault(item.regime, [0, 0, 0, 0, 0.0])
        tc = item.train_config
        trains = not item.cached
        row[0] += item.cached
        row[1] += trains
        row[2] += trains * tc.steps
        row[3] += trains * tc.steps * tc.batch_size * tc.seq_len
        row[4] += estimate(item, rates)
    return [RegimePlan(regime, *row) for regime, row in rows.items()]


def probes(items: Iterable[Item]) -> dict[Hashable, Item]:
    """One model to time per shape that will train: its ``rope`` model if any, else the first."""
    chosen: dict[Hashable, Item] = {}
    for item in items:
        current = chosen.get(item.shape)
        better = current is None or (
            item.model_config.encoding == "rope" and current.model_config.encoding != "rope"
        )
        if better and not item.cached:
            chosen[item.shape] = item
    return chosen


def describe(plans: list[RegimePlan], *, how: str, shard: str = "0/1") -> list[str]:
    """The lines printed before the build: one per regime and a total, and where the total is
    long (over :data:`LONG_SECONDS`), how to split the work."""
    lines = [f"zoo plan (shard {shard}); estimated time on this machine {how}:"]
    for p in plans:
        lines.append(
            f"  {p.regime:9s} {p.cached:3d} cached, {p.to_train:3d} to train "
            f"({p.tokens / 1e6:,.1f} M tokens): ~{duration(p.seconds)}"
        )
    total = sum(p.seconds for p in plans)
    count = sum(p.to_train for p in plans)
    lines.append(f"  estimated total: ~{duration(total)} for {count} models to train")
    if total > LONG_SECONDS:
        lines += [
            "  That is long; to split it, run N processes or machines sharing one ROPEBOOK_CACHE,",
            "  each with `python -m ropebook zoo --shard I/N` (I = 0..N-1; every model trains once),",
            "  or submit the Slurm job array in cluster/ (README: 'Training the zoo on several",
            "  processes or machines'); `make book` then loads the cached models. On one machine,",
            "  `--workers auto` (as `make zoo` runs it) trains on one worker process per core.",
        ]
    return lines


def measure_rates(chosen: dict[Hashable, Item], steps: int = PROBE_STEPS) -> dict[Hashable, Rate]:
    """Time a first step and then ``steps`` training steps of each chosen model, here and now,
    on random tokens, placed over the devices as :func:`ropebook.train.train` places them."""
    rates = {}
    for shape, item in chosen.items():
        mc, tc = item.model_config, item.train_config
        batch_sharding, replicated = runtime.data_parallel(tc.batch_size)
        params = model.init_params(jax.random.key(tc.seed), mc)
        params, state = jax.device_put((params, train.make_optimizer(tc).init(params)), replicated)
        tokens = np.random.default_rng(0).integers(
            0, mc.vocab_size, (tc.batch_size, tc.seq_len + 1)
        )
        batch = jax.device_put(tokens.astype(np.int32), batch_sharding)
        step = train.train_step(mc, tc)
        seconds = []
        for _ in range(steps + 1):
            start = time.perf_counter()
            params, state, loss, _ = step(params, state, batch)
            jax.block_until_ready(loss)
            seconds.append(time.perf_counter() - start)
        rates[shape] = Rate(float(np.median(seconds[1:])), seconds[0])
    return rates


# tqdm's default meter without its ``<{remaining}``: the plan's estimate is the postfix.
BAR_FORMAT = "{l_bar}{bar}| {n_fmt}/{total_fmt} [{elapsed}, {rate_fmt}{postfix}]"


class Progress:
    """One tqdm bar over the whole build, in training steps, beside the per-model bars; its
    postfix is the time left, estimated from the plan and corrected by how the trained models'
    measured times compared with their estimates so far. It is the bar's only remaining time
    (:data:`BAR_FORMAT` leaves out tqdm's own, which extrapolates the step rate across models of
    other shapes and cached ones). :meth:`close` returns the summary."""

    def __init__(self, items: list[Item], rates: dict[Hashable, Rate]) -> None:
        self.rates = rates
        self.left = sum(estimate(item, rates) for item in items)
        self.estimated = {p.regime: p for p in plan(items, rates)}
        self.measured = dict.fromkeys(self.estimated, 0.0)
        self.spent = self.expected = 0.0
        total = sum(p.steps for p in self.estimated.values())
        self.bar = tqdm(total=total, desc="zoo", unit="step", position=0, bar_format=BAR_FORMAT)
        self.bar.set_postfix_str(f"~{duration(self.left)} left (estimate)")

    def done(self, item: Item, seconds: float, *, trained: bool, steps: int) -> None:
        """``item`` is loaded: ``trained`` now in ``seconds``, ``steps`` steps (fewer than
        planned only for a run that stops at ``stop_accuracy``, which no zoo model sets), or found
        in the cache although planned (another shard trained it)."""
        planned = estimate(item, self.rates)
        self.left -= planned
        if trained:
            self.measured[item.regime] += seconds
            self.spent, self.expected = self.spent + seconds, self.expected + planned
        if not item.cached:
            self.bar.total -= item.train_config.steps - (steps if trained else 0)
            self.bar.update(steps if trained else 0)
        scale = self.spent / self.expected if self.expected else 1.0
        self.bar.set_postfix_str(f"~{duration(self.left * scale)} left (estimate)")

    def close(self) -> list[str]:
        self.bar.close()
        return summarise(list(self.estimated.values()), self.measured)


def summarise(plans: list[RegimePlan], measured: dict[str, float]) -> list[str]:
    """Per regime, the measured training time beside the estimate made before the build."""
    lines = ["zoo training time per regime, measured (estimated before the build):"]
    for p in plans:
        lines.append(
            f"  {p.regime:9s} {p.to_train:3d} planned to train: {duration(measured[p.regime])}"
            f" (~{duration(p.seconds)})"
        )
    return lines
