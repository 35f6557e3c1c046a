"""Where a model's RoPE spectrum sits: turns of every plane over its training context.

The paper's models and ours differ in head dimension, base and context, so "the slow planes" of
one are not the slow planes of another. The comparable quantity is how many full turns each plane
makes over the training context (:func:`ropebook.rope.turns_per_context`). This module names
the settings compared; their chart and table are in :mod:`ropebook.present.regime`.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class RopeSetting:
    """The three numbers that fix a RoPE spectrum, and where they come from."""

    head_dim: int
    base: float
    context: int
    source: str


# The models the paper (and CABLE) measure, at their pre-training context.
REFERENCE_MODELS: dict[str, RopeSetting] = {
    "Gemma 7B": RopeSetting(256, 10_000.0, 8192, "Barbero et al. 2025 (Gemma 7B config)"),
    "Gemma 2B": RopeSetting(256, 10_000.0, 8192, "Barbero et al. 2025, Table 2 (Gemma 2B)"),
    "Llama 3.1 8B": RopeSetting(128, 500_000.0, 8192, "Llama 3.1 8B config, before scaling"),
    "GPT-2 Small (CABLE)": RopeSetting(64, 10_000.0, 512, "Veisi et al. 2025, appendix figures"),
}


def profile_settings(regimes: tuple[str, ...] = ("lesson", "matched")) -> dict[str, RopeSetting]:
    """Each zoo profile's RoPE model in each of ``regimes`` as a :class:`RopeSetting`
    (``ours: cpu`` is the lesson regime, ``ours: cpu, matched`` the matched one)."""
    from ropebook import zoo

    settings = {}
    for profile in zoo.PROFILES:
        for regime in regimes:
            config, _ = zoo.configs("rope", profile=profile, regime=regime)
            label = f"ours: {profile}" + ("" if regime == "lesson" else f", {regime}")
            settings[label] = RopeSetting(
                config.head_dim, config.rope_base, config.context, f"ropebook.zoo ({regime})"
            )
    return settings
