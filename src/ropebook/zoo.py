"""The model zoo: named encodings × profiles × seeds × domains, trained once and cached.

Chapters never train ad hoc; they call :func:`load`, which trains the model if the cache lacks
it (resuming an interrupted run) and otherwise loads it in a second, after checking its sha256.
A model's cache folder is ``CACHE_DIR/zoo/<spec_hash>``, where the hash covers everything that
determines the weights: model and training configs, seed, domain and a digest of the tokens.
Many models train at once on one worker process per core (:func:`train_on_workers`); the command
line that trains a profile's zoo, ``python -m ropebook zoo``, is :mod:`ropebook.zoo_command`.

Profiles trade size for time (Shakespeare train split: 1.37 M tokens at vocabulary 4096):

- ``smoke``: ~3 s per model (the whole zoo in ~1 minute), for tests and chapter smoke runs;
  its numbers mean nothing.
- ``cpu`` (the default book): every spec on Shakespeare and Table 2 on Python with one seed,
  three seeds of the p-RoPE ablation models and of the PE zoo's encodings (:data:`SEED_BUDGET`;
  more where the seed plan buys them, :mod:`ropebook.seedplan`), and the other regimes below:
  :func:`default_jobs` lists them, ``python -m ropebook zoo`` prints how many are cached and its
  time estimate for this machine before it trains, and the README's build table gives the time
  measured per regime. To fit, the lesson model keeps the CABLE figures' 12 heads but gives each
  only ``head_dim = 16`` (8 RoPE frequencies, so p = 0.25 keeps 2) inside ``d_model = 128``;
  4 layers, context 128, 180 steps of 16 × 128 tokens (0.27 epoch, validation perplexity ~150
  for RoPE). Gaps between encodings are therefore small; where a model has one seed, chapters
  must say so.
- ``gpu``: GPT-2 Small as in CABLE (12 layers, 12 heads, d = 768, context 512), three seeds.
  Our corpora are small, so it stops after ~5 epochs (400 steps of 32 × 512 tokens) before
  a 124 M-parameter model overfits. On one H200, 40–51 s per model (``benchmarks/README.md``,
  GPU); the whole ``gpu`` zoo has not been trained.

Each profile comes in four *regimes* (:data:`REGIMES`, :func:`regime_settings`): ``lesson``
(the sizes above; at θ = 10⁴ and head_dim 16 its slowest RoPE planes barely turn over the
context, so claims about slow frequencies come out null by construction), ``matched`` (head_dim
32 and the base at which the slowest plane turns as often over the context as Gemma 7B's over
8k; in ``cpu``, 3× the steps), ``flagship`` (matched, 10× the lesson steps, snapshots of the
params at 8 log-spaced steps and step 0 for training dynamics) and ``task`` (the synthetic tasks
of :mod:`ropebook.tasks` on 2 layers of the matched spectrum, every model the same fixed number
of steps, evaluated on its learning curve as it goes). In ``cpu`` the matched model (4 heads of
32) trains about twice as many tokens per second as the lesson model (12 of 16).
"""

from __future__ import annotations

import contextlib
import dataclasses
import fcntl
import functools
import hashlib
import json
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ropebook import (
    CACHE_DIR,
    checkpoints,
    data,
    layouts,
    seedplan,
    tasks,
    train,
    workers,
)
from ropebook.model import ModelConfig, Params

ZOO_FORMAT = 1  # part of every spec hash: bump it when model or training maths change
DOMAINS = data.DOMAINS  # the text corpora a zoo model trains on (tasks: tasks.TASKS)


@dataclass(frozen=True, kw_only=True)
class Profile:
    """Model size and training budget shared by every model of a profile."""

    n_layers: int
    n_heads: int
    d_model: int
    d_ff: int
    context: int
    batch_size: int
    steps: int
    warmup: int
    lr: float
    seeds: tuple[int, ...]
    vocab_size: int = 4096
    eval_batches: int = 8
    head_dim: int | None = None


PROFILES: dict[str, Profile] = {
    "smoke": Profile(
        n_layers=2, n_heads=4, d_model=64, d_ff=256, context=64,
        batch_size=8, steps=60, warmup=10, lr=3e-3, seeds=(0,), eval_batches=2,
    ),
    "cpu": Profile(
        n_layers=4, n_heads=12, head_dim=16, d_model=128, d_ff=512, context=128,
        batch_size=16, steps=180, warmup=20, lr=3e-3, seeds=(0, 1, 2), eval_batches=16,
    ),
    "gpu": Profile(
        n_layers=12, n_heads=12, d_model=768, d_ff=3072, context=512,
        batch_size=32, steps=400, warmup=40, lr=6e-4, seeds=(0, 1, 2), eval_batches=32,
    ),
}  # fmt: skip

SPECS: dict[str, dict[str, Any]] = {
    "nope": {"encoding": "nope"},
    "rope": {"encoding": "rope"},
    "rope-500k": {"encoding": "rope", "base_factor": 50.0},  # the paper's 500k = 50 × its base
    "p-rope-0.25": {"encoding": "p-rope", "proportion": 0.25},
    "p-rope-0.5": {"encoding": "p-rope", "proportion": 0.5},
    "p-rope-0.75": {"encoding": "p-rope", "proportion": 0.75},
    "rope-partial-0.75": {"encoding": "rope-partial", "proportion": 0.75},
    "rope-reversed-0.75": {"encoding": "rope-reversed", "proportion": 0.75},
    "alibi": {"encoding": "alibi"},
    "kerple": {"encoding": "kerple"},
    "fire": {"encoding": "fire"},
}
TABLE2: tuple[str, ...] = (
    "nope", "rope", "rope-500k", "rope-reversed-0.75", "rope-partial-0.75",
    "p-rope-0.25", "p-rope-0.75",
)  # fmt: skip
PE_ZOO: tuple[str, ...] = ("rope", "alibi", "kerple", "fire")
# The recall chapter's models (ropebook.tasks), trained in the "task" regime on each task of
# tasks.TASKS: five encodings at the matched base, and RoPE and 0.75-RoPE at θ = 10^4 — the
# predicted-null contrast, whose slowest planes barely turn even at 8× the context.
TASK_SPECS: dict[str, dict[str, Any]] = {
    "rope-10k": {"encoding": "rope", "rope_base": 10_000.0},
    "p-rope-0.75-10k": {"encoding": "p-rope", "proportion": 0.75, "rope_base": 10_000.0},
}
TASK_MODELS: tuple[str, ...] = (
    "nope", "rope", "p-rope-0.75", "p-rope-0.25", "alibi", "rope-10k", "p-rope-0.75-10k",
)  # fmt: skip
# The layouts chapter's models, in the task regime: each hybrid production layout at the
# regime's shape by ropebook.layouts' rules (all-RoPE and 0.75-RoPE are TASK_MODELS' "rope" and
# "p-rope-0.75"), on both tasks; and Gemma 4's layout with p swept on its global layers
# (LAYOUT_SWEEP_P; 0.25 is Gemma 4's own) on recall only, the task its global layer serves.
# The global layer comes first in each period (layouts.global_layers): with it last, as in
# production, the 2-layer Gemma 3 layout stayed under 92 % on recall at the 1,000-step cap
# (seed 0), and with it first learnt recall in 140 steps (measured 2026-11-27; layouts chapter).
LAYOUT_POSITION = "first"
LAYOUT_MODELS: tuple[str, ...] = tuple(f"layout-{name}" for name in layouts.PRODUCTION)
LAYOUT_SWEEP_P: tuple[float, ...] = (0.0, 0.5, 0.75, 1.0)
LAYOUT_SWEEP_TASK = "recall"
LAYOUT_SPECS: dict[str, dict[str, Any]] = {
    **{f"layout-{name}": {"layout": name} for name in layouts.PRODUCTION},
    **{f"layout-gemma4-p{p:g}": {"layout": "gemma4", "global_proportion": p}
       for p in LAYOUT_SWEEP_P},
}  # fmt: skip
ALL_SPECS: dict[str, dict[str, Any]] = SPECS | TASK_SPECS | LAYOUT_SPECS


def _task_groups() -> list[tuple[str, str]]:
    """(name, task) of every task-regime model the book trains."""
    groups = [(n, t) for t in tasks.TASKS for n in (*TASK_MODELS, *LAYOUT_MODELS)]
    return groups + [(n, LAYOUT_SWEEP_TASK) for n in LAYOUT_SPECS if n not in LAYOUT_MODELS]


_PROFILE_FIELDS = tuple(f.name for f in dataclasses.fields(Profile) if f.name != "seeds")
_ENCODING_FIELDS = ("encoding", "rope_base", "pairing", "proportion", "dtype", "layers")
# the recipe's levers (train.TrainConfig), set only by overrides: the zoo trains today's recipe
_RECIPE_FIELDS = ("min_lr_ratio", "average_share")
OVERRIDES: tuple[str, ...] = (*_PROFILE_FIELDS, *_ENCODING_FIELDS, *_RECIPE_FIELDS, "snapshots")

# ---------------------------------------------------------------- regimes
# Where a model's spectrum sits matters more than its base: what a RoPE plane can do depends on
# how far it turns over the training context (rope.turns_per_context). The profiles above keep
# CABLE's 12 heads of head_dim 16 at base 10^4 and context 128, where the slowest planes barely
# turn: the "lesson" regime, kept to show why it cannot test claims about slow frequencies.
# The "matched" regime gives each head 16 planes (head_dim 32) and the base at which its slowest
# plane turns as often over the training context as Gemma 7B's does over 8k tokens (the paper's
# model; 0.14 turns), rounded to two significant digits. "flagship" is the matched regime
# trained ~10x longer with snapshots at log-spaced steps (training dynamics).
REFERENCE_MODEL = {"name": "Gemma 7B", "head_dim": 256, "rope_base": 10_000.0, "context": 8192}
REGIMES: tuple[str, ...] = ("lesson", "matched", "flagship", "task")
# The regimes whose runs record tail evaluations (the within-run jitter the methods chapter
# dissects); elsewhere the 4 extra evaluations (~9 % of a lesson model's time) would buy nothing.
TAIL_REGIMES: tuple[str, ...] = ("matched", "flagship")
FLAGSHIP: tuple[str, ...] = ("rope", "nope", "p-rope-0.75")
SNAPSHOTS = 8  # log-spaced snapshot steps of a flagship run (plus step 0, the untrained model)

# (profile, regime) -> profile fields replaced; rope_base is derived, see regime_settings.
_REGIME_FIELDS: dict[tuple[str, str], dict[str, Any]] = {
    ("smoke", "matched"): {"n_heads": 2, "head_dim": 32},
    ("smoke", "flagship"): {"n_heads": 2, "head_dim": 32, "steps": 120},
    ("cpu", "matched"): {"n_heads": 4, "head_dim": 32, "steps": 540, "warmup": 40},
    ("cpu", "flagship"): {"n_heads": 4, "head_dim": 32, "steps": 1800, "warmup": 100},
    ("gpu", "matched"): {"n_heads": 12, "head_dim": 64},
    ("gpu", "flagship"): {"n_heads": 12, "head_dim": 64, "steps": 4000, "warmup": 200},
    # task: the matched spectrum on 2 layers, batch 32, every model trained the same fixed
    # number of steps (no early stop: the arms of a comparison train alike, and a model that
    # does not learn is scored as it ends) and evaluated on the task at 1x every eval_every
    # steps, the learning curve from which time to tasks.CRITERION is read. cpu's 300 steps,
    # fixed before the data: the top of the ~100-300 steps in which the pilots' 2-layer models
    # reached the criterion (ropebook.tasks), the learning rate now annealed over them (the 1,000
    # step cap kept it near its peak there), at about the zoo cost of the early-stopped regime it
    # replaces (benchmarks/README.md, "Equal training"); gpu's 1,000: that regime's cap.
    **{
        (profile, "task"): {
            "n_layers": 2, "n_heads": heads, "head_dim": 32, "vocab_size": tasks.VOCAB_SIZE,
            "batch_size": batch, "steps": steps, "warmup": warmup, "lr": 3e-3,
            "eval_batches": 4, "eval_every": every,
        }
        for profile, heads, batch, steps, warmup, every in (
            ("smoke", 2, 8, 20, 5, 10), ("cpu", 4, 32, 300, 20, 20),
            ("gpu", 4, 32, 1000, 20, 20),
        )
    },
}  # fmt: skip


def _round_significant(x: float, digits: int = 2) -> float:
    return float(f"{x:.{digits - 1}e}")


def reference_slowest_turns() -> float:
    """Turns of the reference model's slowest plane over its context (Gemma 7B: ~0.14)."""
    from ropebook import rope

    ref = REFERENCE_MODEL
    return float(rope.turns_per_context(ref["head_dim"], ref["rope_base"], ref["context"])[-1])


def regime_settings(profile: str, regime: str = "lesson") -> dict[str, Any]:
    """The profile fields (and ``rope_base``, ``snapshots``) a regime replaces; ``{}`` for lesson."""
    from ropebook import rope

    _choose("profile", profile, PROFILES)
    _choose("regime", regime, REGIMES)
    if regime == "lesson":
        return {}
    fields = dict(_REGIME_FIELDS[(profile, regime)])
    context = fields.get("context", PROFILES[profile].context)
    base = rope.matched_base(fields["head_dim"], context, reference_slowest_turns())
    fields["rope_base"] = _round_significant(base)
    if regime == "flagship":
        steps = fields["steps"]
        fields["snapshots"] = (
            0,
            *train.log_spaced_steps(steps, SNAPSHOTS, first=max(steps // 100, 1)),
        )
    return fields


@dataclass
class TrainedModel:
    name: str
    params: Params
    config: ModelConfig
    history: dict[str, list[dict[str, float]]]
    tokens_seen: int
    seconds: float
    path: Path
    spec_hash: str
    profile: str
    seed: int
    domain: str
    regime: str = "lesson"
    trained_now: bool = False  # this call trained (or finished training) it; else loaded

    @property
    def val_ppl(self) -> float:
        """Validation perplexity at the end of training."""
        return self.history["val"][-1]["ppl"]

    @property
    def snapshot_steps(self) -> list[int]:
        """Steps whose params were kept (flagship regime), 0 being the untrained model."""
        return sorted(e["step"] for e in self.history.get("snapshots", []))

    def snapshot(self, step: int) -> tuple[Params, int]:
        """``(params, tokens_seen)`` at a kept step (sha256-checked)."""
        params, entry = checkpoints.load_snapshot(self.path, step)
        return params, entry["tokens_seen"]


def _choose(kind: str, value: Any, valid: Any) -> None:
    if value not in valid:
        raise ValueError(f"unknown {kind} {value!r}; valid {kind}s: {', '.join(map(str, valid))}")


def configs(
    name: str, *, seed: int = 0, profile: str = "cpu", regime: str = "lesson", **overrides: Any
) -> tuple[ModelConfig, train.TrainConfig]:
    """The model and training configs of a zoo model (validates every argument).

    ``regime`` (see :data:`REGIMES`) replaces some profile fields; ``overrides`` replace any field
    last. A spec's ``base_factor`` multiplies the regime's base (RoPE θ = 500k is 50× 10^4); a
    spec's ``layout`` (:data:`LAYOUT_SPECS`) sets the encoding fields by :func:`ropebook.layouts.layout`
    for the final shape, with the regime's base as its uniform θ.
    """
    _choose("model name", name, ALL_SPECS)
    _choose("profile", profile, PROFILES)
    for key in overrides:
        _choose("override", key, OVERRIDES)
    spec = dict(ALL_SPECS[name])
    factor = spec.pop("base_factor", 1.0)
    pattern, global_p = spec.pop("layout", None), spec.pop("global_proportion", None)
    settings = dataclasses.asdict(PROFILES[profile]) | regime_settings(profile, regime) | spec
    settings["rope_base"] = settings.get("rope_base", 10_000.0) * factor
    settings |= overrides
    if pattern is not None:
        shape = {k: settings[k] for k in ("n_layers", "head_dim", "context")}
        chosen = layouts.layout(
            pattern, **shape, base=settings["rope_base"], position=LAYOUT_POSITION
        )
        if global_p is not None:
            chosen = layouts.with_global_proportion(chosen, global_p)
        settings |= chosen.fields | {k: overrides[k] for k in _ENCODING_FIELDS if k in overrides}
    model_config = ModelConfig(
        **{k: settings[k] for k in _ENCODING_FIELDS if k in settings},
        **{k: settings[k] for k in ("vocab_size", "n_layers", "n_heads", "d_model", "d_ff")},
        context=settings["context"],
        head_dim=settings["head_dim"],
    )
    steps = settings["steps"]
    train_config = train.TrainConfig(
        steps=steps, batch_size=settings["batch_size"], seq_len=settings["context"],
        lr=settings["lr"], warmup=settings["warmup"], seed=seed,
        eval_every=settings.get("eval_every", max(steps // 2, 1)),
        checkpoint_every=max(steps // 4, 1), eval_batches=settings["eval_batches"],
        snapshots=settings.get("snapshots", ()), stop_accuracy=settings.get("stop_accuracy"),
        tail_evals=train.TAIL_EVALS if regime in TAIL_REGIMES else 0,
        **{k: overrides[k] for k in _RECIPE_FIELDS if k in overrides},
    )  # fmt: skip
    return model_config, train_config


def _tokens(domain: str, split: str, vocab_size: int) -> np.ndarray:
    return data.load_tokens(domain, split, vocab_size=vocab_size)


@dataclass(frozen=True, eq=False)
class _Job:
    """Everything that determines a zoo model's weights, and the tokens it trains on."""

    name: str
    seed: int
    profile: str
    domain: str
    model_config: ModelConfig
    train_config: train.TrainConfig
    splits: tuple[np.ndarray, np.ndarray] | None  # train, val; None for a task
    task: Any = None  # a ropebook.tasks task: data made from the seed, its settings in the spec

    @functools.cached_property
    def spec(self) -> dict[str, Any]:
        spec = {
            "format": ZOO_FORMAT,
            "name": self.name,
            "domain": self.domain,
            "model": self.model_config.to_dict(),
            "train": self.train_config.to_dict(),
        }
        if self.task is not None:
            return spec | {"task": self.task.to_dict()}
        digest = hashlib.sha256(b"".join(np.ascontiguousarray(t).tobytes() for t in self.splits))
        return spec | {"tokens_sha256": digest.hexdigest()}

    @functools.cached_property
    def spec_hash(self) -> str:
        return hashlib.sha256(json.dumps(self.spec, sort_keys=True).encode()).hexdigest()[:16]


def _job(
    name: str, seed: int, profile: str, domain: str, regime: str, overrides: dict[str, Any]
) -> _Job:
    model_config, train_config = configs(
        name, seed=seed, profile=profile, regime=regime, **overrides
    )
    _choose("domain", domain, (*DOMAINS, *tasks.TASKS))
    if (domain in tasks.TASKS) != (regime == "task"):
        raise ValueError(f"the task regime trains the tasks {tuple(tasks.TASKS)}, and only it")
    if regime == "task":
        task = tasks.get(domain)
        return _Job(name, seed, profile, domain, model_config, train_config, None, task)
    splits = tuple(_tokens(domain, split, model_config.vocab_size) for split in ("train", "val"))
    return _Job(name, seed, profile, domain, model_config, train_config, splits)


def spec_hash(
    name: str,
    *,
    seed: int = 0,
    profile: str = "cpu",
    domain: str = "shakespeare",
    regime: str = "lesson",
    **overrides: Any,
) -> str:
    """The cache key of a zoo model (its folder is ``CACHE_DIR/zoo/<spec_hash>``); no training."""
    return _job(name, seed, profile, domain, regime, overrides).spec_hash


def cache_folder(name: str, **where: Any) -> Path:
    """A zoo model's cache folder, ``CACHE_DIR/zoo/<spec_hash>`` (``where``: as :func:`spec_hash`)."""
    return Path(CACHE_DIR) / "zoo" / spec_hash(name, **where)


def load(
    name: str,
    *,
    seed: int = 0,
    profile: str = "cpu",
    domain: str = "shakespeare",
    regime: str = "lesson",
    progress: bool = True,
    **overrides: Any,
) -> TrainedModel:
    """The trained zoo model ``name``: from the cache if present, else trained now and cached.

    ``regime`` picks the spectrum regime (:data:`REGIMES`); ``overrides`` replace profile fields
    (e.g. ``steps=...``) or encoding fields (``rope_base``). An interrupted training run resumes
    from its last checkpoint. Flagship models keep snapshots: :meth:`TrainedModel.snapshot`.
    Another process training the same model holds its lock: this call waits for it, then loads.
    """
    job = _job(name, seed, profile, domain, regime, overrides)
    model = _load(job, regime, progress=progress, wait=True)
    assert model is not None  # waiting always ends with the model
    return model


def train_if_free(
    name: str, *, seed: int, profile: str, domain: str, regime: str, **overrides: Any
) -> TrainedModel | None:
    """:func:`load` without its progress bar, unless another process holds the model (is training
    it): then ``None`` at once. The zoo's worker processes share their jobs this way."""
    job = _job(name, seed, profile, domain, regime, overrides)
    return _load(job, regime, progress=False, wait=False)


def is_done(directory: Path) -> bool:
    """Whether a model's cache folder holds a complete checkpoint (read without its lock)."""
    return (directory / checkpoints.CHECKPOINT_JSON).exists() and bool(
        checkpoints.read_metadata(directory).get("complete")
    )


def _load(job: _Job, regime: str, *, progress: bool, wait: bool) -> TrainedModel | None:
    directory = Path(CACHE_DIR) / "zoo" / job.spec_hash
    directory.mkdir(parents=True, exist_ok=True)
    with open(directory / ".lock", "w") as lock:  # one trainer per model across processes
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | (0 if wait else fcntl.LOCK_NB))
        except BlockingIOError:
            return None
        trained_now = not is_done(directory)
        if trained_now:
            train.train(
                job.model_config, job.train_config, *(job.splits or (None,)),
                checkpoint_dir=directory, progress=progress, extra={"spec": job.spec},
                desc=f"{job.name} s{job.seed} {job.domain}", task=job.task,
            )  # fmt: skip
        params, _, meta = checkpoints.load_checkpoint(directory)
    return TrainedModel(
        name=job.name, params=params, config=job.model_config, history=meta["history"],
        tokens_seen=meta["tokens_seen"], seconds=meta["seconds"], path=directory,
        spec_hash=job.spec_hash, profile=job.profile, seed=job.seed, domain=job.domain,
        regime=regime, trained_now=trained_now,
    )  # fmt: skip


def load_seeds(
    name: str,
    seeds: tuple[int, ...],
    *,
    profile: str = "cpu",
    domain: str = "shakespeare",
    regime: str = "lesson",
    progress: bool = True,
    together: bool | None = None,
    **overrides: Any,
) -> list[TrainedModel]:
    """:func:`load` for several seeds of one spec. Those the cache lacks train ``together`` in
    one program (:func:`ropebook.train.train_seeds`; by default where
    :func:`ropebook.train.seed_batching` measured it faster), else one after another; each is
    cached exactly as :func:`load` caches it (same spec hash, same files). Task runs train one
    at a time (:func:`ropebook.train.train_seeds` batches language pre-training only)."""
    jobs = [_job(name, seed, profile, domain, regime, overrides) for seed in seeds]
    together = train.seed_batching() if together is None else together
    trained: set[int] = set()
    if together and regime != "task" and len(jobs) > 1:
        folders = {job.seed: Path(CACHE_DIR) / "zoo" / job.spec_hash for job in jobs}
        with contextlib.ExitStack() as stack:
            for folder in sorted(folders.values()):  # one lock order for every process
                folder.mkdir(parents=True, exist_ok=True)
                fcntl.flock(stack.enter_context(open(folder / ".lock", "w")), fcntl.LOCK_EX)
            todo = [job for job in jobs if not is_done(folders[job.seed])]
            if len(todo) > 1:
                train.train_seeds(
                    todo[0].model_config, [job.train_config for job in todo], *todo[0].splits,
                    checkpoint_dirs=[folders[job.seed] for job in todo], progress=progress,
                    extras=[{"spec": job.spec} for job in todo],
                    desc=f"{name} s{','.join(str(job.seed) for job in todo)} {domain}",
                )  # fmt: skip
                trained = {job.seed for job in todo}
    models = [
        load(name, seed=seed, profile=profile, domain=domain, regime=regime, progress=progress,
             **overrides)
        for seed in seeds
    ]  # fmt: skip
    return [dataclasses.replace(m, trained_now=m.trained_now or m.seed in trained) for m in models]


def train_seed_groups(jobs: list[Job], profile: str, overrides: dict[str, Any]) -> dict[Job, float]:
    """Train the seeds of each spec in ``jobs`` together (:func:`load_seeds`), so that the jobs
    then load from the cache; what ``ROPEBOOK_SEED_BATCH`` (:func:`ropebook.train.seed_batching`)
    turns on in ``python -m ropebook zoo``. Returns the jobs it trained, each with its share of
    its group's wall time (seconds), which the caller counts as that job's training."""
    groups: dict[tuple[str, str, str], list[int]] = {}
    for name, seed, domain, regime in jobs:
        groups.setdefault((name, domain, regime), []).append(seed)
    trained: dict[Job, float] = {}
    for (name, domain, regime), seeds in groups.items():
        if len(seeds) > 1:
            began = time.perf_counter()
            models = load_seeds(
                name, tuple(seeds), profile=profile, domain=domain, regime=regime,
                together=True, **overrides,
            )  # fmt: skip
            new = [(name, m.seed, domain, regime) for m in models if m.trained_now]
            trained |= dict.fromkeys(new, (time.perf_counter() - began) / max(len(new), 1))
    return trained


# Where the cpu budget cannot afford every seed, these (profile, domain) pairs train only the
# names listed with all seeds and the rest with the first seed: the p-RoPE ablation gets its seed
# intervals on both domains (Table 2) and on Shakespeare for the p sweep, and the PE zoo's
# encodings theirs (the pe_zoo chapter orders encodings over seeds; one seed cannot decide).
SEED_BUDGET: dict[tuple[str, str], tuple[str, ...]] = {
    ("cpu", "shakespeare"): tuple(dict.fromkeys((*TABLE2, "p-rope-0.5", *PE_ZOO))),
    ("cpu", "python"): TABLE2,
}


# The matched regime trains Table 2 and ALiBi (the non-rotary baseline of the context-extension
# chapter) on Shakespeare with every seed; the flagship models train ~10x longer: fewer seeds.
MATCHED: tuple[str, ...] = (*TABLE2, "alibi")
FLAGSHIP_SEEDS = 3


def budget(profile: str, regime: str = "lesson") -> str:
    """What one model of a regime saw, for claim records: ``"lesson regime, 368,640 tokens per
    model"``."""
    _, tc = configs("rope", profile=profile, regime=regime)
    return f"{regime} regime, {tc.steps * tc.batch_size * tc.seq_len:,} tokens per model"


def seeds_for(
    name: str,
    *,
    profile: str,
    domain: str = "shakespeare",
    regime: str = "lesson",
    planned: bool = True,
) -> tuple[int, ...]:
    """The seeds the zoo trains by default for ``name`` on ``domain``: what chapters average over.
    ``planned=False`` leaves out the seeds the seed plan adds (for analyses whose cost grows with
    every seed and whose claims are not the plan's comparisons)."""
    _choose("model name", name, ALL_SPECS)
    _choose("profile", profile, PROFILES)
    _choose("regime", regime, REGIMES)
    seeds = PROFILES[profile].seeds
    if regime == "task":
        return seeds if any(n == name for n, _ in _task_groups()) else ()
    # The p-RoPE comparisons that carry the paper's claim get the seeds their measured noise
    # needs (ropebook.seedplan, data/seed_plan.json), added after the profile's own.
    count = seedplan.planned_counts(profile).get((regime, name, domain)) if planned else None
    if regime == "flagship":
        chosen = seeds[:FLAGSHIP_SEEDS] if name in FLAGSHIP else ()
        return seedplan.extend_seeds(seeds, count) if count and chosen else chosen
    if regime == "matched":
        chosen = seeds if name in MATCHED else ()
        return seedplan.extend_seeds(seeds, count) if count and chosen else chosen
    budget = SEED_BUDGET.get((profile, domain))
    chosen = seeds if budget is None or name in budget else seeds[:1]
    return seedplan.extend_seeds(seeds, count) if count and chosen == seeds else chosen


Job = tuple[str, int, str, str]  # name, seed, domain, regime


def default_jobs(profile: str, seeds: tuple[int, ...] | None = None) -> list[Job]:
    """Every (name, seed, domain, regime) the book needs: in the lesson regime all specs on
    Shakespeare and Table 2 on Python; in the matched regime :data:`MATCHED` on Shakespeare; the
    :data:`FLAGSHIP` models. First seeds first, so a partial run already serves every chapter."""
    groups = [(n, "shakespeare", "lesson") for n in SPECS]
    groups += [(n, "python", "lesson") for n in TABLE2]
    groups += [(n, "shakespeare", "matched") for n in MATCHED]
    groups += [(n, "shakespeare", "flagship") for n in FLAGSHIP]
    groups += [(n, t, "task") for n, t in _task_groups()]
    chosen = {
        g: seeds or seeds_for(g[0], profile=profile, domain=g[1], regime=g[2]) for g in groups
    }
    depth = max(len(s) for s in chosen.values())
    return [(n, s[i], d, r) for i in range(depth) for (n, d, r), s in chosen.items() if i < len(s)]


def key(jobs: list[Job], profile: str, overrides: dict[str, Any] | None = None) -> str:
    """One hash of these jobs' spec hashes (``zoo --key``): the CI cache's key and the name of the
    published zoo (:mod:`ropebook.zoo_archive`); the same models, the same key."""
    hashes = sorted(
        spec_hash(n, seed=s, profile=profile, domain=d, regime=r, **(overrides or {}))
        for n, s, d, r in jobs
    )
    return hashlib.sha256("\n".join(hashes).encode()).hexdigest()[:16]


def cache_state(directory: Path) -> tuple[str, int]:
    """``(state, step)`` of a model's cache folder: ``done`` (a complete checkpoint), ``running``
    (a process holds the model's lock, training or loading it), ``interrupted`` (a checkpoint short
    of the end that no process holds: the next :func:`load` resumes it), ``damaged`` (unreadable
    metadata) or ``missing``; ``step`` is the last checkpoint's (0 without one)."""
    exists = (directory / checkpoints.CHECKPOINT_JSON).exists()
    try:
        meta = checkpoints.read_metadata(directory) if exists else {}
    except train.CheckpointError:
        return "damaged", 0
    if meta.get("complete"):
        return "done", meta["step"]
    if (directory / ".lock").exists():
        with open(directory / ".lock", "a") as lock:  # "a": never truncate another's lock file
            try:
                fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)  # released when closed
            except BlockingIOError:
                return "running", meta.get("step", 0)
    return ("interrupted" if meta else "missing"), meta.get("step", 0)


def train_on_workers(
    jobs: list[Job],
    *,
    profile: str,
    n: int | None = None,
    overrides: dict[str, Any] | None = None,
    on_trained: Callable[[Job, dict[str, Any]], None] | None = None,
    quiet: bool = False,
) -> dict[Job, float]:
    """Train those of ``jobs`` the cache lacks complete on up to ``n`` worker processes (default:
    one per core on a CPU, :func:`ropebook.workers.count`), each pinned to one core with one
    device (:mod:`ropebook.workers`), so that the jobs then :func:`load` from the cache. Calls
    ``on_trained(job, metadata)`` as each model completes. Returns each model the workers trained
    with its training seconds over the number of workers (its share of the wall time, what one
    process's time per model compares with). With fewer than two models to train, or ``n < 2``
    (as on a GPU), it trains nothing: the caller's own :func:`load` does, in its process; so does
    it for a model a failed worker left. ``quiet`` keeps the workers' lines (one per model) out
    of this process's output, but for a failed worker's last lines.
    """
    overrides = overrides or {}
    folders = {
        (name, seed, domain, regime): cache_folder(
            name, seed=seed, profile=profile, domain=domain, regime=regime, **overrides
        )
        for name, seed, domain, regime in jobs
    }
    todo = [job for job, folder in folders.items() if not is_done(folder)]
    n = min(workers.count("auto") if n is None else n, len(todo))
    if n < 2:
        return {}
    trained: dict[Job, float] = {}

    def poll() -> None:
        for job in todo:
            if job not in trained and is_done(folders[job]):
                meta = checkpoints.read_metadata(folders[job])
                trained[job] = meta["seconds"] / n
                if on_trained is not None:
                    on_trained(job, meta)

    print(f"training {len(todo)} models on {n} worker processes, one per core", flush=True)
    with tempfile.TemporaryDirectory(prefix="ropebook-queue-") as folder:
        queue, logs = Path(folder) / "jobs.json", Path(folder) if quiet else None
        queue.write_text(json.dumps({"profile": profile, "overrides": overrides, "jobs": todo}))
        for i, code in enumerate(workers.wait(workers.start(queue, n, logs), poll)):
            if code:
                print(f"worker {i} exited with status {code}; what it left trains on loading")
                if logs:
                    print(workers.log_tail(logs, i))
    return trained


def work_queue(queue: Path) -> int:
    """A worker's loop (``python -m ropebook zoo --queue FILE``, started by
    :func:`train_on_workers`): train, in order, each of the file's jobs that is neither done nor
    held by another process (:func:`train_if_free`), one line each; leave when none is left."""
    order = json.loads(Path(queue).read_text())
    for name, seed, domain, regime in order["jobs"]:
        where = dict(seed=seed, profile=order["profile"], domain=domain, regime=regime,
                     **order["overrides"])  # fmt: skip
        if is_done(cache_folder(name, **where)):
            continue
        model = train_if_free(name, **where)
        if model is not None and model.trained_now:
            print(f"worker on core {workers.cores()}: trained {name} seed={seed} {domain} "
                  f"{regime} in {model.seconds:.0f} s (val ppl {model.val_ppl:.2f})", flush=True)  # fmt: skip
    return 0
