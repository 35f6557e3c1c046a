"""Training: the optimiser, the step, the loop, checkpoints and resume, and seeds batched in one
program (:func:`train_seeds`). What a run is scored by lives in :mod:`ropebook.evaluation`.

Everything a run does is a function of ``(model config, train config, tokens)``: the initial
params come from ``jax.random.key(seed)`` and the batch of step ``s`` from
``numpy.random.default_rng([seed, s])``, so an interrupted run resumed from its last checkpoint
(:mod:`ropebook.checkpoints`: configs, step, history, params and optimiser state) takes exactly
the steps an uninterrupted run would (bit-exact on CPU) with no sampler state to save. With
several JAX devices, batches are split data-parallel over a 1-D mesh and params are replicated
(:func:`ropebook.runtime.data_parallel`).

The JSON also records each call's *provenance* (:func:`provenance`): what can move the numbers at
float32 rounding without being part of the run's configs (device count, attention path, JAX
version) and where it ran (host, Slurm job), one entry per call that trained, so a run resumed
elsewhere says so.
"""

from __future__ import annotations

import dataclasses
import functools
import os
import socket
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import jaxlib
import numpy as np
import optax
from jax.sharding import NamedSharding, PartitionSpec
from tqdm.auto import tqdm

from ropebook import attention, buildrecord, checkpoints, model
from ropebook.checkpoints import (
    CHECKPOINT_JSON,
    CheckpointError,
    load_checkpoint,
)
from ropebook.data import sample_windows
from ropebook.evaluation import answer_outputs, evaluate, evaluate_task
from ropebook.model import ModelConfig, Params
from ropebook.runtime import data_parallel

TAIL_EVALS = 5  # validation losses recorded at the end of a run (the within-run jitter) ...
TAIL_SHARE = 0.1  # ... spread over this share of its steps


@dataclass(frozen=True, kw_only=True)
class TrainConfig:
    """Optimisation settings. ``eval_every``/``checkpoint_every`` of 0 mean "only at the end".

    ``tail_evals`` validation losses are recorded at :func:`tail_eval_steps` (language runs) in
    ``history["tail"]``, for ``ropebook.stats.anatomy``. With ``average_share`` > 0 the optimiser
    state also keeps the uniform mean of the params after each of the last
    ``round(average_share · steps)`` steps (:func:`tail_average`; the weights trained are
    unchanged), evaluated at the end as one more model in ``history["val_average"]``
    (:func:`averaged_params` reads it). Evaluation never touches the weights,
    the batches or a random state of training (``tests/test_train.py``), so it is no part of a
    run's identity: :meth:`to_dict` leaves it out, and no spec hash moves with it."""

    steps: int
    batch_size: int
    seq_len: int
    lr: float = 3e-3
    warmup: int = 20
    min_lr_ratio: float = 0.1
    weight_decay: float = 0.1
    clip: float = 1.0
    b1: float = 0.9
    b2: float = 0.95
    seed: int = 0
    eval_every: int = 0
    eval_batches: int = 8
    checkpoint_every: int = 0
    log_every: int = 10
    snapshots: tuple[int, ...] = ()  # steps whose params are kept (training dynamics)
    stop_accuracy: float | None = None  # task runs: stop at the first evaluation reaching it
    tail_evals: int = TAIL_EVALS
    average_share: float = 0.0  # tail weight averaging over this share of the last steps

    def __post_init__(self) -> None:
        object.__setattr__(self, "snapshots", tuple(sorted({int(s) for s in self.snapshots})))
        if self.snapshots and not 0 <= self.snapshots[0] <= self.snapshots[-1] <= self.steps:
            raise ValueError(f"snapshots must lie in [0, steps={self.steps}], got {self.snapshots}")
        for name in ("steps", "batch_size", "seq_len", "eval_batches", "log_every"):
            if getattr(self, name) <= 0:
                raise ValueError(f"TrainConfig.{name} must be positive, got {getattr(self, name)}")
        if not 0 <= self.warmup <= self.steps:
            raise ValueError(f"warmup must lie in [0, steps={self.steps}], got {self.warmup}")
        if not self.lr > 0:
            raise ValueError(f"lr must be > 0, got {self.lr}")
        if self.stop_accuracy is not None and not 0 < self.stop_accuracy <= 1:
            raise ValueError(f"stop_accuracy must lie in (0, 1], got {self.stop_accuracy}")
        if self.tail_evals < 0:
            raise ValueError(f"tail_evals must be >= 0, got {self.tail_evals}")
        if not 0 <= self.average_share <= 1:
            raise ValueError(f"average_share must lie in [0, 1], got {self.average_share}")
        if not 0 <= self.min_lr_ratio <= 1:
            raise ValueError(f"min_lr_ratio must lie in [0, 1], got {self.min_lr_ratio}")

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready; ``snapshots``, ``stop_accuracy`` and ``average_share`` only when set, so
        runs without them keep their spec hash, and never ``tail_evals`` (evaluation only)."""
        data = dataclasses.asdict(self) | {"snapshots": list(self.snapshots)}
        unset = {"snapshots": not self.snapshots, "stop_accuracy": self.stop_accuracy is None}
        unset["average_share"] = self.average_share == 0
        unset["tail_evals"] = True
        return {k: v for k, v in data.items() if not unset.get(k, False)}


def tail_eval_steps(tc: TrainConfig) -> tuple[int, ...]:
    """The steps of the tail evaluations: ``tc.tail_evals`` steps ending at the last, evenly
    ``TAIL_SHARE · steps / (tail_evals − 1)`` apart (at least 1; none before step 1), so the
    default 5 span the last 10 % of training (1000 steps: 900, 925, ..., 1000)."""
    if tc.tail_evals == 0:
        return ()
    gap = max(1, round(TAIL_SHARE * tc.steps / max(tc.tail_evals - 1, 1)))
    first = tc.steps - gap * (tc.tail_evals - 1)
    return tuple(s for s in range(first, tc.steps + 1, gap) if s >= 1)


def log_spaced_steps(steps: int, count: int, first: int = 1) -> tuple[int, ...]:
    """About ``count`` distinct integer steps from ``first`` to ``steps``, evenly spaced in log."""
    grid = np.geomspace(first, steps, count)
    return tuple(sorted({int(round(s)) for s in grid}))


@dataclass
class TrainResult:
    """A run's state after ``step`` steps; also what :func:`train` updates as it goes."""

    params: Params
    opt_state: Any = field(repr=False)
    step: int = 0
    history: dict[str, list[dict[str, float]]] = field(
        default_factory=lambda: {"train": [], "val": []}
    )
    tokens_seen: int = 0
    seconds: float = 0.0
    stopped: bool = False  # reached ``stop_accuracy`` before ``steps``: the run is complete
    provenance: list[dict[str, Any]] = field(default_factory=list)  # one entry per training call


# ---------------------------------------------------------------- optimiser and batches


def make_schedule(tc: TrainConfig) -> optax.Schedule:
    """Linear warm-up from 0 to ``lr``, then cosine decay to ``lr · min_lr_ratio`` at ``steps``."""
    return optax.warmup_cosine_decay_schedule(
        0.0, tc.lr, tc.warmup, tc.steps, end_value=tc.lr * tc.min_lr_ratio
    )


def average_steps(tc: TrainConfig) -> int:
    """How many of the last steps :func:`tail_average` averages (0: none)."""
    return round(tc.average_share * tc.steps)


class TailAverageState(NamedTuple):
    count: jax.Array  # steps taken
    average: Params  # the mean of the params after each averaged step so far


def tail_average(steps: int, averaged: int) -> optax.GradientTransformation:
    """Keep the uniform mean of the params after each of the last ``averaged`` of ``steps``
    steps in the optimiser state, leaving the updates as they are (Kaddour 2022's tail
    averaging; Sanyal et al. 2023 average checkpoints instead). Last in a chain, where ``updates``
    are the ones applied, so ``params + updates`` are the params after the step."""
    first = steps - averaged + 1  # the first step (1-based) whose params enter the mean

    def init(params: Params) -> TailAverageState:
        return TailAverageState(jnp.zeros([], jnp.int32), jax.tree.map(jnp.zeros_like, params))

    def update(updates, state: TailAverageState, params: Params | None = None):
        count = optax.safe_increment(state.count)
        weight = jnp.where(count >= first, 1.0 / jnp.maximum(count - first + 1, 1), 0.0)
        after = optax.apply_updates(params, updates)
        return updates, TailAverageState(
            count, optax.incremental_update(after, state.average, weight)
        )

    return optax.GradientTransformation(init, update)


def make_optimizer(tc: TrainConfig) -> optax.GradientTransformation:
    """AdamW (weight decay on matrices only) after global-norm gradient clipping, and
    :func:`tail_average` when ``tc.average_share`` asks for it (otherwise the state is exactly
    the one every earlier checkpoint holds)."""
    parts = [
        optax.clip_by_global_norm(tc.clip),
        optax.adamw(
            make_schedule(tc), b1=tc.b1, b2=tc.b2, weight_decay=tc.weight_decay,
            mask=lambda params: jax.tree.map(lambda x: x.ndim >= 2, params),
        ),
    ]  # fmt: skip
    if averaged := average_steps(tc):
        parts.append(tail_average(tc.steps, averaged))
    return optax.chain(*parts)


def averaged_params(opt_state: Any) -> Params:
    """The tail average kept in an optimiser state of a run with ``average_share`` > 0."""
    if not (isinstance(opt_state, tuple) and isinstance(opt_state[-1], TailAverageState)):
        raise ValueError("this optimiser state keeps no tail average (average_share was 0)")
    return opt_state[-1].average


def batch_at(tokens: np.ndarray, tc: TrainConfig, step: int) -> np.ndarray:
    """The training batch of ``step`` (``[B, seq_len + 1]``): a pure function of (seed, step)."""
    return sample_windows(
        tokens, tc.seq_len + 1, tc.batch_size, np.random.default_rng([tc.seed, step])
    )


def provenance(config: ModelConfig, tc: TrainConfig) -> dict[str, Any]:
    """How this process trains a run, beyond its configs: what can move its numbers at float32
    rounding and where it ran.

    ``devices`` (the data-parallel mesh: gradients are summed over the batch in another order on
    another count), ``platform``, ``attention`` (``"fused"`` or ``"xla"``: the path
    :func:`ropebook.model.forward` takes on a training batch, decided by
    :func:`ropebook.attention.decision` for that shape, as in the step), ``jax`` and
    ``jaxlib`` versions, ``host``, in a Slurm job ``slurm_job`` (``JOB_TASK`` in an array) and,
    under ``make``, the ``build`` (:func:`ropebook.buildrecord.current_build`).
    """
    batch_sharding, _ = data_parallel(tc.batch_size)
    shape = (tc.batch_size, tc.seq_len, config.n_heads, config.head_dim)
    path = attention.decision(shape, config.dtype, bias=config.encoding_config.has_bias).path
    record = {
        "devices": batch_sharding.mesh.size, "platform": jax.default_backend(), "attention": path,
        "jax": jax.__version__, "jaxlib": jaxlib.__version__, "host": socket.gethostname(),
    }  # fmt: skip
    if job := os.environ.get("SLURM_JOB_ID"):
        task = os.environ.get("SLURM_ARRAY_TASK_ID")
        record["slurm_job"] = f"{os.environ['SLURM_ARRAY_JOB_ID']}_{task}" if task else job
    if build := buildrecord.current_build():  # so a resumed make book knows what it trained
        record["build"] = build
    return record


# ---------------------------------------------------------------- steps and evaluation


def _step_function(config: ModelConfig, tc: TrainConfig):
    """One optimiser step ``(params, opt_state, batch, intervention) -> (params, opt_state, loss,
    grad norm)``, not yet jitted: :func:`train_step` jits it, :func:`_seed_batched_step` vmaps it."""
    optimizer = make_optimizer(tc)

    def loss_fn(params: Params, batch, intervention) -> jnp.ndarray:
        if isinstance(batch, tuple):  # a task batch (tokens, targets, mask): answers only
            tokens, targets, mask = batch
            losses, _ = answer_outputs(params, tokens, targets, config, intervention)
            return jnp.sum(losses * mask) / jnp.maximum(jnp.sum(mask), 1)
        if intervention is None:  # the pre-training path, unchanged
            return model.loss_fn(params, batch, config)
        return jnp.mean(model.token_losses(params, batch, config, intervention))

    def step(params: Params, opt_state: Any, batch: jnp.ndarray, intervention=None):
        loss, grads = jax.value_and_grad(loss_fn)(params, batch, intervention)
        updates, opt_state = optimizer.update(grads, opt_state, params)
        return optax.apply_updates(params, updates), opt_state, loss, optax.global_norm(grads)

    return step


@functools.lru_cache(maxsize=16)
def train_step(config: ModelConfig, tc: TrainConfig):
    """The jitted step, cached per run so that resuming in the same process does not recompile."""
    return jax.jit(_step_function(config, tc), donate_argnums=(0, 1))


@functools.lru_cache(maxsize=16)
def _seed_batched_step(config: ModelConfig, tc: TrainConfig):
    """:func:`train_step` over a leading seed axis of params, optimiser state and batch. The
    optimiser does not depend on the seed, so ``tc`` is any one seed's config."""
    step = jax.vmap(_step_function(config, tc), in_axes=(0, 0, 0, None))
    return jax.jit(step, donate_argnums=(0, 1))


def task_batch_at(task, tc: TrainConfig, step: int):
    """The training batch of ``step`` of a task (``ropebook.tasks``): a pure function of
    (seed, step), like :func:`batch_at`."""
    return task.batch(np.random.default_rng([tc.seed, step]), tc.batch_size, tc.seq_len)


# ---------------------------------------------------------------- the loop


def _start(
    config: ModelConfig, tc: TrainConfig, directory: Path | None, initial_params: Params | None
) -> TrainResult:
    """A fresh run from ``key(seed)`` (or ``initial_params``), or the checkpoint in ``directory``
    if it is of this run."""
    if directory is None or not (directory / CHECKPOINT_JSON).exists():
        if initial_params is not None:
            params = jax.tree.map(jnp.array, initial_params)  # a copy: steps donate their input
        else:
            params = model.init_params(jax.random.key(tc.seed), config)
        return TrainResult(params, make_optimizer(tc).init(params))
    params, opt_state, meta = load_checkpoint(directory, make_optimizer(tc))
    for key, ours in (("model", config.to_dict()), ("train", tc.to_dict())):
        if meta[key] != ours:
            diff = sorted(k for k in ours if meta[key].get(k) != ours[k])
            raise CheckpointError(
                f"{directory / CHECKPOINT_JSON}: checkpoint is of another run ({key} fields "
                f"{diff} differ); delete the directory or pass another checkpoint_dir"
            )
    return TrainResult(
        params, opt_state, meta["step"], meta["history"], meta["tokens_seen"], meta["seconds"],
        meta.get("stopped", False), meta.get("provenance", []),
    )  # fmt: skip


def train(
    model_config: ModelConfig,
    train_config: TrainConfig,
    train_tokens: np.ndarray,
    val_tokens: np.ndarray | None = None,
    *,
    checkpoint_dir: Path | str | None = None,
    progress: bool = True,
    stop_after: int | None = None,
    extra: dict[str, Any] | None = None,
    desc: str = "train",
    initial_params: Params | None = None,
    intervention: model.Intervention | None = None,
    task=None,
) -> TrainResult:
    """Train from scratch, or resume from ``checkpoint_dir`` if it holds a checkpoint of this run.

    Checkpoints are written every ``checkpoint_every`` steps and at the end; after an interrupt,
    calling again with the same arguments resumes from the last one. ``stop_after`` ends the run
    (with a checkpoint) after that many steps in total, as an interrupt would. ``extra`` is stored
    in the JSON metadata.

    Fine-tuning: ``initial_params`` start the run from given weights instead of ``key(seed)``
    (a fresh optimiser), and ``intervention`` (:class:`ropebook.model.Intervention`, e.g. a
    scaled RoPE grid) is applied in every training step and evaluation. Both default to ``None``,
    which leaves training exactly as before.

    Tasks: with ``task`` (a :mod:`ropebook.tasks` task; ``train_tokens`` and ``val_tokens`` then
    ``None``) every batch is made from ``(seed, step)``, the loss counts only answers, evaluation
    measures answer accuracy at ``seq_len`` (:func:`evaluate_task`) and, with
    ``stop_accuracy`` set, the run stops (complete) at the first evaluation that reaches it.
    """
    tc = train_config
    if (task is None) == (train_tokens is None) or task is not None and val_tokens is not None:
        raise ValueError("pass train_tokens (and optionally val_tokens), or a task, not both")
    directory = None if checkpoint_dir is None else Path(checkpoint_dir)
    batch_sharding, replicated = data_parallel(tc.batch_size)
    run = _start(model_config, tc, directory, initial_params)
    run.params, run.opt_state = jax.device_put((run.params, run.opt_state), replicated)
    step_fn = train_step(model_config, tc)

    def advance() -> tuple[jax.Array, jax.Array]:
        if task is None:
            batch = jax.device_put(batch_at(train_tokens, tc, run.step), batch_sharding)
        else:
            batch = jax.device_put(task_batch_at(task, tc, run.step).arrays(), batch_sharding)
        run.params, run.opt_state, loss, grad_norm = step_fn(
            run.params, run.opt_state, batch, intervention
        )
        return loss, grad_norm

    _loop(
        model_config, [_Member(run, tc, directory, extra)], advance, lambda: None,
        val_tokens=val_tokens, task=task, intervention=intervention, stop_after=stop_after,
        desc=desc, progress=progress,
    )  # fmt: skip
    return run


@dataclass
class _Member:
    """One run of a training loop, with what it is saved by."""

    run: TrainResult
    tc: TrainConfig
    directory: Path | None
    extra: dict[str, Any] | None


def _save(member: _Member, model_config: ModelConfig) -> None:
    """Checkpoint a member's run in its folder, with everything :func:`_start` resumes from."""
    run, tc = member.run, member.tc
    checkpoints.save_checkpoint(member.directory, run.step, run.params, run.opt_state, {
        "complete": run.step >= tc.steps or run.stopped, "stopped": run.stopped,
        "model": model_config.to_dict(), "train": tc.to_dict(), "history": run.history,
        "tokens_seen": run.tokens_seen, "seconds": run.seconds, "extra": member.extra or {},
        "provenance": run.provenance,
    })  # fmt: skip


def _loop(
    model_config: ModelConfig,
    members: list[_Member],
    advance: Callable[[], tuple[jax.Array, jax.Array]],
    sync: Callable[[], None],
    *,
    val_tokens: np.ndarray | None,
    task,
    intervention: model.Intervention | None,
    stop_after: int | None,
    desc: str,
    progress: bool,
    record: dict[str, Any] | None = None,
) -> None:
    """The loop of :func:`train` (one member) and :func:`train_seeds` (S seeds at one step).
    ``advance`` steps every member, returning loss and gradient norm (``[S]`` for S members);
    ``sync`` puts the current params and optimiser states into the runs before they are evaluated
    or saved; ``record`` is added to this call's provenance entry."""
    runs = [m.run for m in members]
    tc, lead = members[0].tc, members[0].run  # every member shares all but the seed
    schedule, tokens_per_step = make_schedule(tc), tc.batch_size * tc.seq_len
    start, end = lead.step, tc.steps if stop_after is None else min(tc.steps, stop_after)
    seconds_before, clock = [r.seconds for r in runs], time.perf_counter()
    recorded = [list(r.provenance) for r in runs]
    started = buildrecord.now()  # tells this training call from any other (table2_study)

    def checkpoint() -> None:
        sync()
        share = (time.perf_counter() - clock) / len(runs)  # each model's share of the machine
        for m, before, earlier in zip(members, seconds_before, recorded, strict=True):
            m.run.seconds = before + share
            this_call = {"steps": [start, m.run.step], "started": started,
                         **provenance(model_config, m.tc)}  # fmt: skip
            m.run.provenance = [*earlier, this_call | (record or {})]
            if m.directory is not None:
                _save(m, model_config)

    def save_snapshots() -> None:
        sync()
        for m in members:
            if m.directory is not None:
                entry = checkpoints.save_snapshot(m.directory, m.run.step, m.run.params)
                entry = {"step": m.run.step, "tokens_seen": m.run.tokens_seen} | entry
                kept = m.run.history.setdefault("snapshots", [])
                kept[:] = [e for e in kept if e["step"] != m.run.step] + [entry]

    if lead.step == 0 and 0 in tc.snapshots:
        save_snapshots()
    tail = set(tail_eval_steps(tc)) if task is None and val_tokens is not None else set()
    pending: list[tuple[jax.Array, jax.Array]] = []  # (loss, grad norm) not yet fetched
    last_log = clock
    bar = tqdm(total=tc.steps, initial=start, desc=desc, disable=not progress, leave=False)
    try:
        while lead.step < end and not any(r.stopped for r in runs):
            pending.append(advance())
            for r in runs:
                r.step += 1
                r.tokens_seen += tokens_per_step
            if lead.step % tc.log_every == 0 or lead.step == end:
                fetched = np.asarray(jax.device_get(pending)).reshape(len(pending), 2, len(runs))
                now = time.perf_counter()
                rate = len(pending) * len(runs) * tokens_per_step / (now - last_log)
                for r, (losses, norms) in zip(runs, fetched.transpose(2, 1, 0), strict=True):
                    r.history["train"].append({
                        "step": r.step, "loss": float(losses.mean()),
                        "grad_norm": float(norms.mean()), "lr": float(schedule(r.step - 1)),
                        "tokens_per_s": rate,
                    })  # fmt: skip
                bar.update(len(pending))
                bar.set_postfix(loss=f"{fetched[:, 0].mean():.3f}", tok_s=f"{rate:,.0f}")
                pending, last_log = [], now
            snapshot, at_tail = lead.step in tc.snapshots, lead.step in tail
            due = tc.eval_every and lead.step % tc.eval_every == 0 or lead.step == tc.steps
            if (val_tokens is not None or task is not None) and (due or snapshot or at_tail):
                sync()
                scored = dict(
                    seq_len=tc.seq_len, batch_size=tc.batch_size, n_batches=tc.eval_batches,
                    seed=0, intervention=intervention,
                )  # fmt: skip
                for r in runs:
                    if task is None:
                        metrics = evaluate(r.params, model_config, val_tokens, **scored)
                        bar.set_postfix(val_ppl=f"{metrics['ppl']:.1f}")
                    else:
                        metrics = evaluate_task(r.params, model_config, task, **scored)
                        bar.set_postfix(accuracy=f"{metrics['accuracy']:.3f}")
                        goal = tc.stop_accuracy
                        r.stopped = bool(goal and metrics["accuracy"] >= goal)
                    if due or snapshot:
                        r.history["val"].append({"step": r.step, **metrics})
                    if at_tail:  # same windows as every evaluation (seed 0)
                        tail_row = {"step": r.step, "loss": metrics["loss"]}
                        r.history.setdefault("tail", []).append(tail_row)
                    if task is None and average_steps(tc) and r.step == tc.steps:
                        averaged = averaged_params(r.opt_state)
                        r.history["val_average"] = {
                            "step": r.step, "steps_averaged": average_steps(tc),
                            **evaluate(averaged, model_config, val_tokens, **scored),
                        }  # fmt: skip
            if snapshot:
                save_snapshots()
            if tc.checkpoint_every and lead.step % tc.checkpoint_every == 0 and lead.step < end:
                checkpoint()
    finally:
        bar.close()
    if lead.step > start:
        checkpoint()


# ---------------------------------------------------------------- seeds batched in one program

SEED_BATCH_MODES: tuple[str, ...] = ("auto", "on", "off")


def seed_batching() -> bool:
    """Whether the zoo trains the seeds of one spec together (:func:`train_seeds`), from
    ``ROPEBOOK_SEED_BATCH``: ``on``, ``off`` or ``auto`` (the default: on where JAX's default
    backend is a GPU, off elsewhere).

    **Measured** with ``benchmarks/zoo_throughput.py`` (3 seeds of the cpu profile's RoPE
    model, 20 steps, batched tokens/s over sequential) on this project's 2-core CPU, shared
    with other jobs: 0.80 and 0.87 in the lesson regime, 1.09 in the matched one (2026-11-27;
    the vmapped step alone: 0.87, 2026-11-24). Two busy cores gain little from bigger products,
    so CPU builds stay sequential. On a GPU one such model leaves the device mostly idle, which is
    what batching fills, so ``auto`` turns it on there. On an NVIDIA H200 (2026-11-27, float32
    products, ``tools/gpu_headline.sh``) the batched programs of the headline study ran at a
    median 1.96 M tokens/s (64 matched seeds) and 1.87 M (32 flagship seeds), 3.6-3.8× the
    benchmark's sequential 518 k tokens/s (one model after another). The benchmark itself, at 16
    seeds and 20 steps, then timed batching at 0.46× sequential: every checkpoint (and, in the
    zoo's runs, every evaluation) unstacked the seeds leaf by leaf in eager ops (S × ~220
    dispatches), which dominated short runs; :func:`_unstack` now does it in one program (3
    smoke seeds × 5 steps on this CPU: 1.1 s to 0.45 s a call). The GPU has not been
    re-measured since; on this CPU the benchmark still puts batching below sequential (0.93
    matched, 0.89 lesson, 3 seeds, 2026-11-27, the cores shared with a test run).
    """
    mode = os.environ.get("ROPEBOOK_SEED_BATCH", "auto").strip().lower() or "auto"
    if mode not in SEED_BATCH_MODES:
        raise ValueError(
            f"ROPEBOOK_SEED_BATCH must be one of {', '.join(SEED_BATCH_MODES)}, got {mode!r}"
        )
    return mode == "on" or mode == "auto" and jax.default_backend() == "gpu"


def _check_seed_batch(train_configs: list[TrainConfig]) -> None:
    """Configs that :func:`train_seeds` can train together, else a ValueError naming the problem."""
    if not train_configs:
        raise ValueError("train_seeds needs at least one TrainConfig (S = 0 seeds given)")
    seeds = [tc.seed for tc in train_configs]
    if duplicated := sorted({s for s in seeds if seeds.count(s) > 1}):
        raise ValueError(f"train_seeds got seed(s) {duplicated} more than once: {seeds}")
    first = dataclasses.asdict(train_configs[0]) | {"seed": None}  # tail_evals included
    for tc in train_configs[1:]:
        other = dataclasses.asdict(tc) | {"seed": None}
        if differ := sorted(k for k in first | other if first.get(k) != other.get(k)):
            raise ValueError(
                f"train_seeds trains seeds of one run: configs of seeds {seeds[0]} and {tc.seed} "
                f"also differ in {differ}"
            )
    if train_configs[0].stop_accuracy is not None:
        raise ValueError("train_seeds cannot batch runs with stop_accuracy: each seed stops alone")


@functools.partial(jax.jit, static_argnums=1)
def _unstack(tree: Any, n: int) -> tuple[Any, ...]:
    """The ``n`` trees stacked on ``tree``'s leading axis, as one program: slicing each leaf of
    S seeds eagerly dispatched S × leaves small ops (64 seeds × ~220 leaves on a GPU: seconds
    at every evaluation and checkpoint, more than the training steps between them)."""
    return tuple(jax.tree.map(lambda x, i=i: x[i], tree) for i in range(n))


def train_seeds(
    model_config: ModelConfig,
    train_configs: Sequence[TrainConfig],
    train_tokens: np.ndarray,
    val_tokens: np.ndarray | None = None,
    *,
    checkpoint_dirs: Sequence[Path | str | None] | None = None,
    progress: bool = True,
    stop_after: int | None = None,
    extras: Sequence[dict[str, Any] | None] | None = None,
    desc: str = "train",
) -> list[TrainResult]:
    """Train S seeds of one run in one program: ``train_configs`` differ only in ``seed``, and
    one ``jax.vmap``-ed step trains their stacked params, optimiser states and batches. Each
    seed keeps its own initialisation (``key(seed)``) and batches (``(seed, step)``), so seed
    ``i`` ends as ``train(model_config, train_configs[i], train_tokens, val_tokens,
    checkpoint_dir=checkpoint_dirs[i], extra=extras[i])`` would, within float32 rounding
    (``tests/test_train_seeds.py``), with the same files in its checkpoint folder; its
    provenance entry for this call adds ``seed_batch: S``. Checkpoints,
    ``stop_after`` and resume work as in :func:`train`: a seed whose checkpoint is complete is
    only loaded, and seeds interrupted at different steps (say one trained alone) are first
    brought level one at a time. A model's ``seconds`` is its share (1/S) of the wall time, and the
    ``tokens_per_s`` of its log rows the program's, over all seeds. Language pre-training only:
    no task, initial params or intervention.
    """
    tcs = list(train_configs)
    _check_seed_batch(tcs)
    directories = [None] * len(tcs) if checkpoint_dirs is None else list(checkpoint_dirs)
    extras = [None] * len(tcs) if extras is None else list(extras)
    if not len(directories) == len(extras) == len(tcs):
        raise ValueError(
            f"train_seeds got {len(tcs)} configs, {len(directories)} checkpoint_dirs and "
            f"{len(extras)} extras: one each per seed"
        )
    directories = [None if d is None else Path(d) for d in directories]
    if len(set(named := [d.resolve() for d in directories if d is not None])) < len(named):
        raise ValueError(f"train_seeds got one checkpoint folder for several seeds: {named}")
    members = [
        _Member(_start(model_config, tc, d, None), tc, d, e)
        for tc, d, e in zip(tcs, directories, extras, strict=True)
    ]
    tc = tcs[0]
    end = tc.steps if stop_after is None else min(tc.steps, stop_after)
    active = [m for m in members if m.run.step < end and not m.run.stopped]
    if not active:
        return [m.run for m in members]
    level = max(m.run.step for m in active)
    for m in active:
        if m.run.step < level:  # behind the others (only a checkpoint can be): catch up alone
            m.run = train(
                model_config, m.tc, train_tokens, val_tokens, checkpoint_dir=m.directory,
                progress=progress, stop_after=level, extra=m.extra, desc=desc,
            )  # fmt: skip
    batch_sharding, replicated = data_parallel(tc.batch_size)
    seed_batches = NamedSharding(batch_sharding.mesh, PartitionSpec(None, "data"))
    states = [(m.run.params, m.run.opt_state) for m in active]
    state = jax.device_put(jax.tree.map(lambda *seeds: jnp.stack(seeds), *states), replicated)
    step_fn = _seed_batched_step(model_config, dataclasses.replace(tc, seed=0))
    synced = level

    def advance() -> tuple[jax.Array, jax.Array]:
        nonlocal state
        step = active[0].run.step
        batches = np.stack([batch_at(train_tokens, m.tc, step) for m in active])
        params, opt_state, loss, grad_norm = step_fn(
            *state, jax.device_put(batches, seed_batches), None
        )
        state = params, opt_state
        return loss, grad_norm

    def sync() -> None:
        nonlocal synced
        if synced != active[0].run.step:
            for m, (params, opt_state) in zip(active, _unstack(state, len(active)), strict=True):
                m.run.params, m.run.opt_state = params, opt_state
            synced = active[0].run.step

    _loop(
        model_config, active, advance, sync, val_tokens=val_tokens, task=None, intervention=None,
        stop_after=stop_after, desc=desc, progress=progress, record={"seed_batch": len(active)},
    )  # fmt: skip
    return [m.run for m in members]
