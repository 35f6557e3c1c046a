"""Context extension ("RoPE scaling"): what each standard method does to the frequency grid.

Every rule is a pure function of the head size ``head_dim`` (``d``), the base ``theta`` (``θ``),
the scale ``s`` (how many times longer than the original context we want to read) and the
original (training) context ``L`` in tokens. It returns a :class:`Scaled`: the new angular
frequency of every one of the ``d/2`` chunks (radians per token, fastest first, float64 — the
"inverse frequencies" of Hugging Face) and the *attention factor* ``m`` that transformers
multiplies into ``cos`` and ``sin`` (so into both the rotated query and key: attention logits are
multiplied by ``m²``, :attr:`Scaled.logit_scale`).

The rules, with ``g_k = θ^(-2k/d)`` the unscaled grid and ``r_k = L·g_k/2π`` the turns chunk
``k`` makes over the original context:

- **Position Interpolation** (``pi``; Chen et al. 2023; transformers ``linear``): ``g_k / s``:
  every chunk slows by ``s``, so positions ``0..sL`` land on the angles ``0..L`` had.
- **NTK-aware** (``ntk``; bloc97 2023): base ``θ·s^(d/(d-2))``: the slowest chunk slows by exactly
  ``s`` (it is interpolated), the fastest is unchanged (extrapolated), in between geometrically.
- **Dynamic NTK** (``dynamic-ntk``; transformers ``dynamic``): NTK-aware with the scale recomputed
  from the current length ``n``: ``s' = s·max(n, L)/L − (s − 1)``, so nothing changes up to ``L``.
- **YaRN** (``yarn``; Peng et al. 2024): a ramp ``γ`` over the turns ``r_k`` with ``α = 1``,
  ``β = 32``: chunks turning more than ``β`` times over ``L`` keep ``g_k``, chunks turning fewer
  than ``α`` times get ``g_k/s``, in between ``(1−γ)·g_k/s + γ·g_k``; and logits are multiplied by
  ``(0.1·ln s + 1)²``. transformers implements the ramp *linear in the chunk index* between the
  (fractional) indices where ``r = β`` and ``r = α``, rounded outwards (floor / ceil); the paper
  writes it *linear in r* (``γ = (r − α)/(β − α)``), which is exponential in the index. ``yarn``
  follows transformers (what deployed checkpoints run), ``yarn-paper`` the paper's formula;
  :func:`yarn` takes ``ramp="transformers" | "paper"``.
- **Llama 3.1** (``llama3``): wavelengths ``λ_k = 2π/g_k`` shorter than ``L/high_freq_factor``
  are kept, longer than ``L/low_freq_factor`` divided by ``s``, and in between blended with
  ``σ = (L/λ_k − low)/(high − low)``: ``(1−σ)·g_k/s + σ·g_k``.
- **LongRoPE** (``longrope``; Ding et al. 2024, Phi-3): one searched factor per chunk,
  ``g_k / f_k``, with ``short_factor`` up to ``L`` and ``long_factor`` beyond; attention factor
  ``sqrt(1 + ln s / ln L)``. Not in the :data:`METHODS` registry (its factors are searched per
  model); here for :mod:`ropebook.hf`.

:data:`METHODS` maps each name to a :class:`Method`; :func:`apply` is the one entry point
(``ValueError`` naming the valid methods for an unknown name).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from ropebook import rope

YARN_ALPHA, YARN_BETA = 1.0, 32.0  # the paper's α, β (transformers' beta_slow, beta_fast)
RAMPS: tuple[str, ...] = ("transformers", "paper")


@dataclass(frozen=True)
class Scaled:
    """A scaled grid: ``frequencies [d/2]`` (rad/token, fastest first) and the factor ``m``
    transformers multiplies into ``cos`` and ``sin``."""

    frequencies: np.ndarray
    attention_factor: float = 1.0

    @property
    def logit_scale(self) -> float:
        """What the attention logits are multiplied by: ``m²`` (``m`` scales both q and k)."""
        return float(self.attention_factor) ** 2


def _check(head_dim: int, theta: float, scale: float, original_context: float) -> None:
    if head_dim < 4 or head_dim % 2:
        raise ValueError(f"head_dim must be an even integer >= 4, got {head_dim}")
    if not theta > 1:
        raise ValueError(f"theta must be > 1, got {theta}")
    if not scale >= 1:
        raise ValueError(f"scale s must be >= 1 (1 = no extension), got {scale}")
    if not original_context > 0:
        raise ValueError(f"original_context must be > 0, got {original_context}")


def default(head_dim: int, theta: float) -> np.ndarray:
    """The unscaled grid ``g_k = θ^(-2k/d)``, ``[d/2]`` float64."""
    return rope.base_frequencies(head_dim, theta)


def turns(frequencies: np.ndarray, context: float) -> np.ndarray:
    """Turns ``g·context/2π`` each chunk makes over ``context`` tokens (cycles per context)."""
    return np.asarray(frequencies, np.float64) * context / (2 * np.pi)


def position_interpolation(
    head_dim: int, theta: float, scale: float, original_context: float = 1.0
) -> Scaled:
    """PI (Chen et al. 2023): every frequency divided by ``s``; ``m = 1``."""
    _check(head_dim, theta, scale, original_context)
    return Scaled(default(head_dim, theta) / scale)


def ntk_base(head_dim: int, theta: float, scale: float) -> float:
    """NTK-aware base ``θ·s^(d/(d-2))``: the slowest chunk then turns exactly ``s`` times slower."""
    return float(theta * scale ** (head_dim / (head_dim - 2)))


def ntk(head_dim: int, theta: float, scale: float, original_context: float = 1.0) -> Scaled:
    """NTK-aware scaling: the grid of base :func:`ntk_base`; ``m = 1``."""
    _check(head_dim, theta, scale, original_context)
    return Scaled(default(head_dim, ntk_base(head_dim, theta, scale)))


def dynamic_scale(scale: float, original_context: float, length: float) -> float:
    """Dynamic NTK's effective scale at sequence length ``n``: ``s·max(n, L)/L − (s − 1)``
    (transformers' ``dynamic``; 1 up to ``L``, then growing linearly with ``n``)."""
    return float(scale * max(length, original_context) / original_context - (scale - 1))


def dynamic_ntk(
    head_dim: int, theta: float, scale: float, original_context: float, length: float
) -> Scaled:
    """Dynamic NTK: NTK-aware with the scale :func:`dynamic_scale` of the current length."""
    _check(head_dim, theta, scale, original_context)
    effective = dynamic_scale(scale, original_context, length)
    return Scaled(default(head_dim, ntk_base(head_dim, theta, effective)))


def yarn_attention_factor(scale: float) -> float:
    """YaRN's ``m = 0.1·ln s + 1`` (``sqrt(1/t)`` in the paper); logits are scaled by ``m²``."""
    return 1.0 if scale <= 1 else 0.1 * math.log(scale) + 1.0


def correction_index(turns_: float, head_dim: int, theta: float, context: float) -> float:
    """The fractional chunk index ``k`` at which a chunk turns ``turns_`` times over ``context``:
    solves ``context·θ^(-2k/d)/2π = turns_`` (transformers' ``find_correction_dim``)."""
    return head_dim * math.log(context / (turns_ * 2 * math.pi)) / (2 * math.log(theta))


def yarn_ramp(
    head_dim: int,
    theta: float,
    original_context: float,
    *,
    alpha: float = YARN_ALPHA,
    beta: float = YARN_BETA,
    ramp: str = "transformers",
) -> np.ndarray:
    """YaRN's ``γ_k ∈ [0, 1]`` per chunk: 1 keeps the frequency, 0 interpolates it fully.

    ``ramp="paper"``: ``γ = clip((r_k − α)/(β − α), 0, 1)`` with ``r_k = L/λ_k`` (Peng et al.
    2023, Eq. 18). ``ramp="transformers"``: ``γ = 1 − clip((k − lo)/(hi − lo), 0, 1)`` with
    ``lo = floor(index where r = β)``, ``hi = ceil(index where r = α)`` clipped to ``[0, d − 1]``
    (``modeling_rope_utils._compute_yarn_parameters`` with ``truncate=True``).
    """
    if ramp not in RAMPS:
        raise ValueError(f"unknown YaRN ramp {ramp!r}; valid ramps: {', '.join(RAMPS)}")
    if ramp == "paper":
        r = turns(default(head_dim, theta), original_context)
        return np.clip((r - alpha) / (beta - alpha), 0.0, 1.0)
    low = max(math.floor(correction_index(beta, head_dim, theta, original_context)), 0)
    high = min(math.ceil(correction_index(alpha, head_dim, theta, original_context)), head_dim - 1)
    if low == high:
        high += 0.001  # as transformers: avoid dividing by zero
    k = np.arange(head_dim // 2, dtype=np.float64)
    return 1.0 - np.clip((k - low) / (high - low), 0.0, 1.0)


def yarn(
    head_dim: int,
    theta: float,
    scale: float,
    original_context: float,
    *,
    alpha: float = YARN_ALPHA,
    beta: float = YARN_BETA,
    ramp: str = "transformers",
    attention_factor: float | None = None,
) -> Scaled:
    """YaRN: ``(1−γ_k)·g_k/s + γ_k·g_k`` with :func:`yarn_ramp`, and ``m`` =
    :func:`yarn_attention_factor` unless ``attention_factor`` is given."""
    _check(head_dim, theta, scale, original_context)
    gamma = yarn_ramp(head_dim, theta, original_context, alpha=alpha, beta=beta, ramp=ramp)
    grid = default(head_dim, theta)
    m = yarn_attention_factor(scale) if attention_factor is None else float(attention_factor)
    return Scaled((1 - gamma) * grid / scale + gamma * grid, m)


def llama3(
    head_dim: int,
    theta: float,
    scale: float,
    original_context: float,
    *,
    low_freq_factor: float = 1.0,
    high_freq_factor: float = 4.0,
) -> Scaled:
    """Llama 3.1's ``llama3`` rule (module docstring); ``m = 1``."""
    _check(head_dim, theta, scale, original_context)
    if not high_freq_factor > low_freq_factor > 0:
        raise ValueError(
            f"need high_freq_factor > low_freq_factor > 0, got {high_freq_factor}, "
            f"{low_freq_factor}"
        )
    grid = default(head_dim, theta)
    wavelength = 2 * np.pi / grid
    scaled = np.where(wavelength > original_context / low_freq_factor, grid / scale, grid)
    smooth = (original_context / wavelength - low_freq_factor) / (
        high_freq_factor - low_freq_factor
    )
    smoothed = (1 - smooth) * scaled / scale + smooth * scaled
    medium = (wavelength >= original_context / high_freq_factor) & (
        wavelength <= original_context / low_freq_factor
    )
    return Scaled(np.where(medium, smoothed, scaled))


def longrope(
    head_dim: int,
    theta: float,
    original_context: float,
    length: float,
    *,
    short_factor: Sequence[float],
    long_factor: Sequence[float],
    scale: float,
    attention_factor: float | None = None,
) -> Scaled:
    """LongRoPE: ``g_k / f_k`` with ``f = long_factor`` when ``length > L`` else ``short_factor``;
    ``m = sqrt(1 + ln s / ln L)`` (1 when ``s <= 1``) unless ``attention_factor`` is given."""
    n = head_dim // 2
    factors = np.asarray(long_factor if length > original_context else short_factor, np.float64)
    if factors.shape != (n,):
        raise ValueError(
            f"LongRoPE factors must have head_dim/2 = {n} entries, got {factors.shape}"
        )
    if attention_factor is None:
        attention_factor = (
            1.0 if scale <= 1 else math.sqrt(1 + math.log(scale) / math.log(original_context))
        )
    return Scaled(default(head_dim, theta) / factors, float(attention_factor))


# ---------------------------------------------------------------- the registry


@dataclass(frozen=True)
class Method:
    """A context-extension method: its rule over ``(head_dim, θ, s, L, n)`` and where it is from.

    ``dynamic`` methods depend on the evaluated length ``n``; the others ignore it.
    """

    name: str
    label: str
    source: str
    rule: Callable[[int, float, float, float, float], Scaled]
    dynamic: bool = False
    hf_type: str | None = None  # transformers' rope_type, where it has one

    def __call__(
        self, head_dim: int, theta: float, scale: float, original_context: float, length=None
    ) -> Scaled:
        if self.dynamic and length is None:
            raise ValueError(f"method {self.name!r} needs the evaluated length")
        return self.rule(head_dim, theta, scale, original_context, length)


METHODS: dict[str, Method] = {
    m.name: m
    for m in (
        Method(
            "none", "no scaling", "Su et al. 2024",
            lambda d, t, s, L, n: Scaled(default(d, t)), hf_type="default",
        ),
        Method(
            "pi", "PI", "Chen et al. 2023 (PI)",
            lambda d, t, s, L, n: position_interpolation(d, t, s, L), hf_type="linear",
        ),
        Method("ntk", "NTK-aware", "bloc97 2023", lambda d, t, s, L, n: ntk(d, t, s, L)),
        Method(
            "dynamic-ntk", "dynamic NTK", "emozilla 2023",
            lambda d, t, s, L, n: dynamic_ntk(d, t, s, L, n), dynamic=True, hf_type="dynamic",
        ),
        Method(
            "yarn", "YaRN", "Peng et al. 2024 (YaRN)",
            lambda d, t, s, L, n: yarn(d, t, s, L), hf_type="yarn",
        ),
        Method(
            "yarn-paper", "YaRN (paper's ramp)", "Peng et al. 2024 (YaRN), Eq. 18",
            lambda d, t, s, L, n: yarn(d, t, s, L, ramp="paper"),
        ),
        Method(
            "llama3", "Llama 3.1", "Meta 2024 (Llama 3.1)",
            lambda d, t, s, L, n: llama3(d, t, s, L), hf_type="llama3",
        ),
    )
}  # fmt: skip


def method(name: str) -> Method:
    """The :class:`Method` called ``name`` (``ValueError`` listing the valid names)."""
    if name not in METHODS:
        raise ValueError(
            f"unknown RoPE scaling method {name!r}; valid methods: {', '.join(METHODS)}"
        )
    return METHODS[name]


def apply(
    name: str,
    head_dim: int,
    theta: float,
    scale: float,
    original_context: float,
    length: float | None = None,
) -> Scaled:
    """The grid and attention factor of method ``name`` (see :data:`METHODS`)."""
    return method(name)(head_dim, theta, scale, original_context, length)
