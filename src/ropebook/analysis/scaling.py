"""Stretching RoPE past its training context, measured on the zoo (chapter ``rope_scaling``).

The rules themselves live in :mod:`ropebook.scaling`; this module applies them to trained models
and measures what the chapter reports:

- :func:`intervention`: a method at scale ``s`` as a :class:`ropebook.model.Intervention` (the
  model's own grid rescaled — p-RoPE's unrotated planes stay unrotated — and YaRN's ``m²`` on
  the logits);
- :func:`turns_rows`, :func:`changed_rows`: which pairs each method changes, as turns (cycles)
  per original context before and after;
- :func:`length_sweep`, :func:`log_estimate`, :func:`paired_change`: perplexity at multiples of
  the training context, with intervals over seeds formed on the log scale (mean loss ± t·s.e.,
  then exponentiated), and paired differences between methods;
- :func:`finetune`: a short fine-tune at the longer context with a method applied, cached under
  ``CACHE_DIR/finetune/<hash of parent spec, method, scale and schedule>``;
- :func:`previous_token_scores`, :func:`chunk_energy`, :func:`head_survival`: do previous-token
  heads survive a method, and how much of their query-key energy sits in the pairs it changes;
- :func:`passkey_batch`, :func:`passkey_accuracy`: a passkey retrieval probe (a random key
  planted early, asked for at the end).

The chapter's tables and figures of these numbers are in :mod:`ropebook.present.scaling`.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from ropebook import claims, model, rope, scaling
from ropebook.analysis import chunk_norms, mean_interval

FINETUNE_FORMAT = 1  # part of every fine-tune hash: bump when the fine-tune recipe changes
SWEEP_METHODS: tuple[str, ...] = ("none", "pi", "ntk", "dynamic-ntk", "yarn", "llama3")
# Reference settings for the frequency picture (head_dim, θ, original context); Touvron et al.
# 2023 (Llama 2: θ = 10^4, 4k context) and Meta 2024 (Llama 3.1: θ = 5·10^5, 8k pre-training).
REFERENCE_SETTINGS: dict[str, tuple[int, float, int]] = {
    "Llama 2 (d=128, θ=1e4, L=4096)": (128, 10_000.0, 4096),
    "Llama 3.1 (d=128, θ=5e5, L=8192)": (128, 500_000.0, 8192),
}


# ---------------------------------------------------------------- applying a method to a model


def model_grid(config: model.ModelConfig) -> np.ndarray | None:
    """The trained model's frequency grid ``[d/2]`` (0 = unrotated), or ``None`` if it does not
    rotate (NoPE, ALiBi, ...)."""
    enc = config.encoding_config
    if not enc.rotates:
        return None
    if enc.rope_variant not in ("rope", "p-rope", "reversed"):
        raise ValueError(f"scaling needs a full-head rotary encoding, not {enc.name!r}")
    return rope.frequencies(
        config.head_dim, config.rope_base, variant=enc.rope_variant, proportion=enc.proportion
    )


def scaled_grid(
    config: model.ModelConfig, method: str, scale: float, length: int | None = None
) -> scaling.Scaled:
    """Method ``method`` at scale ``s`` on the model's grid: the rule over the full head, with
    chunks the model never rotates (p-RoPE's free planes) left at 0."""
    grid = model_grid(config)
    if grid is None:
        raise ValueError(f"encoding {config.encoding!r} has no RoPE grid to scale")
    scaled = scaling.apply(method, config.head_dim, config.rope_base, scale, config.context, length)
    return scaling.Scaled(np.where(grid > 0, scaled.frequencies, 0.0), scaled.attention_factor)


def intervention(
    config: model.ModelConfig, method: str, scale: float, length: int | None = None
) -> model.Intervention | None:
    """The :class:`~ropebook.model.Intervention` that applies ``method`` at scale ``s`` (``None``
    for ``"none"``, for ``s = 1`` where a static rule is the identity, and for non-rotary
    models). Dynamic rules read ``length`` (their grid changes with it even at ``s = 1``)."""
    rule = scaling.method(method)  # unknown names fail here, whatever the model
    identity = scale == 1 and not rule.dynamic
    if method == "none" or identity or model_grid(config) is None:
        return None
    scaled = scaled_grid(config, method, scale, length)
    return model.Intervention(
        frequencies=np.asarray(scaled.frequencies, np.float32),
        logit_scale=np.float32(scaled.logit_scale),
    )


# ---------------------------------------------------------------- 1. which pairs each method changes


def turns_rows(
    settings: Mapping[str, tuple[int, float, int]],
    methods: Sequence[str],
    scale: float,
    *,
    dynamic_factor: float | None = None,
) -> list[dict[str, Any]]:
    """One row per (setting, method, chunk): turns over the original context ``L`` before and
    after scaling by ``s``; dynamic rules are evaluated at length ``sL`` with their factor
    ``dynamic_factor`` (default ``s``). ``settings`` maps a label to ``(head_dim, θ, L)``."""
    rows = []
    for label, (head_dim, theta, context) in settings.items():
        before = scaling.turns(scaling.default(head_dim, theta), context)
        for name in methods:
            factor = dynamic_factor if scaling.METHODS[name].dynamic and dynamic_factor else scale
            scaled = scaling.apply(name, head_dim, theta, factor, context, scale * context)
            after = scaling.turns(scaled.frequencies, context)
            for k, (b, a) in enumerate(zip(before, after, strict=True)):
                rows.append(
                    {
                        "setting": label, "method": scaling.METHODS[name].label, "chunk": k,
                        "position": k / (head_dim // 2 - 1), "turns before": float(b),
                        "turns after": float(a), "slowdown": float(b / a),
                        "logit scale": scaled.logit_scale,
                    }
                )  # fmt: skip
    return rows


def changed_rows(rows: Sequence[dict], tolerance: float = 0.01) -> list[dict[str, Any]]:
    """Per (setting, method): how many chunks the method leaves alone (slowdown within
    ``tolerance`` of 1), how many it slows by the full factor, and the turns over ``L`` of the
    fastest chunk it slows."""
    groups: dict[tuple[str, str], list[dict]] = {}
    for row in rows:
        groups.setdefault((row["setting"], row["method"]), []).append(row)
    out = []
    for (setting, method), chunks in groups.items():
        slow = np.array([c["slowdown"] for c in chunks])
        full = slow.max()
        changed = [c for c in chunks if abs(c["slowdown"] - 1) > tolerance]
        out.append(
            {
                "setting": setting, "method": method, "chunks": len(chunks),
                "kept": int(np.sum(np.abs(slow - 1) <= tolerance)),
                "slowed fully": int(np.sum(np.abs(slow - full) <= tolerance * full))
                if full > 1 + tolerance else 0,
                "largest slowdown": float(full),
                "fastest changed chunk (turns over L)":
                    float(changed[0]["turns before"]) if changed else float("nan"),
                "logit scale": float(chunks[0]["logit scale"]),
            }
        )  # fmt: skip
    return out


# ---------------------------------------------------------------- 2. perplexity by length


@dataclass(frozen=True)
class LogEstimate:
    """Mean loss (nats) over seeds with a Student-t interval; perplexities are its exponentials."""

    mean: float
    low: float
    high: float
    n: int

    @property
    def ppl(self) -> tuple[float, float, float]:
        """``(exp(mean), exp(low), exp(high))``: never below zero, asymmetric around the mean."""
        return math.exp(self.mean), math.exp(self.low), math.exp(self.high)

    def text(self, digits: int = 3) -> str:
        p, lo, hi = self.ppl
        if self.n < 2:
            return f"{p:.{digits}g} (1 seed)"
        return f"{p:.{digits}g} [{lo:.{digits}g}, {hi:.{digits}g}]"


def log_estimate(losses: Sequence[float], confidence: float = 0.95) -> LogEstimate:
    """:class:`LogEstimate` of per-seed mean losses (nats)."""
    values = np.asarray(losses, np.float64)
    mean, low, high = mean_interval(values, confidence)
    return LogEstimate(mean, low, high, values.size)


def _scale(method: str, factor: int, fixed: float | None, dynamic: float | None) -> float:
    if dynamic is not None and scaling.method(method).dynamic:
        return dynamic
    return fixed or factor


def length_sweep(
    models: Mapping[str, Sequence],
    methods: Sequence[str],
    factors: Sequence[int],
    tokens: np.ndarray,
    *,
    n_windows: int,
    seed: int = 0,
    fixed_scale: float | None = None,
    dynamic_factor: float | None = None,
    batch_size: int = 4,
    progress: bool = True,
) -> dict[tuple[str, str, int], list[float]]:
    """Mean next-token loss (nats) per seed for every (model name, method, length factor).

    ``models`` maps a name to its trained runs (one per seed: anything with ``params`` and
    ``config``). Windows of ``factor × context`` tokens, the same for every model and method
    (``seed``), so differences are paired. Each method is applied with ``s = factor`` (its best
    case at that length) unless ``fixed_scale`` is given; dynamic rules keep one factor for
    every length (``dynamic_factor``, default as the others) and recompute their grid from the
    window length. Non-rotary models get ``"none"`` only.
    """
    from tqdm.auto import tqdm

    from ropebook import evaluation

    jobs = []
    for name, runs in models.items():
        rotary = model_grid(runs[0].config) is not None
        for method in methods if rotary else ("none",):
            for factor in factors:
                jobs.append((name, method, factor))
    out: dict[tuple[str, str, int], list[float]] = {}
    for name, method, factor in tqdm(jobs, desc="length sweep", disable=not progress):
        losses = []
        for run in models[name]:
            length = factor * run.config.context
            iv = intervention(
                run.config, method, _scale(method, factor, fixed_scale, dynamic_factor), length
            )
            curve = evaluation.loss_by_position(
                run.params, run.config, tokens, seq_len=length, n_windows=n_windows, seed=seed,
                batch_size=batch_size, intervention=iv,
            )  # fmt: skip
            losses.append(float(np.mean(curve)))
        out[name, method, factor] = losses
    return out


def lowest(
    losses: Mapping[tuple[str, str, int], Sequence[float]],
    keys: Sequence[tuple[str, str]],
    factor: int,
) -> tuple[str, str]:
    """The (model, method) of ``keys`` with the lowest mean loss over seeds at ``factor``."""
    return min(keys, key=lambda k: float(np.mean(losses[(*k, factor)])))


@dataclass(frozen=True)
class Change:
    """``a`` relative to ``b`` in perplexity, paired by seed: ``exp(mean Δloss) − 1`` (%)."""

    percent: float
    low: float
    high: float
    n: int
    unit: str = "%"

    @property
    def significant(self) -> bool:
        return self.n >= 2 and (self.high < 0 or self.low > 0)

    def text(self, digits: int = 1) -> str:
        u = self.unit
        if self.n < 2:
            return f"{self.percent:+.{digits}f} {u} (1 seed, no interval)"
        if not self.significant:
            bound = max(abs(self.low), abs(self.high))
            return (
                f"|Δ| < {bound:.{digits}f} {u} (not resolved; mean {self.percent:+.{digits}f} {u})"
            )
        return f"{self.percent:+.{digits}f} {u} [{self.low:+.{digits}f}, {self.high:+.{digits}f}]"

    def verdict_lower(self) -> str:
        """Verdict on "``a`` is lower": ``cannot decide`` with one seed
        (:func:`ropebook.claims.too_few_runs`), ``not held`` for an exact tie on every seed (e.g.
        two accuracies of 0)."""
        if self.n < 2:
            return claims.too_few_runs(self.n)
        if self.low == self.high == 0:
            return "not held"
        return "held" if self.high < 0 else "not held" if self.low > 0 else "cannot decide"


def paired_change(
    a_losses: Sequence[float], b_losses: Sequence[float], confidence: float = 0.95
) -> Change:
    """Perplexity of ``a`` relative to ``b`` (percent), from the per-seed loss differences: the
    interval is formed on the log scale, then exponentiated."""
    diff = np.subtract(a_losses, b_losses)
    mean, low, high = mean_interval(diff, confidence)
    pct = [100 * math.expm1(v) for v in (mean, low, high)]
    return Change(*pct, diff.size)


def finetune_changes(view: Mapping, at: float, confidence: float = 0.95) -> dict[str, Change]:
    """The fine-tune comparisons at scale ``at``, each a :func:`paired_change` over seeds, from
    a sweep ``view[(model, method, factor)] -> [seeds] losses`` holding the plain model
    (``"rope"``), PI and YaRN at the fixed scale without a fine-tune (``"rope-fixed-s"``) and
    after it (``"rope-pi-ft"``, ``"rope-yarn-ft"``), and plain RoPE fine-tuned alike
    (``"rope-none-ft"``, the control). ``*_same``: PI on 1× windows, the very positions the model
    read at 1× (a causal model's first L tokens of an s×L window), which takes away the context a
    longer window adds to its later tokens."""
    base = view["rope", "none", 1]
    pi_fixed, pi_ft = view["rope-fixed-s", "pi", at], view["rope-pi-ft", "pi", at]
    plain_ft = view["rope-none-ft", "none", at]
    pairs = {
        "pi_before": (pi_fixed, base),
        "pi_before_same": (view["rope-fixed-s", "pi", 1], base),
        "pi_gain": (pi_ft, pi_fixed),
        "pi_after": (pi_ft, base),
        "pi_same": (view["rope-pi-ft", "pi", 1], base),
        "yarn_ft": (view["rope-yarn-ft", "yarn", at], pi_ft),
        "pi_over_plain": (pi_ft, plain_ft),
        "yarn_over_plain": (view["rope-yarn-ft", "yarn", at], plain_ft),
    }
    return {name: paired_change(a, b, confidence) for name, (a, b) in pairs.items()}


def paired_points(a: Sequence[float], b: Sequence[float], confidence: float = 0.95) -> Change:
    """``a − b`` of two per-seed shares (e.g. accuracies in [0, 1]) in percentage points, paired
    by seed, with a Student-t interval."""
    diff = 100 * np.subtract(a, b)
    return Change(*mean_interval(diff, confidence), diff.size, unit="pp")


# ---------------------------------------------------------------- 3. fine-tuning at the longer length


@dataclass
class FineTuned:
    """A zoo model fine-tuned at ``scale ×`` its context with ``method`` applied."""

    params: Any
    config: model.ModelConfig
    method: str
    scale: float
    steps: int
    tokens_seen: int
    seconds: float
    path: Path
    parent_hash: str
    seed: int
    trained_now: bool


def finetune(
    parent,
    method: str,
    scale: int,
    *,
    steps: int,
    batch_size: int,
    lr: float,
    warmup: int = 2,
    task=None,
    progress: bool = True,
) -> FineTuned:
    """Fine-tune zoo model ``parent`` (a :class:`ropebook.zoo.TrainedModel`) for ``steps`` steps on
    windows of ``scale × context`` tokens with ``method`` at scale ``s`` applied in every step:
    windows of its corpus, or batches of ``task`` (a :mod:`ropebook.tasks` task) when given.
    ``method="none"`` fine-tunes plain RoPE on the same tokens and steps (PI's "direct
    fine-tuning" baseline, Chen et al. 2023), so a rule's gain can be told from the fine-tune's.

    Cached under ``CACHE_DIR/finetune/<hash>`` (hash of the parent's spec hash, method, scale and
    the schedule) with the zoo's lock, atomic checkpoints and sha256 checks; an interrupted run
    resumes. Batches are drawn with the parent's seed.
    """
    from ropebook import CACHE_DIR, checkpoints, data, train

    iv = intervention(parent.config, method, scale)
    if iv is None and method != "none":  # "none": plain RoPE fine-tuned, the rules' baseline
        raise ValueError(f"{method!r} at s = {scale} changes nothing on {parent.name!r}")
    tc = train.TrainConfig(
        steps=steps, batch_size=batch_size, seq_len=scale * parent.config.context, lr=lr,
        warmup=warmup, seed=parent.seed, eval_every=0, eval_batches=2, checkpoint_every=0,
        log_every=max(min(10, steps), 1),
    )  # fmt: skip
    key = {
        "format": FINETUNE_FORMAT, "parent": parent.spec_hash, "method": method,
        "scale": scale, "train": tc.to_dict(),
    } | ({"task": task.to_dict()} if task is not None else {})  # fmt: skip
    digest = hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()[:16]
    directory = Path(CACHE_DIR) / "finetune" / digest
    directory.mkdir(parents=True, exist_ok=True)
    with open(directory / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        saved = (directory / checkpoints.CHECKPOINT_JSON).exists()
        done = saved and checkpoints.read_metadata(directory)
        trained_now = not (done and done.get("complete"))
        if trained_now:
            vocab = parent.config.vocab_size
            splits = (
                [data.load_tokens(parent.domain, s, vocab_size=vocab) for s in ("train", "val")]
                if task is None
                else [None]
            )
            train.train(
                parent.config, tc, *splits, task=task, checkpoint_dir=directory, progress=progress,
                extra={"finetune": key}, desc=f"fine-tune {parent.name} s{parent.seed} {method}",
                initial_params=parent.params, intervention=iv,
            )  # fmt: skip
        params, _, meta = checkpoints.load_checkpoint(directory)
    if meta.get("extra", {}).get("finetune") != key:
        raise checkpoints.CheckpointError(f"{directory}: fine-tune checkpoint of another recipe")
    return FineTuned(
        params, parent.config, method, scale, steps, meta["tokens_seen"], meta["seconds"],
        directory, parent.spec_hash, parent.seed, trained_now,
    )  # fmt: skip


def finetune_steps(pretrain_tokens: int, fraction: float, batch_size: int, seq_len: int) -> int:
    """Steps of ``batch_size × seq_len`` tokens that make ``fraction`` of the pre-training tokens
    (at least 1)."""
    return max(int(round(fraction * pretrain_tokens / (batch_size * seq_len))), 1)


# ---------------------------------------------------------------- 4. positional heads after scaling


@partial(jax.jit, static_argnames="config")
def _internals(params, tokens, config, intervention):
    _, layers = model.forward(
        params, tokens, config, return_internals=True, intervention=intervention
    )
    prev = [jnp.mean(jnp.diagonal(lay["probs"], offset=-1, axis1=-2, axis2=-1), axis=(0, 2))
            for lay in layers]  # fmt: skip
    return jnp.stack(prev), [(lay["q"], lay["k"]) for lay in layers]


def previous_token_scores(
    params, config, windows: np.ndarray, iv: model.Intervention | None = None, batch_size: int = 4
) -> np.ndarray:
    """Mean attention on the previous token, ``α_{i,i-1}`` over rows ``i ≥ 1`` and windows:
    ``[n_layers, n_heads]``."""
    total = np.zeros((config.n_layers, config.n_heads))
    for start in range(0, len(windows), batch_size):
        batch = jnp.asarray(windows[start : start + batch_size])
        prev, _ = _internals(params, batch, config, iv)
        total += np.asarray(prev) * len(batch)
    return total / len(windows)


def chunk_energy(params, config, windows: np.ndarray, batch_size: int = 4) -> np.ndarray:
    """How much each chunk can contribute to a head's scores: mean query chunk norm × mean key
    chunk norm, ``[n_layers, n_heads, d/2]`` (before rotation, which preserves norms)."""
    pairing = config.encoding_config.pairing
    q_sum = k_sum = 0.0
    for start in range(0, len(windows), batch_size):
        batch = jnp.asarray(windows[start : start + batch_size])
        _, qk = _internals(params, batch, config, None)
        q_sum = q_sum + np.stack([chunk_norms(q, pairing).sum(axis=(0, 1)) for q, _ in qk])
        k_sum = k_sum + np.stack([chunk_norms(k, pairing).sum(axis=(0, 1)) for _, k in qk])
    count = len(windows) * windows.shape[1]
    return (q_sum / count) * (k_sum / count)


def interpolation_share(
    energy: np.ndarray, grid: np.ndarray, scaled: np.ndarray, scale: float
) -> np.ndarray:
    """How far a method interpolates the pairs a head uses: the energy-weighted mean over
    chunks of ``log(g_k / g'_k) / log(s)`` (0: every pair the head uses kept as trained, 1: all
    slowed by the full factor ``s``, as PI does). ``energy [..., d/2]`` (:func:`chunk_energy`);
    unrotated chunks (grid 0) count as kept."""
    if not scale > 1:
        raise ValueError(f"scale must be > 1, got {scale}")
    rotated = (grid > 0) & (scaled > 0)
    with np.errstate(divide="ignore", invalid="ignore"):
        slowdown = np.where(rotated, np.log(np.where(rotated, grid / scaled, 1.0)), 0.0)
    weight = slowdown / math.log(scale)
    return (energy * weight).sum(-1) / energy.sum(-1)


@dataclass(frozen=True)
class HeadSurvival:
    """Previous-token heads of the unscaled model and their attention under each method."""

    threshold: float
    heads: dict[int, list[tuple[int, int]]]  # seed index -> (layer, head) found unscaled
    scores: dict[str, list[float]]  # method -> per seed, mean score of those heads
    survived: dict[str, list[float]]  # method -> per seed, share still above threshold
    share: dict[str, list[float]]  # method -> per seed, mean interpolation_share


def head_survival(
    scores: Mapping[str, Sequence[np.ndarray]],
    shares: Mapping[str, Sequence[np.ndarray]],
    threshold: float,
) -> HeadSurvival:
    """From per-seed ``[L, H]`` previous-token scores under each method (``"none"`` = unscaled)
    and :func:`interpolation_share` values: which heads are previous-token heads unscaled (score ≥ ``threshold``),
    and how they fare under each method."""
    heads = {i: [tuple(map(int, ix)) for ix in np.argwhere(s >= threshold)]
             for i, s in enumerate(scores["none"])}  # fmt: skip
    out_scores: dict[str, list[float]] = {}
    survived: dict[str, list[float]] = {}
    share: dict[str, list[float]] = {}
    for method, per_seed in scores.items():
        out_scores[method], survived[method], share[method] = [], [], []
        for i, s in enumerate(per_seed):
            if not heads[i]:
                continue
            picked = np.array([s[ix] for ix in heads[i]])
            out_scores[method].append(float(picked.mean()))
            survived[method].append(float(np.mean(picked >= threshold)))
            share[method].append(float(np.mean([shares[method][i][ix] for ix in heads[i]])))
    return HeadSurvival(threshold, heads, out_scores, survived, share)


def drop(survival: HeadSurvival, method: str, confidence: float = 0.95) -> tuple[float, ...]:
    """``(mean, low, high, n)`` of the paired drop in previous-token attention, unscaled minus
    ``method``, over seeds that have previous-token heads."""
    diff = np.subtract(survival.scores["none"], survival.scores[method])
    if diff.size == 0:
        return (math.nan, math.nan, math.nan, 0)
    return (*mean_interval(diff, confidence), diff.size)


def head_verdict(survival: HeadSurvival, confidence: float = 0.95) -> str:
    """ "PI weakens previous-token heads; YaRN weakens them less", seed by seed: PI's drop
    (:func:`drop`) above 0 and YaRN's score minus PI's above 0 (the same heads, paired by seed),
    each an interval (:func:`ropebook.claims.combine`: both: ``held``, one: ``partly``, one the
    other way and none for: ``not held``, else ``cannot decide``), as also on a single seed with
    previous-token heads (no interval); ``not testable here`` with none
    (:func:`ropebook.claims.too_few_runs`)."""
    from ropebook.claims import combine, verdict_from_interval

    pi = drop(survival, "pi", confidence)
    if pi[3] < 2:
        return claims.too_few_runs(pi[3])
    less = mean_interval(np.subtract(survival.scores["yarn"], survival.scores["pi"]), confidence)
    return combine(verdict_from_interval(lo, hi, threshold=0.0) for _, lo, hi in (pi[:3], less))


# ---------------------------------------------------------------- 5. passkey retrieval


@dataclass(frozen=True)
class PasskeyBatch:
    """Sequences with a key planted early and asked for at the end.

    ``tokens [N, T]``; ``positions [N, K]``: where the model's next-token prediction should be
    key token ``answers [N, K]`` (the K key tokens after the final marker)."""

    tokens: np.ndarray
    positions: np.ndarray
    answers: np.ndarray
    depth: int


def passkey_batch(
    rng: np.random.Generator,
    filler: np.ndarray,
    length: int,
    n: int,
    *,
    vocab_size: int,
    key_len: int = 5,
    marker_len: int = 3,
    depth: float = 0.1,
) -> PasskeyBatch:
    """``n`` windows of real text ``length`` tokens long; at ``depth × length`` a random marker
    (``marker_len`` tokens) and key (``key_len`` tokens) are written, and the last
    ``marker_len + key_len`` positions repeat them: the model must copy the key from far back."""
    from ropebook import data

    span = marker_len + key_len
    if length < 2 * span + 2:
        raise ValueError(f"length {length} too short for a {span}-token marker and key twice")
    tokens = data.sample_windows(filler, length, n, rng).astype(np.int32)
    planted = rng.integers(1, vocab_size, size=(n, span))
    at = int(depth * length)
    tokens[:, at : at + span] = planted
    tokens[:, length - span :] = planted
    first = length - key_len  # position of the first key token at the end
    positions = np.tile(np.arange(first - 1, length - 1), (n, 1))
    return PasskeyBatch(tokens, positions, planted[:, marker_len:], at)


@partial(jax.jit, static_argnames="config")
def _predictions(params, tokens, config, intervention):
    return jnp.argmax(model.forward(params, tokens, config, intervention=intervention), axis=-1)


def passkey_accuracy(
    params, config, batch: PasskeyBatch, iv: model.Intervention | None = None, batch_size: int = 4
) -> float:
    """Share of key tokens predicted exactly (argmax) at the end of the sequence."""
    hits = []
    for start in range(0, len(batch.tokens), batch_size):
        stop = start + batch_size
        pred = np.asarray(_predictions(params, jnp.asarray(batch.tokens[start:stop]), config, iv))
        rows = np.arange(pred.shape[0])[:, None]
        hits.append(pred[rows, batch.positions[start:stop]] == batch.answers[start:stop])
    return float(np.concatenate(hits).mean())


def passkey_sweep(
    models: Mapping[str, Sequence],
    methods: Sequence[str],
    factors: Sequence[int],
    filler: np.ndarray,
    *,
    n_trials: int,
    seed: int = 0,
    fixed_scale: float | None = None,
    dynamic_factor: float | None = None,
    progress: bool = True,
) -> dict[tuple[str, str, int], list[float]]:
    """Passkey accuracy per seed for every (model name, method, length factor); the same planted
    sequences for every model and method at a length (``seed``)."""
    from tqdm.auto import tqdm

    jobs = []
    for name, runs in models.items():
        rotary = model_grid(runs[0].config) is not None
        jobs += [(name, m, f) for m in (methods if rotary else ("none",)) for f in factors]
    out: dict[tuple[str, str, int], list[float]] = {}
    for name, method, factor in tqdm(jobs, desc="passkey", disable=not progress):
        accs = []
        for run in models[name]:
            length = factor * run.config.context
            batch = passkey_batch(
                np.random.default_rng([seed, factor]), filler, length, n_trials,
                vocab_size=run.config.vocab_size,
            )  # fmt: skip
            scale = _scale(method, factor, fixed_scale, dynamic_factor)
            iv = intervention(run.config, method, scale, length)
            accs.append(passkey_accuracy(run.params, run.config, batch, iv))
        out[name, method, factor] = accs
    return out


# ---------------------------------------------------------------- checks and verdicts

_HF_TYPES = {"pi": "linear", "dynamic-ntk": "dynamic", "yarn": "yarn", "llama3": "llama3"}


def transformers_agreement(
    settings: Mapping[str, tuple[int, float, int]], scale: float
) -> list[dict[str, Any]]:
    """Our rules against transformers' ``ROPE_INIT_FUNCTIONS`` (torch, float32) for every setting
    and every method transformers has: largest relative difference of the grids and absolute
    difference of the attention factors (dynamic NTK at length ``sL``)."""
    import transformers
    from transformers.modeling_rope_utils import ROPE_INIT_FUNCTIONS

    rows = []
    for label, (head_dim, theta, context) in settings.items():
        for name, hf_type in _HF_TYPES.items():
            params = {"rope_type": hf_type, "rope_theta": theta, "factor": float(scale)}
            if hf_type in ("yarn", "llama3"):
                params["original_max_position_embeddings"] = context
            if hf_type == "llama3":
                params |= {"low_freq_factor": 1.0, "high_freq_factor": 4.0}
            # dynamic reads L from max_position_embeddings; yarn and llama3 expect it at sL
            longest = context if hf_type in ("linear", "dynamic") else int(scale * context)
            config = transformers.LlamaConfig(
                hidden_size=2 * head_dim, num_attention_heads=2, head_dim=head_dim,
                max_position_embeddings=longest, rope_parameters=params,
            )  # fmt: skip
            inv_freq, factor = ROPE_INIT_FUNCTIONS[hf_type](config, None, seq_len=scale * context)
            ours = scaling.apply(name, head_dim, theta, scale, context, scale * context)
            theirs = inv_freq.numpy().astype(np.float64)
            rows.append(
                {
                    "setting": label, "method": scaling.METHODS[name].label,
                    "transformers rope_type": hf_type,
                    "max relative Δ frequency": float(np.max(np.abs(ours.frequencies / theirs - 1))),
                    "Δ attention factor": abs(ours.attention_factor - float(factor)),
                }
            )  # fmt: skip
    return rows


def combine(verdicts: Sequence[str]) -> str:
    """One verdict from several tests of a claim (:func:`ablation.combine_verdicts`)."""
    from ropebook.analysis.ablation import combine_verdicts

    return combine_verdicts(verdicts)


def verdict_higher(change: Change) -> str:
    """Verdict on "``a`` has the *higher* perplexity" (the converse of
    :meth:`Change.verdict_lower`)."""
    if change.n >= 2 and change.low == change.high == 0:
        return "not held"  # an exact tie is not "higher" either
    flipped = {"held": "not held", "not held": "held"}
    v = change.verdict_lower()
    return flipped.get(v, v)
