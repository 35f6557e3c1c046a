"""Table 1 by construction: which RoPE variants can build sharp positional heads (Thm 5.3) and
exactly distance-invariant semantic channels (Thm 6.1), on the models' own rotation code.

:func:`positional_attention` and :func:`plane_scores` run the constructions for any variant of
:mod:`ropebook.rope` (which planes rotate decides what each can build); :func:`construction` and
:func:`positional_check` turn them into Table 1's positional marks, :func:`table1_measured` into
all of its marks.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np

from ropebook import rope

# The encodings of Table 1 as RoPE variants (name -> (variant, proportion)), and where ψ sits.
TABLE1_VARIANTS: dict[str, tuple[str, float]] = {
    "NoPE": ("p-rope", 0.0),  # p = 0 rotates nothing: exactly NoPE
    "RoPE": ("rope", 1.0),
    "0.75-RoPE": ("p-rope", 0.75),
}
ALL_PLANES, FAST_PLANES, FREE_PLANES = "all planes", "fast planes", "free planes"


def rotating_planes(
    head_dim: int, base: float = 10_000.0, *, variant: str = "rope", proportion: float = 1.0
) -> np.ndarray:
    """Boolean ``[head_dim/2]``: which planes (chunks, fastest first) the variant rotates."""
    return rope.frequencies(head_dim, base, variant=variant, proportion=proportion) > 0


def plane_vector(head_dim: int, planes: np.ndarray, *, pairing: str = "half") -> np.ndarray:
    """A unit vector spread evenly over the given planes (``planes``: chunk indices or a mask);
    within each plane it points along the plane's first dimension."""
    planes = np.asarray(planes)
    chosen = np.flatnonzero(planes) if planes.dtype == bool else planes
    if len(chosen) == 0:
        raise ValueError("choose at least one plane")
    vector = np.zeros(head_dim)
    vector[rope.chunk_indices(head_dim, pairing)[chosen, 0]] = 1 / math.sqrt(len(chosen))
    return vector


def positional_attention(
    psi: np.ndarray,
    n: int,
    *,
    scale: float,
    offset: int = 0,
    base: float = 10_000.0,
    variant: str = "rope",
    proportion: float = 1.0,
    pairing: str = "half",
) -> np.ndarray:
    """Attention ``[n, n]`` of the Thm 5.3 construction: every query is ``scale·ψ`` and every
    key is ``R^offset ψ`` (``offset=0``: diagonal head; ``1``: previous-token head), rotated by
    ``variant`` at positions ``0..n-1`` and causally masked."""
    kwargs = dict(base=base, pairing=pairing, variant=variant, proportion=proportion)
    psi = jnp.asarray(psi, jnp.float32)[None, None, :]
    key = rope.apply_rope(psi, jnp.asarray([offset]), **kwargs)[0, 0]
    positions = jnp.arange(n)
    q = rope.apply_rope(jnp.broadcast_to(scale * psi[0, 0], (n, 1, len(key))), positions, **kwargs)
    k = rope.apply_rope(jnp.broadcast_to(key, (n, 1, len(key))), positions, **kwargs)
    scores = jnp.einsum("qhd,khd->qk", q, k)
    scores = jnp.where(jnp.tril(jnp.ones((n, n), bool)), scores, -jnp.inf)
    return np.asarray(jax.nn.softmax(scores, axis=-1), dtype=np.float64)


def min_target_attention(attention: np.ndarray, offset: int = 0) -> float:
    """``min_i α[i, i - offset]`` over the queries that have that key (``i ≥ offset``)."""
    rows = np.arange(offset, len(attention))
    return float(attention[rows, rows - offset].min())


def positional_margin(weights: np.ndarray, frequencies: np.ndarray, n: int) -> float:
    """``δ = 1 − max_{1≤r<n} Σ_k w_k cos(r g_k)`` (``Σ w_k = 1``): how far the best wrong
    distance stays below the right one. The construction reaches ``min α ≥ 1 − ε`` once
    ``scale ≥ ln(n (1−ε)/ε) / δ`` (each wrong key weighs at most ``e^{−scale·δ}``)."""
    r = np.arange(1, n)[:, None]
    return float(1 - np.max(np.cos(r * np.asarray(frequencies)[None]) @ np.asarray(weights)))


def plane_scores(
    psi: np.ndarray,
    distances: np.ndarray,
    *,
    base: float = 10_000.0,
    variant: str = "rope",
    proportion: float = 1.0,
    pairing: str = "half",
) -> np.ndarray:
    """``⟨R^r ψ, R^0 ψ⟩`` for each distance ``r``: the score a query ``ψ`` gives a matching key
    ``ψ`` that sits ``r`` tokens earlier (a "semantic" match that should not depend on ``r``)."""
    kwargs = dict(base=base, pairing=pairing, variant=variant, proportion=proportion)
    distances = jnp.asarray(distances)
    x = jnp.broadcast_to(jnp.asarray(psi, jnp.float32), (len(distances), 1, len(psi)))
    q = rope.apply_rope(x, distances, **kwargs)
    k = rope.apply_rope(x, jnp.zeros_like(distances), **kwargs)
    return np.asarray(jnp.sum(q * k, axis=(-1, -2)), dtype=np.float64)


@dataclass(frozen=True)
class Construction:
    """The Thm 5.3 construction of one encoding with ψ on some planes, over ``n`` tokens.

    ``margin``: ``δ`` of :func:`positional_margin`; ``scale``: the scale used, the smallest that
    ``δ`` guarantees to reach ``1 − ε`` when ``sharp`` (a margin above 0), else ``1000`` (with no
    margin any scale gives the same uniform attention); ``min_diagonal``, ``min_previous``: the
    worst query's attention on its target for the diagonal and the previous-token head."""

    encoding: str
    where: str
    n: int
    margin: float
    scale: float
    sharp: bool
    min_diagonal: float
    min_previous: float

    @property
    def worst(self) -> float:
        return min(self.min_diagonal, self.min_previous)

    @property
    def best(self) -> float:
        return max(self.min_diagonal, self.min_previous)


def construction(
    label: str,
    planes: np.ndarray,
    n: int,
    *,
    where: str,
    head_dim: int,
    base: float,
    epsilon: float,
    variants: Mapping[str, tuple[str, float]] = TABLE1_VARIANTS,
) -> Construction:
    """The Thm 5.3 construction of encoding ``label`` with ψ spread over ``planes`` (described as
    ``where``) for sequences of ``n`` tokens, scaled to reach ``1 − epsilon`` where it can."""
    variant, proportion = variants[label]
    grid = rope.frequencies(head_dim, base, variant=variant, proportion=proportion)
    psi = plane_vector(head_dim, planes)
    weights = np.asarray(planes, float) / np.sum(planes)
    margin = positional_margin(weights, grid, n)
    sharp = margin > 1e-9
    scale = math.log(n * (1 - epsilon) / epsilon) / margin if sharp else 1e3
    worst = [
        min_target_attention(
            positional_attention(
                psi,
                n,
                scale=scale,
                offset=offset,
                base=base,
                variant=variant,
                proportion=proportion,
            ),
            offset,
        )  # fmt: skip
        for offset in (0, 1)
    ]
    return Construction(label, where, n, margin, scale, bool(sharp), worst[0], worst[1])


@dataclass(frozen=True)
class PositionalCheck:
    """What the constructions of :func:`construction` show.

    ``ok``: RoPE and p-RoPE's fast planes reach ``1 − ε`` in every construction; for NoPE, *no*
    construction does. ``fast_worst``: the worst target attention on p-RoPE's fast planes;
    ``uniform_best``: the best one with NoPE or on p-RoPE's free planes."""

    ok: dict[str, bool]
    fast_worst: float
    uniform_best: float


def positional_check(
    constructions: Sequence[Construction], epsilon: float, p_label: str = "0.75-RoPE"
) -> PositionalCheck:
    """:class:`PositionalCheck` of :func:`construction` results (``where`` one of
    :data:`ALL_PLANES`, :data:`FAST_PLANES`, :data:`FREE_PLANES`)."""

    def pick(encoding: str, where: str | None = None) -> list[Construction]:
        return [c for c in constructions if c.encoding == encoding and where in (None, c.where)]

    def reaches(c: Construction) -> bool:
        return c.worst > 1 - epsilon

    fast, free = pick(p_label, FAST_PLANES), pick(p_label, FREE_PLANES)
    ok = {
        "RoPE": all(map(reaches, pick("RoPE"))),
        p_label: all(map(reaches, fast)),
        "NoPE": not any(map(reaches, pick("NoPE"))),
    }
    best = max(c.best for c in pick("NoPE") + free)
    return PositionalCheck(ok, min(c.worst for c in fast), best)


def first_negative(distances: np.ndarray, scores: np.ndarray) -> int | None:
    """The first distance whose score is below zero (``None`` if none is)."""
    negative = np.flatnonzero(np.asarray(scores) < 0)
    return int(np.asarray(distances)[negative[0]]) if len(negative) else None


def match_scale(n_keys: int, epsilon: float) -> float:
    """The scale ``s`` at which one key scoring ``s`` (a perfect match, cos = 1) among ``n_keys``
    keys whose other ``n_keys − 1`` score 0 takes exactly ``1 − epsilon`` of the attention:
    ``s = ln((n − 1)(1 − ε)/ε)``."""
    return math.log((n_keys - 1) * (1 - epsilon) / epsilon)


def match_attention(score: float, n_keys: int, scale: float) -> float:
    """Attention on a key scoring ``scale · score`` among ``n_keys − 1`` keys scoring 0:
    ``e^{s·c} / (e^{s·c} + n − 1)``."""
    from scipy.special import expit

    return float(expit(scale * score - math.log(n_keys - 1)))


def table1_measured(
    positional_ok: Mapping[str, bool], semantic_ok: Mapping[str, bool], p_label: str = "0.75-RoPE"
) -> dict[str, dict[str, bool]]:
    """Table 1's marks as the constructions found them. ``positional_ok`` is
    :attr:`PositionalCheck.ok` (for NoPE: the construction *fails*); ``semantic_ok``: RoPE's
    slowest plane turns a match negative, and NoPE's and p-RoPE's free planes never move."""
    return {
        "positional": {
            "NoPE": not positional_ok["NoPE"],
            "RoPE": positional_ok["RoPE"],
            p_label: positional_ok[p_label],
        },
        "semantic": {
            "NoPE": semantic_ok["NoPE"],
            "RoPE": not semantic_ok["RoPE"],
            p_label: semantic_ok[p_label],
        },
    }


def dropped_turn(
    head_dim: int, length: int, base: float, proportion: float = 0.75, reference: float = 1.0
) -> float:
    """Largest angle (rad) that a plane p-RoPE at ``proportion`` frees and p-RoPE at
    ``reference`` rotates (by default RoPE: every plane) turns over ``length`` tokens; 0 when the
    two rotate the same planes. For a step of a p sweep (``proportion`` → ``reference``) it is
    how far the planes the step adds turn."""
    return float(
        changed_frequencies(head_dim, base, proportion, reference).max(initial=0.0) * length
    )


def changed_frequencies(
    head_dim: int, base: float, proportion: float = 0.75, reference: float = 1.0
) -> np.ndarray:
    """RoPE's angular frequencies (rad/token) of the planes p-RoPE at ``reference`` rotates and
    p-RoPE at ``proportion`` does not: the planes in which the two encodings differ."""
    low, high = sorted((proportion, reference))
    rotated = {p: rope.frequencies(head_dim, base, variant="p-rope", proportion=p) > 0
               for p in (low, high)}  # fmt: skip
    return rope.base_frequencies(head_dim, base)[rotated[high] & ~rotated[low]]


# What freeing RoPE's slowest planes changes is how a semantic match scores at a distance (Thm 6.1,
# Sec. 6.1): on a plane turned by angle a the match scores cos a, which first turns against the
# match past a quarter turn. Planes that never turn that far over the span a test covers score a
# match within cos(π/2) of unrotated, so a test of p-RoPE against RoPE there cannot tell the two
# apart by construction: it is *uninformative here*, whatever its interval.
INFORMATIVE_ANGLE = math.pi / 2


def freed_planes_informative(
    head_dim: int, length: int, base: float, proportion: float = 0.75, reference: float = 1.0
) -> bool:
    """Whether the planes in which p-RoPE at ``proportion`` and at ``reference`` (RoPE by
    default) differ turn, under RoPE, by at least :data:`INFORMATIVE_ANGLE` over ``length``
    tokens: whether a test of one against the other over that span can fail."""
    return dropped_turn(head_dim, length, base, proportion, reference) >= INFORMATIVE_ANGLE


def informative_length(
    head_dim: int, base: float, proportion: float = 0.75, reference: float = 1.0
) -> int | None:
    """The shortest span (tokens) over which :func:`freed_planes_informative` holds: where the
    fastest plane in which the two differ first turns :data:`INFORMATIVE_ANGLE`; ``None`` when
    they rotate the same planes (no span can tell them apart)."""
    changed = changed_frequencies(head_dim, base, proportion, reference)
    return math.ceil(INFORMATIVE_ANGLE / changed.max()) if changed.size else None
