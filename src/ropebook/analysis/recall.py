"""Recall at a distance, measured on the task models of the zoo (chapter ``recall``).

Every measurement scores *answers* of a :mod:`ropebook.tasks` batch (the most likely token is
the target) and is paired: all models see the same sequences (``Generator([seed, length])``), so
differences between encodings are taken seed by seed. Numerics only; charts and sentences live
in :mod:`ropebook.present.recall`.

- :func:`learning` reads a model's learning curve and its steps to the criterion
  (:data:`ropebook.tasks.CRITERION`; every model trains the same fixed steps, none stops there);
  a model that never reached it is *not learnt*, and still counts in every average and
  comparison at what it scores: a failure is a result, never dropped. :func:`learnt_share` is
  the share of an arm's seeds that learnt, with its interval.
- :func:`binned_accuracy`: accuracy by key–query distance (recall) or by position (k-back) at a
  test length, in bins whose edges are powers of two up to the longest test length.
- :func:`passkey_grid`: passkey accuracy over needle depth × length.
- :func:`paired`: a paired difference over seeds with its interval and the smallest difference
  the seeds could detect (:mod:`ropebook.stats.power`).
- :func:`plane_probes`: accuracy change when RoPE planes are removed (the book's probes:
  fastest, slowest and random quarter, and each single plane).
- :func:`finetune`: a short fine-tune of a task model at a longer context with a
  context-extension method applied (the PI paper's setting), cached like a zoo model;
  :func:`finetuned_sweeps` fine-tunes with PI, YaRN and none (the control) and tests each, and
  :func:`finetune_wins` reads each rule's passkey gain over the control (what the chapter and
  the kept :mod:`ropebook.task_study` both read).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from ropebook import evaluation, tasks
from ropebook.analysis import Estimate, interval_text

FACTORS: tuple[int, ...] = (1, 2, 4, 8)  # test lengths, in multiples of the training context

# ---------------------------------------------------------------- learning


@dataclass(frozen=True)
class Learning:
    """A task model's learning curve: evaluation steps and accuracy at 1×, the criterion, and
    the first step that met it (``None``: never learnt in the steps it trained)."""

    steps: np.ndarray
    accuracy: np.ndarray
    criterion: float
    learnt_at: int | None
    seconds: float
    tokens_per_s: float = float("nan")  # mean training throughput, to compare machines

    @property
    def learnt(self) -> bool:
        return self.learnt_at is not None

    @property
    def final(self) -> float:
        """Accuracy at 1× at the last evaluation: where the model ended, learnt or not."""
        return float(self.accuracy[-1]) if self.accuracy.size else float("nan")


def learning(m, criterion: float = tasks.CRITERION) -> Learning:
    """:class:`Learning` of a zoo task model (its ``history["val"]``), against ``criterion``."""
    if not 0 < criterion <= 1:
        raise ValueError(f"criterion must lie in (0, 1], got {criterion}")
    val = m.history["val"]
    steps = np.array([r["step"] for r in val])
    accuracy = np.array([r["accuracy"] for r in val])
    reached = np.flatnonzero(accuracy >= criterion)
    learnt_at = int(steps[reached[0]]) if reached.size else None
    speed = [r["tokens_per_s"] for r in m.history.get("train", [])]
    tokens_per_s = float(np.mean(speed)) if speed else float("nan")
    return Learning(steps, accuracy, float(criterion), learnt_at, float(m.seconds), tokens_per_s)


def learnt_share(runs: Sequence[Learning], confidence: float = 0.95) -> tuple[float, float, float]:
    """``(share, low, high)``: the share of an arm's seeds that learnt, with its Wilson interval
    (:func:`ropebook.stats.proportion.share_interval`)."""
    from ropebook.stats import proportion

    return proportion.share_interval(sum(r.learnt for r in runs), len(runs), confidence)


def learns_where_other_fails(
    learns: Sequence[bool], fails: Sequence[bool], alpha: float = 0.05
) -> str:
    """ "One arm learns (every seed), the other does not (no seed)", each seed a replicate:
    ``not held`` on a counterexample (a seed of ``learns`` that did not learn, or one of
    ``fails`` that did); ``held`` where none is *and* the seeds separate the two shares
    (Fisher's exact test, one-sided p < ``alpha``: three seeds of each cannot, p = 0.05); else
    ``cannot decide`` (the pattern, on too few seeds to tell it from chance). Without seeds on
    a side, :func:`ropebook.claims.too_few_runs`."""
    from scipy import stats

    from ropebook.claims import too_few_runs

    if not (learns and fails):
        return too_few_runs(min(len(learns), len(fails)))
    if not all(learns) or any(fails):
        return "not held"
    table = [[len(learns), 0], [0, len(fails)]]  # learnt / not, per arm
    p = stats.fisher_exact(table, alternative="greater").pvalue
    return "held" if p < alpha else "cannot decide"


def seeds_to_separate(n_learns: int, alpha: float = 0.05, limit: int = 1000) -> int | None:
    """The fewest seeds of the failing arm that, none learning beside ``n_learns`` that all did,
    bring :func:`learns_where_other_fails`'s Fisher p, ``1 / C(n_learns + m, m)``, below
    ``alpha``; ``None`` past ``limit`` (or with no seed that learnt)."""
    import math

    if n_learns < 1:
        return None
    return next((m for m in range(1, limit + 1) if math.comb(n_learns + m, m) * alpha > 1), None)


# ---------------------------------------------------------------- scoring answers


def score(params, config, batch: tasks.Batch, intervention=None, chunk: int = 8) -> np.ndarray:
    """Whether each answer of ``batch`` is right: ``[B, T]`` bool (False where no answer)."""
    right = np.zeros(batch.tokens.shape, bool)
    for start in range(0, len(batch.tokens), chunk):
        part = slice(start, start + chunk)
        tokens, targets = batch.tokens[part], batch.targets[part]
        n = len(tokens)
        if n < chunk:  # pad to a full chunk: one compiled program per length, not per size
            tokens, targets = (
                np.concatenate([a, np.repeat(a[-1:], chunk - n, 0)]) for a in (tokens, targets)
            )
        _, correct = evaluation.task_outputs(params, config, tokens, targets, intervention)
        right[part] = correct[:n] & batch.mask[part]
    return right


def bin_edges(context: int, max_factor: int) -> np.ndarray:
    """``[0, L/8, L/4, L/2, L, 2L, …, max_factor·L]``: bins of distance or position in tokens."""
    top = int(np.log2(max_factor))
    return np.array([0, *(context * 2.0 ** np.arange(-3, top + 1))], np.int64)


def binned(values: np.ndarray, right: np.ndarray, mask: np.ndarray, edges) -> np.ndarray:
    """Accuracy of the answers (``mask``) in each bin ``[edges[i], edges[i+1])`` of ``values``;
    NaN for an empty bin."""
    which = np.digitize(values[mask], edges) - 1
    inside = (which >= 0) & (which < len(edges) - 1)  # answers outside every bin are left out
    which, hits_of = which[inside], right[mask][inside]
    hits = np.bincount(which, hits_of, minlength=len(edges) - 1)
    count = np.bincount(which, minlength=len(edges) - 1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(count > 0, hits / np.maximum(count, 1), np.nan)


def task_batch(task, length: int, n_sequences: int, seed: int = 0) -> tasks.Batch:
    """The test batch every model sees at ``length``: a function of ``(seed, length)`` only."""
    return task.batch(np.random.default_rng([seed, 2**30, length]), n_sequences, length)


def score_runs(
    runs: Sequence, batch: tasks.Batch, intervention: Callable | None = None
) -> np.ndarray:
    """``[seeds, B, T]`` whether each model (one per seed) answers each answer of ``batch``
    right; ``intervention(config)`` gives a model's :class:`~ropebook.model.Intervention`."""
    return np.stack(
        [
            score(m.params, m.config, batch, intervention(m.config) if intervention else None)
            for m in runs
        ]
    )


def binned_accuracy(right: np.ndarray, batch: tasks.Batch, edges, *, by: str) -> np.ndarray:
    """``[seeds, bins]`` accuracy of :func:`score_runs` output, binned by each answer's
    ``distance`` (recall: key to query) or ``position`` (k-back)."""
    if by not in ("distance", "position"):
        raise ValueError(f"bin answers by 'distance' or 'position', not {by!r}")
    if by == "distance":
        values = batch.distance
    else:
        values = np.broadcast_to(np.arange(batch.tokens.shape[1]), batch.mask.shape)
    return np.array([binned(values, r, batch.mask, edges) for r in right])


def accuracy(
    runs: Sequence, batch: tasks.Batch, intervention: Callable | None = None
) -> np.ndarray:
    """``[seeds]`` share of right answers on ``batch``."""
    return np.array(
        [
            score(m.params, m.config, batch, intervention(m.config) if intervention else None)[
                batch.mask
            ].mean()
            for m in runs
        ]
    )


def passkey_grid(
    runs: Sequence,
    task: tasks.Recall,
    lengths: Sequence[int],
    depths: Sequence[float],
    *,
    n_sequences: int,
    seed: int = 0,
    intervention: Callable | None = None,
) -> np.ndarray:
    """``[seeds, lengths, depths]`` passkey accuracy; ``intervention(config, length)`` gives
    each model's intervention at a length (``None``: as trained)."""
    out = np.zeros((len(runs), len(lengths), len(depths)))
    for j, length in enumerate(lengths):
        for k, depth in enumerate(depths):
            rng = np.random.default_rng([seed, 2**29, length, k])
            batch = task.passkey(rng, n_sequences, length, depth)
            out[:, j, k] = accuracy(
                runs, batch, (lambda c, n=length: intervention(c, n)) if intervention else None
            )
    return out


# ---------------------------------------------------------------- paired comparisons


@dataclass(frozen=True)
class Paired:
    """``a − b`` over the seeds, learnt or not: mean, interval, and the smallest true difference
    the seeds would detect (80 % power, 95 %); ``n`` seeds (fewer than 2: no interval)."""

    estimate: Estimate
    mde: float
    n: int
    sd: float = float("nan")  # of the paired differences (nan with fewer than 2 seeds)

    def verdict(
        self, *, above: bool = True, threshold: float = 0.0, margin: float | None = None
    ) -> str:
        """``held`` if the interval lies on the claimed side of ``threshold``, ``not held`` if
        on the other, ``bounded`` if it lies within ``threshold ± margin``, else ``cannot
        decide`` (and always with fewer than 2 seeds)."""
        from ropebook.claims import verdict_from_interval

        if self.n < 2:
            return "cannot decide"
        return verdict_from_interval(
            *self.estimate.bounds, threshold=threshold, above=above, margin=margin
        )

    def equivalence(self, margin: float) -> str:
        """A claim of *no* difference: ``held`` if the interval lies inside ``(−margin,
        margin)``, ``not held`` if wholly outside it, else ``cannot decide``."""
        low, high = self.estimate.bounds
        if self.n < 2:
            return "cannot decide"
        if -margin < low and high < margin:
            return "held"
        return "not held" if low > margin or high < -margin else "cannot decide"

    def text(self, scale: float = 100.0, unit: str = " points") -> str:
        e = self.estimate
        if self.n == 0:
            return "no seed scored"
        if self.n < 2:
            return f"{scale * e.mean:+.1f}{unit} ({self.n} seed, no interval)"
        return (
            f"{scale * e.mean:+.1f}{unit} [{scale * e.low:+.1f}, {scale * e.high:+.1f}] over "
            f"{self.n} seeds (detectable: {scale * self.mde:.1f})"
        )


def paired(a, b) -> Paired:
    """Paired difference of two ``[seeds]`` arrays (NaN pairs, where a seed has no score,
    dropped; a seed that did not learn has one)."""
    from ropebook.stats import power

    d = np.asarray(a, np.float64) - np.asarray(b, np.float64)
    d = d[np.isfinite(d)]
    estimate = interval_text(d, 3, "seeds")
    sd = float(np.std(d, ddof=1)) if d.size > 1 else np.nan
    mde = power.min_detectable_effect(sd, d.size) if d.size > 1 else np.nan
    return Paired(estimate, float(mde), int(d.size), sd)


# The predicted contrasts of the chapter (Sec. 6.1 and the θ = 10⁴ null): 0.75-RoPE − RoPE where
# the slow planes turn, the same where they do not, and the difference of the two.
CONTRAST_MODELS = ("p-rope-0.75", "rope", "p-rope-0.75-10k", "rope-10k")


def contrasts(beyond: Mapping[str, np.ndarray]) -> dict[str, Paired]:
    """``{"matched", "1e4", "gap_of_gaps"}`` paired gaps from each model's ``[seeds]`` accuracy
    beyond the training context (:attr:`Sweep.beyond` at one length)."""
    p, r, p10k, r10k = (np.asarray(beyond[n]) for n in CONTRAST_MODELS)
    return {
        "matched": paired(p, r), "1e4": paired(p10k, r10k),
        "gap_of_gaps": paired(p - r, p10k - r10k),
    }  # fmt: skip


def seeds_for_gaps(
    gaps: Iterable[Paired], *, large: float, floor: float, n_now: int, max_seeds: int
) -> int:
    """Seeds per model that the gaps call for: a gap under ``large`` (accuracy share) with a
    measured s.d. gets the seeds that detect ``max(|gap|, floor)`` with 80 % power (95 %), never
    fewer than ``n_now`` nor more than ``max_seeds``; large gaps keep ``n_now``."""
    from ropebook.stats import power

    wanted = [
        power.seeds_needed(g.sd, max(abs(g.estimate.mean), floor))
        for g in gaps
        if g.n >= 2 and g.sd > 0 and abs(g.estimate.mean) < large
    ]
    return int(np.clip(max(wanted, default=n_now), n_now, max(n_now, max_seeds)))


# ---------------------------------------------------------------- plane probes


def probe_masks(config, rng: np.random.Generator, n_random: int = 4) -> dict[str, list[np.ndarray]]:
    """``condition -> keep masks [D/2]``: the fastest, slowest and ``n_random`` random quarters
    of the planes (:mod:`ropebook.analysis.probes`) and ``plane k`` for each single plane."""
    from ropebook.analysis import frequencies, probes

    g = frequencies.zoo_frequencies(config)
    masks = {c: [k] for c, k in probes.removal_masks(g).items()}
    masks["random"] = probes.random_masks(
        g.size, frequencies.band_size(g.size, 0.25), rng, n_random
    )
    for k in range(g.size):
        keep = np.ones(g.size, np.float32)
        keep[k] = 0.0
        masks[f"plane {k}"] = [keep]
    return masks


def plane_probes(
    runs: Sequence, batch: tasks.Batch, *, seed: int = 0, ablation: str = "zeroed",
    reference: tasks.Batch | None = None,
) -> dict[str, np.ndarray]:  # fmt: skip
    """``condition -> [seeds]`` accuracy change (removed − intact) on ``batch``; ``"intact"``
    holds the intact accuracy. Random quarters average their draws (``Generator([seed, s])``).
    Planes are removed by ``ablation`` (:func:`ropebook.analysis.probes.removal`; mean-ablation
    takes its means over the ``reference`` batch's sequences)."""
    from ropebook.analysis import probes

    out: dict[str, list[float]] = {}
    for m in runs:
        remove = probes.removal(
            m.params, m.config, ablation, None if reference is None else reference.tokens
        )
        intact = float(score(m.params, m.config, batch)[batch.mask].mean())
        out.setdefault("intact", []).append(intact)
        for condition, keeps in probe_masks(
            m.config, np.random.default_rng([seed, m.seed])
        ).items():
            accs = [
                score(m.params, m.config, batch, remove(keep))[batch.mask].mean() for keep in keeps
            ]
            out.setdefault(condition, []).append(float(np.mean(accs)) - intact)
    return {c: np.array(v) for c, v in out.items()}


# The two probe claims: (task, the quarter removed, the quarter it is set against, the claim's
# part in :data:`ropebook.analysis.probes.DECIDING`). k-back is position, recall content.
PROBE_CLAIMS = {
    "position": ("kback", "fastest", "slowest", "positional"),
    "content": ("recall", "slowest", "fastest", "semantic"),
}


def probe_contrast(probes: Mapping, claim: str, name: str = "rope") -> Paired:
    """``Δ accuracy (removed) − Δ accuracy (against)`` of ``name``'s seeds on the claim's task
    (:data:`PROBE_CLAIMS`), from :func:`plane_probes` results keyed ``(task, name)``; the claim
    says it is below 0. No seeds (none probed): ``n = 0``."""
    task, removed, against, _ = PROBE_CLAIMS[claim]
    p = probes.get((task, name), {})
    empty = np.array([])
    return paired(p.get(removed, empty), p.get(against, empty))


def probe_verdicts(by_ablation: Mapping[str, Mapping], claim: str) -> tuple[str, dict]:
    """A probe claim's verdict, on the ablation :data:`ropebook.analysis.probes.DECIDING` names
    for its part (k-back's positional part on zeroing, recall's content part on mean-ablation),
    and each ablation's :class:`Paired` (``by_ablation``: ablation → :func:`plane_probes`
    results)."""
    from ropebook.analysis.probes import DECIDING

    contrasts = {a: probe_contrast(p, claim) for a, p in by_ablation.items()}
    decides = DECIDING[PROBE_CLAIMS[claim][3]]
    return contrasts[decides].verdict(above=False), contrasts


# ---------------------------------------------------------------- context extension


def finetune(
    parent, task, method: str, scale: int, *, steps: int, batch_size: int, lr: float,
    progress: bool = True,
):  # fmt: skip
    """Fine-tune zoo task model ``parent`` for ``steps`` steps on ``task`` at ``scale ×`` its
    context with ``method`` (:mod:`ropebook.scaling`) at scale ``s`` in every step: the
    context-extension chapter's cached, locked fine-tune
    (:func:`ropebook.analysis.scaling.finetune`) on task batches drawn with the parent's seed."""
    from ropebook.analysis import scaling as stretch

    return stretch.finetune(
        parent, method, scale, steps=steps, batch_size=batch_size, lr=lr,
        warmup=min(5, steps - 1), task=task, progress=progress,
    )  # fmt: skip


def extension(method: str, scale: int | None = None) -> Callable:
    """``(config, length) -> Intervention`` for ``method`` at scale ``s = length / context``
    (or a fixed ``scale``); dynamic NTK takes factor 1 (or ``scale``) and reads the length, so
    its own scale is ``length / context`` too (:mod:`ropebook.analysis.scaling`)."""
    from ropebook import scaling
    from ropebook.analysis import scaling as stretch

    dynamic = scaling.method(method).dynamic

    def at(config, length: int):
        # dynamic NTK at factor 1 scales itself by length / context (transformers' "dynamic")
        s = scale or (1 if dynamic else max(length // config.context, 1))
        return stretch.intervention(config, method, s, length)

    return at


# ---------------------------------------------------------------- sweeps over test lengths


@dataclass(frozen=True)
class Sweep:
    """A task scored at several test lengths (``factors`` × the training context) for every seed
    of one encoding, learnt or not (``learnt`` says which reached the criterion at 1×).

    ``overall [seeds, factors]``: accuracy over every answer; ``bins [seeds, bins]``: accuracy
    by distance or position bin (``edges``) at the longest length; ``beyond [seeds, factors]``:
    accuracy over answers whose distance or position is at least the training context."""

    factors: tuple[int, ...]
    edges: np.ndarray
    overall: np.ndarray
    bins: np.ndarray
    beyond: np.ndarray
    learnt: tuple[bool, ...]


def length_sweep(
    runs: Sequence,
    task,
    factors: Sequence[int],
    *,
    by: str,
    n_sequences: int,
    seed: int = 0,
    intervention: Callable | None = None,
) -> Sweep:
    """:class:`Sweep` of ``runs`` (one zoo task model per seed) on ``task``; the test batches
    depend only on ``(seed, length)``, so every encoding sees the same sequences.
    ``intervention(config, length)`` gives a model's intervention at a length."""
    context = runs[0].config.context
    edges = bin_edges(context, max(factors))
    learnt = tuple(learning(m).learnt for m in runs)
    overall = np.full((len(runs), len(factors)), np.nan)
    beyond = np.full((len(runs), len(factors)), np.nan)
    bins = np.full((len(runs), len(edges) - 1), np.nan)
    for j, f in enumerate(factors):
        length = f * context
        batch = task_batch(task, length, n_sequences, seed)
        at = (lambda c, n=length: intervention(c, n)) if intervention else None
        right = score_runs(runs, batch, at)
        overall[:, j] = [r[batch.mask].mean() for r in right]
        beyond[:, j] = binned_accuracy(right, batch, [context, length + 1], by=by)[:, 0]
        if f == max(factors):
            bins[:] = binned_accuracy(right, batch, edges, by=by)
    return Sweep(tuple(factors), edges, overall, bins, beyond, learnt)


def merge(first: Sweep, more: Sweep) -> Sweep:
    """One :class:`Sweep` over the seeds of ``first`` then those of ``more`` (same task and
    lengths), for seeds added once the first ones were scored."""
    if first.factors != more.factors or not np.array_equal(first.edges, more.edges):
        raise ValueError("sweeps over different lengths or bins cannot be merged")
    return Sweep(
        first.factors, first.edges, np.concatenate([first.overall, more.overall]),
        np.concatenate([first.bins, more.bins]), np.concatenate([first.beyond, more.beyond]),
        first.learnt + more.learnt,
    )  # fmt: skip


def extension_sweep(
    runs: Sequence,
    method: str,
    factors: Sequence[int],
    depths: Sequence[float],
    *,
    n_passkey: int,
    n_sequences: int,
    scale: int | None = None,
    seed: int = 0,
) -> tuple[np.ndarray, np.ndarray]:
    """``(passkey, recall)``, each ``[seeds, factors]``: passkey accuracy (mean over ``depths``)
    and recall accuracy at each length, with ``method`` applied at ``s = length / context`` (or
    the fixed ``scale``; ``"none"``: as trained). Each length's sequences depend only on
    ``(seed, length)``, so a length scores the same whichever others are tested;
    ``n_sequences=0`` scores no recall (NaN), the passkey alone."""
    recall_task = tasks.get("recall")
    context = runs[0].config.context
    lengths = [f * context for f in factors]
    at = None if method == "none" else extension(method, scale)
    passkey = passkey_grid(
        runs, recall_task, lengths, depths, n_sequences=n_passkey, seed=seed, intervention=at
    ).mean(-1)
    overall = np.full((len(runs), len(factors)), np.nan)
    for j, length in enumerate(lengths if n_sequences > 0 else ()):
        batch = task_batch(recall_task, length, n_sequences, seed)
        overall[:, j] = accuracy(runs, batch, (lambda c, n=length: at(c, n)) if at else None)
    return passkey, overall


# ---------------------------------------------------------------- the fine-tune against its control

FINETUNE_METHODS = ("none", "pi", "yarn")  # "none": plain RoPE fine-tuned alike, the control
RULES = ("pi", "yarn")  # the rules each compared with the control


def finetuned_sweeps(
    runs: Sequence,
    factors: Sequence[int],
    depths: Sequence[float],
    *,
    scale: int,
    steps: int,
    lr_ratio: float,
    train_config,
    n_passkey: int,
    n_sequences: int,
    progress: bool = False,
) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """``{method: (passkey, recall)}`` (:func:`extension_sweep`, each ``[seeds, factors]``) for
    every method of :data:`FINETUNE_METHODS`, after :func:`finetune` of each of ``runs`` (RoPE
    trained on recall, one per seed) for ``steps`` steps at ``scale ×`` its context, on batches
    of ``train_config``'s size over ``scale`` (at least 2) at its learning rate times
    ``lr_ratio``, then tested at every length with the fixed ``s = scale``."""
    if not 0 < lr_ratio <= 1:
        raise ValueError(f"lr_ratio is in (0, 1], got {lr_ratio}")
    batch_size = max(train_config.batch_size // scale, 2)
    out = {}
    for method in FINETUNE_METHODS:
        tuned = [
            finetune(m, tasks.get("recall"), method, scale, steps=steps, batch_size=batch_size,
                     lr=train_config.lr * lr_ratio, progress=progress)
            for m in runs
        ]  # fmt: skip
        out[method] = extension_sweep(
            tuned, method, factors, depths, scale=scale, n_passkey=n_passkey,
            n_sequences=n_sequences,
        )  # fmt: skip
    return out


def finetune_wins(passkey: Mapping[str, Sequence[float]]) -> dict[str, Paired]:
    """Each rule's passkey accuracy after the fine-tune minus the control's (plain RoPE
    fine-tuned on the same steps), paired by seed, from ``{method: [seeds] passkey at the
    fine-tune scale}``."""
    if missing := [m for m in FINETUNE_METHODS if m not in passkey]:
        raise ValueError(f"no passkey of {missing}")
    return {m: paired(passkey[m], passkey["none"]) for m in RULES}


def finetune_verdict(wins: Mapping[str, Paired]) -> str:
    """``held`` where every rule's gain over the control lies above 0, and so on
    (:func:`ropebook.claims.combine` of each one-sided verdict)."""
    from ropebook import claims

    return claims.combine([w.verdict(above=True) for w in wins.values()])
