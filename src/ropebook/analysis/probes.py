"""Causal probes: remove RoPE planes of the rotated queries and keys at inference and measure.

"High frequencies build positional heads, low frequencies carry semantics" (Barbero et al. 2025,
Secs 5-6) is read off chunk norms; here it is tested by intervention, without more training.
:class:`ropebook.model.Intervention` with ``keep_chunks`` zeroes chosen planes of ``q_rot`` and
``k_rot`` in every head and layer, so their terms vanish from every score. Three conditions remove
the same number of planes (a ``fraction`` of them, a quarter by default):

- ``fastest``: the fastest planes (highest ``g_k``);
- ``slowest``: the slowest planes (lowest ``g_k``; under p-RoPE the unrotated ones);
- ``random``: planes drawn at random (``n_random`` draws per seed, averaged), the control for
  "any quarter".

For each condition, on the same held-out windows, :func:`run_probes` measures the change in each
window's mean next-token loss (nats, so intervals are on the log-perplexity scale) and in the mean
previous-token attention of the model's strongest previous-token heads (chosen on *other*
windows). Every difference is paired: the same seed, the same window, with and without removal.
Intervals are over seeds (each seed's mean over windows) when there are several, else over the
windows of the one seed (:func:`paired_estimate`).

Two ways to remove a plane (:data:`ABLATIONS`), both built by :func:`removal` — the one probe
function the plane map, head dynamics and recall chapters share:

- ``zeroed``: the plane's rotated query and key set to 0, so its term leaves every score. The
  slowest planes carry most of the q/k norm, so a loss here says "this plane carries norm" as
  much as "this plane carries content".
- ``mean``: *mean-ablation*, the control. The plane's unrotated query and key are replaced by
  their means over the positions of reference windows (per layer and head, :func:`qk_means`;
  windows other than those scored), then rotated as before. The plane keeps its average vector,
  hence the norm of that average and the relative-position pattern ``μ_q^T R((j-i) g) μ_k`` it
  makes as it turns; it loses only what varies from token to token. Means of the *rotated*
  vectors would not do: over positions a turning plane's rotated vectors average to about 0, so
  for all but the slowest planes that is zeroing again. A norm-matched substitute (the mean's
  direction scaled to the mean norm) was not chosen: it invents a vector the model never
  produced, and the mean is what the standard mean-ablation removes to.

A reading that is an artefact of norm shows under zeroing and vanishes under mean-ablation.

Numbers only: the probe's table, chart and claim text are in :mod:`ropebook.present.probes`.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ropebook.analysis import Estimate, interval_text

CONDITIONS: tuple[str, ...] = ("fastest", "slowest", "random")
ABLATIONS: tuple[str, ...] = ("zeroed", "mean")  # how a plane is removed; the claims read "mean"
ABLATION_NAMES = {"zeroed": "zeroing", "mean": "mean-ablation"}


def qk_means(params, config, windows) -> np.ndarray:
    """Mean unrotated query and key of every layer and head over the positions (and windows) of
    ``windows [W, T]``: ``[L, 2, H, D]`` (query, key), float32."""
    from ropebook import model

    _, layers = model.forward(params, np.asarray(windows), config, return_internals=True)
    return np.stack(
        [np.stack([np.asarray(x[kind]).mean(axis=(0, 1)) for kind in ("q", "k")]) for x in layers]
    ).astype(np.float32)


@dataclass(frozen=True)
class Removal:
    """How planes are removed: ``ablation`` of :data:`ABLATIONS`, with the model's ``means``
    (:func:`qk_means`) when mean-ablating. Called with a keep mask ``[K]`` (1 keeps a plane, 0
    removes it), it gives the :class:`ropebook.model.Intervention` that removes those planes."""

    ablation: str = "zeroed"
    means: np.ndarray | None = None

    def __post_init__(self) -> None:
        if self.ablation not in ABLATIONS:
            raise ValueError(f"ablation {self.ablation!r} not in {ABLATIONS}")
        if (self.ablation == "mean") != (self.means is not None):
            raise ValueError("mean-ablation needs the model's means; zeroing takes none")

    def __call__(self, keep):
        from ropebook import model

        if keep is None:
            return None
        return model.Intervention(keep_chunks=np.asarray(keep, np.float32), means=self.means)


ZEROED = Removal()


def removal(params, config, ablation: str, reference=None) -> Removal:
    """The one probe function: a :class:`Removal` of ``ablation`` for one model, its means read
    on ``reference [W, T]`` token windows (or task sequences) other than those scored."""
    if ablation == "zeroed":
        return ZEROED
    if reference is None:
        raise ValueError("mean-ablation needs reference windows to take the means over")
    return Removal(ablation, qk_means(params, config, reference))


def removal_masks(
    frequencies, fraction: float = 0.25, rng: np.random.Generator | None = None
) -> dict[str, np.ndarray]:
    """``condition -> keep [K]`` (1 keeps a plane, 0 removes it) for :data:`CONDITIONS`.

    Planes are ranked by ``frequencies [K]`` (ties keep their chunk order, fastest first), and
    each condition removes ``band_size(K, fraction)`` of them; ``random`` needs ``rng``."""
    from ropebook.analysis.frequencies import band_size

    g = np.asarray(frequencies, np.float64)
    k = g.size
    n = band_size(k, fraction)
    order = np.argsort(-g, kind="stable")
    removed = {"fastest": order[:n], "slowest": order[-n:]}
    if rng is not None:
        removed["random"] = rng.choice(k, n, replace=False)
    masks = {}
    for name, idx in removed.items():
        keep = np.ones(k, np.float32)
        keep[idx] = 0.0
        masks[name] = keep
    return masks


def random_masks(n_planes: int, n_removed: int, rng: np.random.Generator, draws: int) -> list:
    """``draws`` keep masks ``[K]``, each removing ``n_removed`` planes drawn without replacement."""
    masks = []
    for _ in range(draws):
        keep = np.ones(n_planes, np.float32)
        keep[rng.choice(n_planes, n_removed, replace=False)] = 0.0
        masks.append(keep)
    return masks


def window_losses(params, config, windows, keep=None, remove: Removal = ZEROED) -> np.ndarray:
    """Mean next-token loss (nats) of each window ``[W, T+1]``: ``[W]``, planes ``keep`` kept
    (the others removed by ``remove``)."""
    intervention = remove(keep)
    losses = _jitted_token_losses()(params, np.asarray(windows), config, intervention)
    return np.asarray(losses).mean(-1)


@functools.cache
def _jitted_token_losses():
    import jax

    from ropebook import model

    return jax.jit(model.token_losses, static_argnames="config")


def head_attention(
    params, config, windows, keep=None, kind: str = "previous", remove: Removal = ZEROED
) -> np.ndarray:
    """Mean attention on the target key (``heads.target_weights``, rows 1..T-1) of every head on
    every window, planes ``keep`` kept (the others removed by ``remove``): ``[W, L, H]``."""
    from ropebook import model
    from ropebook.analysis import heads

    intervention = remove(keep)
    _, layers = model.forward(
        params, np.asarray(windows), config, return_internals=True, intervention=intervention
    )
    return np.stack(
        [heads.target_weights(np.asarray(x["probs"]), kind).mean(-1) for x in layers], axis=1
    )


def strongest_heads(attention, n: int) -> list[tuple[int, int]]:
    """``(layer, head)`` of the ``n`` largest mean values of ``attention [W, L, H]``."""
    mean = np.asarray(attention).mean(0)
    flat = np.argsort(-mean, axis=None, kind="stable")[:n]
    return [tuple(int(i) for i in np.unravel_index(f, mean.shape)) for f in flat]


@dataclass(frozen=True)
class ProbeResult:
    """Per seed and window: loss and previous-token attention, intact and per condition.

    ``loss[cond]``, ``previous[cond]``: ``[seeds, W]``, with ``"intact"`` for no removal;
    ``heads``: per seed the previous-token heads whose attention is averaged; ``removed``: per
    seed and condition the removed plane indices of each draw (one draw but for ``random``)."""

    seeds: tuple[int, ...]
    loss: dict[str, np.ndarray]
    previous: dict[str, np.ndarray]
    heads: list[list[tuple[int, int]]]
    removed: list[dict[str, list[list[int]]]]
    n_planes: int
    ablation: str = "zeroed"

    def delta(self, metric: str, condition: str) -> np.ndarray:
        """``[seeds, W]`` paired change (removed − intact) of ``metric`` ∈ {loss, previous}."""
        values = getattr(self, metric)
        return values[condition] - values["intact"]


def run_probes(
    models: Sequence,
    windows,
    select_windows,
    *,
    fraction: float = 0.25,
    n_heads: int = 2,
    seed: int = 0,
    n_random: int = 4,
    ablation: str = "zeroed",
) -> ProbeResult:
    """Probe each model (one per seed) on ``windows [W, T+1]``; heads are chosen on
    ``select_windows [W', T]`` (intact model); the ``random`` condition averages ``n_random``
    draws of planes from ``Generator([seed, model seed])``. Planes are removed by ``ablation``
    (:func:`removal`; mean-ablation takes its means over ``select_windows``)."""
    from ropebook.analysis.frequencies import band_size, zoo_frequencies

    windows = np.asarray(windows)
    loss = {c: [] for c in ("intact", *CONDITIONS)}
    previous = {c: [] for c in ("intact", *CONDITIONS)}
    chosen, removed = [], []
    for m in models:
        frequencies = zoo_frequencies(m.config)
        masks = {c: [k] for c, k in removal_masks(frequencies, fraction).items()}
        masks["random"] = random_masks(
            frequencies.size, band_size(frequencies.size, fraction),
            np.random.default_rng([seed, m.seed]), n_random,
        )  # fmt: skip
        heads = strongest_heads(head_attention(m.params, m.config, select_windows), n_heads)
        chosen.append(heads)
        remove = removal(m.params, m.config, ablation, select_windows)
        removed.append(
            {c: [[int(i) for i in np.flatnonzero(k == 0)] for k in ks] for c, ks in masks.items()}
        )
        for condition, keeps in [("intact", [None]), *masks.items()]:
            draws_loss, draws_prev = [], []
            for keep in keeps:
                draws_loss.append(window_losses(m.params, m.config, windows, keep, remove))
                att = head_attention(m.params, m.config, windows[:, :-1], keep, remove=remove)
                draws_prev.append(np.stack([att[:, la, h] for la, h in heads], -1).mean(-1))
            loss[condition].append(np.mean(draws_loss, axis=0))
            previous[condition].append(np.mean(draws_prev, axis=0))
    return ProbeResult(
        seeds=tuple(m.seed for m in models),
        loss={c: np.stack(v) for c, v in loss.items()},
        previous={c: np.stack(v) for c, v in previous.items()},
        heads=chosen,
        removed=removed,
        n_planes=models[0].config.head_dim // 2,
        ablation=ablation,
    )


def paired_estimate(diffs, digits: int = 3) -> Estimate:
    """Mean and 95% t-interval of paired differences ``[seeds, W]``: over the seeds' window means
    with several seeds, over the windows with one (the text says which)."""
    d = np.asarray(diffs, np.float64)
    if d.shape[0] > 1:
        return interval_text(d.mean(1), digits, "seeds")
    return interval_text(d[0], digits, "windows of 1 seed")


def min_detectable(diffs) -> float:
    """Minimum detectable mean difference (80% power, 95% two-sided) of :func:`paired_estimate`'s
    samples: seed means with several seeds, windows with one."""
    from ropebook.stats import power

    d = np.asarray(diffs, np.float64)
    samples = d.mean(1) if d.shape[0] > 1 else d[0]
    return power.min_detectable_effect(float(np.std(samples, ddof=1)), samples.size)


@dataclass(frozen=True)
class ProbeReading:
    """The two paired contrasts that test the claim, and their verdicts."""

    positional: Estimate  # Δ prev(fastest) − Δ prev(slowest): claim says < −attention threshold
    semantic: Estimate  # Δ loss(slowest) − Δ loss(random): claim says > loss threshold
    positional_mde: float
    semantic_mde: float
    n_seeds: int
    verdict: str
    attention_threshold: float  # the smallest attention difference that counts (material)
    loss_threshold: float  # the same in nats of loss


def material_verdict(low: float, high: float, threshold: float, *, above: bool) -> str:
    """A contrast the claim says lies beyond a material ``threshold`` (> 0) on one side of 0
    (above ``+threshold`` if ``above``, else below ``−threshold``): ``held`` if its interval
    lies wholly beyond it; ``bounded`` if the interval lies within ``±threshold`` (any
    difference is smaller than matters: a decided null); ``not held`` if it lies wholly on the
    near side of the threshold otherwise (it reaches a material difference the other way);
    ``cannot decide`` if it contains the threshold. The plane-by-plane band claims use the same
    thresholds (``planes.band_verdict``)."""
    from ropebook.claims import verdict_from_interval

    if threshold <= 0:
        raise ValueError(f"a material threshold is positive, got {threshold}")
    signed = threshold if above else -threshold
    verdict = verdict_from_interval(low, high, threshold=signed, above=above)
    if verdict == "not held" and -threshold <= low and high <= threshold:
        return "bounded"
    return verdict


def probe_reading(result: ProbeResult, *, attention: float, loss: float) -> ProbeReading:
    """Part 1: removing the fastest planes lowers previous-token attention more than removing the
    slowest, by more than ``attention`` (the paired difference's interval below −``attention``).
    Part 2: removing the slowest planes costs more loss than removing random ones, by more than
    ``loss`` nats. Each part by :func:`material_verdict`, combined by
    :func:`ropebook.claims.combine`; one seed → cannot decide (the window intervals describe one
    trained model, not training)."""
    from ropebook.claims import combine

    pos = result.delta("previous", "fastest") - result.delta("previous", "slowest")
    sem = result.delta("loss", "slowest") - result.delta("loss", "random")
    p, s = paired_estimate(pos), paired_estimate(sem)
    parts = [
        material_verdict(*p.bounds, attention, above=False),
        material_verdict(*s.bounds, loss, above=True),
    ]
    verdict = "cannot decide" if len(result.seeds) < 2 else combine(parts)
    return ProbeReading(
        p, s, min_detectable(pos), min_detectable(sem), len(result.seeds), verdict, attention, loss
    )


# Which reading decides each part of a claim. A positional part (fast planes build positional
# heads) is read on zeroing: Thm. 5.3's positional head is made of a plane's content-free,
# average vector turning with position, which mean-ablation keeps by construction, so only
# zeroing can take it away; the mean-ablated reading beside it says whether the head needed the
# plane's content as well. A content part (slow planes carry content) is read on mean-ablation:
# zeroing takes the slow planes' large norm away with their content, mean-ablation only the
# content.
DECIDING = {"positional": "zeroed", "semantic": "mean"}


def probe_parts(reading: ProbeReading) -> tuple[str, str]:
    """The verdict of each part of one reading, as :func:`probe_reading` combines them:
    positional (interval below −its attention threshold), semantic (above its loss threshold),
    each by :func:`material_verdict`."""
    return (
        material_verdict(*reading.positional.bounds, reading.attention_threshold, above=False),
        material_verdict(*reading.semantic.bounds, reading.loss_threshold, above=True),
    )


def controlled_reading(readings: dict[str, ProbeReading]) -> ProbeReading:
    """The claim's reading from both ablations (``ablation -> probe_reading``): each part from the
    ablation :data:`DECIDING` names, combined by :func:`ropebook.claims.combine`; one seed →
    cannot decide, as in :func:`probe_reading`."""
    from ropebook.claims import combine

    pos, sem = readings[DECIDING["positional"]], readings[DECIDING["semantic"]]
    if pos.n_seeds != sem.n_seeds:
        raise ValueError("the two readings must rest on the same seeds")
    parts = [probe_parts(pos)[0], probe_parts(sem)[1]]
    verdict = "cannot decide" if pos.n_seeds < 2 else combine(parts)
    return ProbeReading(
        pos.positional, sem.semantic, pos.positional_mde, sem.semantic_mde, pos.n_seeds, verdict,
        pos.attention_threshold, sem.loss_threshold,
    )  # fmt: skip
