"""Mechanisms over training: each chapter's statistic along a model's snapshots, and its trend.

A flagship zoo model keeps its params at step 0 (untrained) and at ~8 log-spaced steps
(:meth:`ropebook.zoo.TrainedModel.snapshot`); a model without snapshots gives two points, the
untrained model rebuilt from its seed and the trained one (:func:`snapshots`). For one model
name and every seed, :func:`over_training` runs a *measure* on each snapshot and returns one
:class:`Trajectory` per statistic: ``values [seeds, snapshots]`` against ``tokens`` seen.

The measures reuse each chapter's own functions, nothing is re-derived here:

- :func:`norm_share_measure` — share of the query and key chunk norm per RoPE pair in the slowest
  quarter (``analysis.frequencies``) against the isotropic ``1 / pairs`` (Sec. 4, Fig. 3);
- :func:`decay_measure` — the least-decaying layer's short-minus-long mean activation, relative
  to its mean absolute activation (``analysis.decay``; Sec. 3);
- :func:`positional_measure` — the strongest head's mean attention on the previous token and on
  itself (``analysis.heads`` graded detector; Sec. 5), and the strongest head's induction
  (prefix-matching) score on repeated random tokens (:func:`induction_score`; Olsson et al. 2022);
- :func:`apostrophe_measure` — the apostrophe lift of the head picked on selection windows,
  measured on other windows (``analysis.semantic``; Sec. 6, Figs 7, 12).

:func:`trend_test` reads a trajectory: the paired change from the untrained model to the last
snapshot, with a t-interval over seeds, says whether the statistic **moves toward the Gemma
result**, **away** from it, or whether the run **cannot decide** (the interval contains 0, or
there is one seed: nothing to pair over). That alone is what training does to any transformer;
the claims are decided by :func:`controlled_trend`, the same test on RoPE's change minus NoPE's
(the same model without rotation, same seed), so that only what RoPE adds counts. Spearman's rank correlation with tokens seen per seed
says whether the change is monotone (95% intervals; detectable change at 80% power). A claim
that training *grows* a head asks more than a direction: :func:`level_verdict` also needs the
last snapshot's interval past a level (an induction head's share of attention on its target).
The tables and charts of these trajectories are in :mod:`ropebook.present.dynamics`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from ropebook.analysis import Estimate, interval_text

TOWARD, AWAY, UNDECIDED = (
    "moves toward the Gemma result",
    "moves away from the Gemma result",
    "cannot decide",
)
TREND_VERDICTS: tuple[str, ...] = (TOWARD, AWAY, UNDECIDED)
CLAIM_VERDICT = {TOWARD: "held", AWAY: "not held", UNDECIDED: "cannot decide"}
Measure = Callable[..., dict]  # (params, config) -> {statistic: float, or array if descriptive}


# ---------------------------------------------------------------- snapshots and trajectories


@dataclass(frozen=True)
class Snapshot:
    """One kept step of a run; ``params`` are read (sha256-checked) only when asked for."""

    step: int
    tokens: int
    load: Callable[[], object]

    @property
    def params(self):
        return self.load()


def snapshots(trained) -> list[Snapshot]:
    """The snapshots of a zoo model in step order, step 0 (untrained) first; each loads its
    params when :attr:`Snapshot.params` is read, so a run's snapshots are never all in memory.

    Without kept snapshots (lesson and matched regimes): the untrained model rebuilt from the
    training seed (``model.init_params(key(seed))``, as :mod:`ropebook.train` starts) and the
    trained one."""
    steps = trained.snapshot_steps
    if steps:
        tokens = {e["step"]: int(e["tokens_seen"]) for e in trained.history["snapshots"]}
        return [Snapshot(s, tokens[s], lambda s=s: trained.snapshot(s)[0]) for s in steps]

    def untrained():
        import jax

        from ropebook import model

        return model.init_params(jax.random.key(trained.seed), trained.config)

    final_step = int(trained.history["train"][-1]["step"]) if trained.history.get("train") else 1
    return [
        Snapshot(0, 0, untrained),
        Snapshot(final_step, int(trained.tokens_seen), lambda: trained.params),
    ]


@dataclass(frozen=True)
class Trajectory:
    """One statistic of one model along training: ``values [seeds, S]`` at ``tokens [S]``.

    ``toward`` is +1 if the paper's Gemma result lies at larger values, -1 at smaller ones, 0
    for a descriptive statistic with no stated direction (then ``values`` may be
    ``[seeds, S, ...]``, e.g. a profile over pairs, and has no trend test); ``reference`` an
    optional fixed baseline drawn on the chart (e.g. the isotropic share)."""

    statistic: str
    model: str
    seeds: tuple[int, ...]
    steps: np.ndarray
    tokens: np.ndarray
    values: np.ndarray
    toward: int
    reference: float | None = None

    def __post_init__(self) -> None:
        if self.toward not in (1, -1, 0):
            raise ValueError(f"toward must be +1, -1 or 0, got {self.toward}")
        values = np.asarray(self.values, np.float64)
        expected = (len(self.seeds), len(self.tokens))
        if values.shape[:2] != expected or (self.toward and values.ndim != 2):
            raise ValueError(
                f"values must be [seeds={len(self.seeds)}, snapshots={len(self.tokens)}], "
                f"got {values.shape}"
            )

    @property
    def untrained(self) -> np.ndarray:
        """``[seeds]`` values of the untrained model (step 0), the baseline."""
        return np.asarray(self.values)[:, 0]

    @property
    def final(self) -> np.ndarray:
        return np.asarray(self.values)[:, -1]


def over_training(
    models: Sequence,
    measure: Measure,
    *,
    toward: dict[str, int],
    reference: dict[str, float] | None = None,
) -> dict[str, Trajectory]:
    """Run ``measure(params, config) -> {statistic: value}`` on every snapshot of ``models``
    (one zoo model per seed, same name and config); one :class:`Trajectory` per statistic of
    ``toward`` (its direction), and a descriptive one (``toward = 0``) for every other statistic
    the measure returns (arrays allowed)."""
    if not models:
        raise ValueError("over_training needs at least one model")
    name, config = models[0].name, models[0].config
    rows, steps, tokens = [], None, None
    for m in models:
        if m.name != name or m.config != config:
            raise ValueError("over_training: every model must be the same zoo spec (one per seed)")
        snaps = snapshots(m)
        these = np.array([s.step for s in snaps])
        if steps is not None and not np.array_equal(these, steps):
            raise ValueError(f"seeds kept different snapshot steps: {steps} vs {these}")
        steps, tokens = these, np.array([s.tokens for s in snaps])
        rows.append([measure(s.params, config) for s in snaps])
    reference = reference or {}
    return {
        stat: Trajectory(
            statistic=stat,
            model=name,
            seeds=tuple(m.seed for m in models),
            steps=steps,
            tokens=tokens,
            values=np.array([[r[stat] for r in seed] for seed in rows]),
            toward=sign,
            reference=reference.get(stat),
        )  # fmt: skip
        for stat, sign in {**dict.fromkeys(rows[0][0], 0), **toward}.items()
    }


def load_models(
    names: Sequence[str],
    *,
    profile: str,
    regime: str = "flagship",
    domain: str = "shakespeare",
    seeds: Sequence[int] | None = None,
) -> dict[str, list]:
    """``name -> [zoo model per seed]``: ``seeds``, or by default those the zoo trains in
    ``regime`` (``zoo.seeds_for``; the first profile seed if it lists none). A seed the cache
    lacks is trained now (and cached)."""
    from ropebook import zoo

    out = {}
    for name in names:
        chosen = seeds or zoo.seeds_for(name, profile=profile, domain=domain, regime=regime)
        out[name] = [
            zoo.load(name, seed=s, profile=profile, domain=domain, regime=regime, progress=False)
            for s in chosen or zoo.PROFILES[profile].seeds[:1]
        ]
    return out


def trajectories(runs: dict[str, dict[str, Trajectory]], statistic: str) -> list[Trajectory]:
    """The trajectories of one statistic across models, from ``{name: over_training(...)}``."""
    return [run[statistic] for run in runs.values() if statistic in run]


# ---------------------------------------------------------------- the statistics


def pair_share(profile, fraction: float = 0.25) -> float:
    """Mean share of the summed chunk norm held by one pair of the slowest ``fraction`` of pairs
    (``profile [..., K]`` fastest first, averaged over leading axes first). Isotropic: ``1/K``."""
    from ropebook.analysis import frequencies as fq

    profile = np.asarray(profile, np.float64).reshape(-1, np.shape(profile)[-1]).mean(0)
    return float(fq.band_share(profile, fraction, "low")) / fq.band_size(profile.size, fraction)


def relative_shares(profile) -> np.ndarray:
    """Each pair's share of the summed chunk norm times the number of pairs (1 = isotropic):
    ``[..., K] -> [K]``, leading axes averaged first."""
    profile = np.asarray(profile, np.float64).reshape(-1, np.shape(profile)[-1]).mean(0)
    return profile / profile.sum() * profile.size


def norm_share_measure(texts, fraction: float = 0.25) -> Measure:
    """``{"queries", "keys"}``: :func:`pair_share` of each, from ``frequencies.measure``; and
    ``{"queries per pair", "keys per pair"}``: :func:`relative_shares` (descriptive)."""
    from ropebook.analysis import frequencies as fq

    def measure(params, config) -> dict:
        usage = fq.measure(
            fq.zoo_runner(params, config), texts, frequencies=fq.zoo_frequencies(config),
            pairing=config.pairing,
        )  # fmt: skip
        out = {}
        for k in ("q", "k"):
            out[fq.KIND_NAMES[k]] = pair_share(usage.heads(k), fraction)
            out[f"{fq.KIND_NAMES[k]} per pair"] = relative_shares(usage.heads(k))
        return out

    return measure


def decay_contrast(curves, short: int) -> np.ndarray:
    """Per layer, ``(mean activation at r = 1..short − mean over the last quarter) / mean |a|``
    of ``curves [layers, windows, T]`` (``decay.trained_activation_curves``), windows averaged
    first (``decay.relative_contrast``): > 0 decays."""
    from ropebook.analysis import decay

    return decay.relative_contrast(np.asarray(curves, np.float64).mean(1), short)


def decay_measure(windows, short: int) -> Measure:
    """``{"least-decaying layer": min over layers of decay_contrast}``."""
    from ropebook.analysis import decay

    def measure(params, config) -> dict[str, float]:
        curves = decay.trained_activation_curves(params, config, windows)
        return {"least-decaying layer": float(decay_contrast(curves, short).min())}

    return measure


def repeated_random_tokens(
    rng: np.random.Generator, batch: int, period: int, vocab: int, *, bos: int | None = 0
) -> np.ndarray:
    """``[batch, (1) + 2·period]`` int32: (BOS,) then ``period`` random tokens twice. Tokens are
    drawn without replacement inside a period (so every token's earlier occurrence is unique)
    from ``1 .. vocab-1`` (never BOS)."""
    if period > vocab - 1:
        raise ValueError(f"period {period} needs more than {vocab - 1} distinct tokens")
    half = np.stack([rng.choice(np.arange(1, vocab), period, replace=False) for _ in range(batch)])
    body = np.concatenate([half, half], axis=1)
    if bos is not None:
        body = np.concatenate([np.full((batch, 1), bos), body], axis=1)
    return body.astype(np.int32)


def induction_targets(period: int, start: int = 1) -> tuple[np.ndarray, np.ndarray]:
    """``(queries, keys)``: every query in the second copy whose token's earlier occurrence has a
    successor, and that successor (the key an induction head attends to). With the first copy at
    positions ``start .. start+period-1``: query ``start+period+i`` → key ``start+i+1``."""
    i = np.arange(period - 1)
    return start + period + i, start + i + 1


def induction_score(attention, period: int, start: int = 1) -> np.ndarray:
    """Mean attention from the second copy to the token after the earlier occurrence (Olsson et
    al. 2022's prefix-matching score): ``[..., T, T] -> [...]``. A perfect induction head scores
    1; uniform causal attention scores the mean of ``1/(q+1)`` over the queries (~1/n)."""
    a = np.asarray(attention, np.float64)
    queries, keys = induction_targets(period, start)
    if queries[-1] >= a.shape[-1]:
        raise ValueError(f"attention of {a.shape[-1]} tokens is shorter than 2 x {period} (+start)")
    return a[..., queries, keys].mean(-1)


def uniform_induction_score(period: int, start: int = 1) -> float:
    """:func:`induction_score` of uniform causal attention (query ``q`` spreads ``1/(q+1)`` over
    keys ``0..q``): the floor a head scores without any induction."""
    queries, _ = induction_targets(period, start)
    return float(np.mean(1.0 / (queries + 1)))


def induction_scores(params, config, sequences, period: int, start: int = 1) -> np.ndarray:
    """:func:`induction_score` of every head of a book model on ``sequences``: ``[L, H]``."""
    from ropebook import model

    _, layers = model.forward(params, np.asarray(sequences), config, return_internals=True)
    return np.stack(
        [induction_score(np.asarray(x["probs"]), period, start).mean(0) for x in layers]
    )


def positional_measure(windows, sequences, period: int) -> Measure:
    """``{"previous-token", "diagonal"}``: the strongest head's mean attention on its target
    (``heads.scan_model``, rows 1..T-1 of ``windows``); ``"induction"``: the strongest head's
    :func:`induction_score` on ``sequences`` (from :func:`repeated_random_tokens`)."""
    from ropebook.analysis import heads

    def measure(params, config) -> dict[str, float]:
        scan = heads.scan_model(params, config, windows)
        return {
            "previous-token": float(scan.score["previous"].max()),
            "diagonal": float(scan.score["diagonal"].max()),
            "induction": float(induction_scores(params, config, sequences, period).max()),
        }

    return measure


def apostrophe_measure(select_windows, measure_windows, class_ids) -> Measure:
    """``{"apostrophe lift"}``: the lift on ``measure_windows`` of the head with the largest lift
    on ``select_windows`` (``semantic.scan_semantic``), so the choice does not inflate it."""
    from ropebook.analysis import semantic

    def measure(params, config) -> dict[str, float]:
        selected = semantic.previous_lift(params, config, select_windows, class_ids)
        chosen = np.unravel_index(np.nanargmax(selected), selected.shape)
        lift = semantic.previous_lift(params, config, measure_windows, class_ids)
        return {"apostrophe lift": float(lift[chosen])}

    return measure


# ---------------------------------------------------------------- the trend test


@dataclass(frozen=True)
class Trend:
    """The verdict on one trajectory: does training move the statistic toward Gemma's result?"""

    statistic: str
    model: str
    n_seeds: int
    untrained: float  # mean over seeds at step 0
    final: float  # mean over seeds at the last snapshot
    change: Estimate  # final − untrained, paired per seed, interval over seeds
    spearman: np.ndarray  # [seeds] rank correlation of the statistic with tokens seen
    toward: int
    verdict: str  # one of TREND_VERDICTS
    mde: float | None  # minimum detectable change at this seed count (None with one seed)
    changes: tuple[float, ...] = ()  # per seed: last snapshot − untrained
    finals: tuple[float, ...] = ()  # per seed: the last snapshot's value

    @property
    def claim_verdict(self) -> str:
        """The verdict as a claim verdict: held / not held / cannot decide."""
        return CLAIM_VERDICT[self.verdict]

    def measured(self, digits: int = 3) -> str:
        rho = ", ".join(f"{r:+.2f}" for r in self.spearman)
        return (
            f"{self.model} {self.statistic}: untrained {self.untrained:.{digits}f} → last snapshot "
            f"{self.final:.{digits}f} (change {self.change.mean:+.{digits}f}); Spearman with tokens "
            f"seen per seed [{rho}]; the Gemma result lies at "
            f"{'larger' if self.toward > 0 else 'smaller'} values"
        )

    def basis(self) -> str:
        if self.mde is None:
            return f"{self.n_seeds} seed: no interval over seeds, so no trend verdict"
        return (
            f"{self.n_seeds} seeds, paired untrained vs last snapshot; minimum detectable change "
            f"{self.mde:.3g} (80% power)"
        )


def trend_test(trajectory: Trajectory) -> Trend:
    """Paired change from the untrained model to the last snapshot over seeds.

    With >= 2 seeds, the t-interval of the change (times ``toward``) wholly above 0 → "moves
    toward the Gemma result", wholly below → "moves away", containing 0 → "cannot decide"; one
    seed → "cannot decide" (a single run's change says nothing about training in general).
    """
    from scipy import stats

    if not trajectory.toward:
        raise ValueError(f"{trajectory.statistic!r} is descriptive (toward = 0): no trend test")
    values = np.asarray(trajectory.values, np.float64)
    change = values[:, -1] - values[:, 0]
    estimate = interval_text(change, digits=3, unit="seeds")
    n = len(change)
    with np.errstate(invalid="ignore"):
        rho = np.array(
            [
                stats.spearmanr(trajectory.tokens, v).statistic if np.ptp(v) > 0 else 0.0
                for v in values
            ]
        )
    verdict, mde = _direction(change, estimate, trajectory.toward)
    return Trend(
        statistic=trajectory.statistic, model=trajectory.model, n_seeds=n,
        untrained=float(values[:, 0].mean()), final=float(values[:, -1].mean()), change=estimate,
        spearman=rho, toward=trajectory.toward, verdict=verdict, mde=mde,
        changes=tuple(float(c) for c in change), finals=tuple(float(v) for v in values[:, -1]),
    )  # fmt: skip


def _direction(samples: np.ndarray, estimate: Estimate, toward: int) -> tuple[str, float | None]:
    """``(trend verdict, minimum detectable effect)`` of per-seed ``samples`` whose interval
    over seeds is ``estimate``: toward ``toward``'s side of 0, away, or undecided (one seed
    always)."""
    from ropebook.stats import power

    if len(samples) < 2:
        return UNDECIDED, None
    low, high = sorted((toward * estimate.low, toward * estimate.high))
    verdict = TOWARD if low > 0 else AWAY if high < 0 else UNDECIDED
    return verdict, power.min_detectable_effect(float(np.std(samples, ddof=1)), len(samples))


@dataclass(frozen=True)
class ControlledTrend:
    """A model's change over training against its control's (NoPE: the same transformer
    without rotation), paired seed by seed: ``changes`` are, per seed, (model's last snapshot −
    its untrained value) − (the control's, same seed). What training does to RoPE *beyond* what
    it does to the same model without rotation, toward the Gemma result or away from it."""

    statistic: str
    model: str
    control: str
    seeds: tuple[int, ...]
    difference: Estimate  # interval over seeds of the paired difference of changes
    toward: int
    verdict: str  # one of TREND_VERDICTS
    mde: float | None  # minimum detectable difference at this seed count (None with one seed)
    changes: tuple[float, ...]  # per seed: model change − control change
    model_changes: tuple[float, ...]
    control_changes: tuple[float, ...]

    @property
    def n_seeds(self) -> int:
        return len(self.seeds)

    @property
    def claim_verdict(self) -> str:
        """The verdict as a claim verdict: held / not held / cannot decide."""
        return CLAIM_VERDICT[self.verdict]

    def measured(self, digits: int = 3) -> str:
        model, control = np.mean(self.model_changes), np.mean(self.control_changes)
        return (
            f"{self.statistic}, change over training of {self.model} minus {self.control}, "
            f"paired by seed: {self.difference.mean:+.{digits}f} ({self.model} "
            f"{model:+.{digits}f}, {self.control} {control:+.{digits}f}); the Gemma result lies "
            f"at {'larger' if self.toward > 0 else 'smaller'} values"
        )

    def basis(self) -> str:
        pair = f"{self.model} and {self.control} of the same seed"
        if self.mde is None:
            return f"1 seed ({pair}): no interval over seeds, so no verdict"
        return (
            f"{self.n_seeds} paired seeds ({pair}), change from the untrained model to the last "
            f"snapshot; minimum detectable difference {self.mde:.3g} (80% power)"
        )


def controlled_trend(trajectory: Trajectory, control: Trajectory) -> ControlledTrend:
    """:class:`ControlledTrend` of ``trajectory`` (e.g. RoPE's) against ``control`` (NoPE's, the
    same statistic), over the seeds both have: the t-interval of (model change − control
    change) times ``toward`` wholly above 0 → toward the Gemma result, wholly below → away,
    containing 0 or one seed → cannot decide."""
    if trajectory.statistic != control.statistic or trajectory.toward != control.toward:
        raise ValueError(
            f"control {control.statistic!r} (toward {control.toward}) does not match "
            f"{trajectory.statistic!r} (toward {trajectory.toward})"
        )
    if not trajectory.toward:
        raise ValueError(f"{trajectory.statistic!r} is descriptive (toward = 0): no trend test")
    seeds = tuple(s for s in trajectory.seeds if s in control.seeds)
    if not seeds:
        raise ValueError(f"{trajectory.model} and {control.model} share no seed to pair")

    def change(tr: Trajectory, seed: int) -> float:
        row = np.asarray(tr.values, np.float64)[tr.seeds.index(seed)]
        return float(row[-1] - row[0])

    model = np.array([change(trajectory, s) for s in seeds])
    base = np.array([change(control, s) for s in seeds])
    differences = model - base
    estimate = interval_text(differences, digits=3, unit="seeds")
    verdict, mde = _direction(differences, estimate, trajectory.toward)
    return ControlledTrend(
        statistic=trajectory.statistic, model=trajectory.model, control=control.model,
        seeds=seeds, difference=estimate, toward=trajectory.toward, verdict=verdict, mde=mde,
        changes=tuple(float(d) for d in differences),
        model_changes=tuple(float(c) for c in model), control_changes=tuple(float(c) for c in base),
    )  # fmt: skip


def controlled_trends(
    runs: dict[str, dict[str, Trajectory]], statistics: Sequence[str], *, model: str = "rope",
    control: str = "nope",
) -> dict[str, ControlledTrend]:  # fmt: skip
    """``statistic -> controlled_trend(runs[model][statistic], runs[control][statistic])``
    from ``{name: over_training(...)}``; empty if ``runs`` has no ``control``."""
    if control not in runs:
        return {}
    return {s: controlled_trend(runs[model][s], runs[control][s]) for s in statistics}


def level_verdict(
    trend: Trend, level: float, rise: str | None = None
) -> tuple[str, Estimate | None]:
    """Did training *grow* a head that reaches ``level`` (not merely move toward it)? ``(claim
    verdict, interval over seeds of the last snapshot's value)``. ``rise`` is the trend verdict
    of the rise (by default ``trend``'s own; e.g. a :class:`ControlledTrend`'s, against NoPE).
    ``not held`` when the last snapshot's interval lies wholly on the near side of ``level``
    (whatever the rise); past it, ``held`` if the rise went toward it, ``partly`` if it went
    away (the head is there but did not grow beyond the control), else ``cannot decide``
    (always so with one seed). An interval that straddles ``level`` is ``not held`` when the rise
    went away (one part of the conjunction is already false, the other not established) and
    ``cannot decide`` otherwise."""
    rise = trend.verdict if rise is None else rise
    if len(trend.finals) < 2:
        return "cannot decide", None
    final = interval_text(np.asarray(trend.finals), digits=3, unit="seeds")
    low, high = sorted((trend.toward * (final.low - level), trend.toward * (final.high - level)))
    if high < 0:
        return "not held", final
    if low > 0:
        return {TOWARD: "held", AWAY: "partly"}.get(rise, "cannot decide"), final
    return ("not held" if rise == AWAY else "cannot decide"), final


def combined_verdict(trends: Sequence[Trend | ControlledTrend]) -> str:
    """Claim verdict over several trends (e.g. queries and keys; plain or controlled), by
    :func:`ropebook.claims.combine` of toward → held, away → not held, undecided → cannot
    decide."""
    from ropebook.claims import combine

    parts = {TOWARD: "held", AWAY: "not held", UNDECIDED: "cannot decide"}
    return combine([parts[t.verdict] for t in trends])
