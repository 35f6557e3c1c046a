"""Turns per context against closed forms; the regime table of the paper's models and ours."""

import math

import numpy as np
import pytest

from ropebook import rope
from ropebook.analysis import regime
from ropebook.present import regime as show


def test_turns_per_context_closed_form():
    turns = rope.turns_per_context(16, 10_000.0, 128)
    k = np.arange(8)
    assert turns == pytest.approx(128 * 10_000.0 ** (-2 * k / 16) / (2 * math.pi))
    assert np.sum(turns >= 1) == 3  # planes 0-2: 20.4, 6.4, 2.0 turns; plane 3 only 0.64
    assert (
        rope.turns_per_context(16, 10_000.0, 128, variant="p-rope", proportion=0.75)[6:].sum() == 0
    )


def test_gemma_7b_regime_matches_the_hand_calculation():
    row = next(r for r in show.regime_rows(regime.REFERENCE_MODELS) if r["model"] == "Gemma 7B")
    # g_k >= 2π/8192  <=>  k <= 128·ln(8192/2π)/ln(10⁴) = 99.7: planes 0..99 of 128
    assert row["≥ 1 turn"] == f"{100 / 128:.0%}"
    assert row["slowest plane, turns"] == pytest.approx(8192 * 1e4 ** (-254 / 256) / (2 * math.pi))
    assert 0.13 < row["slowest plane, turns"] < 0.15


def test_profiles_and_chart():
    settings = regime.profile_settings()
    assert settings["ours: cpu"].head_dim == 16 and settings["ours: cpu"].context == 128
    matched = show.regime_rows({"m": settings["ours: cpu, matched"]})[0]
    gemma = show.regime_rows({"g": regime.REFERENCE_MODELS["Gemma 7B"]})[0]
    assert matched["d"] == 32 and matched["θ"] == "200"  # base 202.6, two significant digits
    assert matched["slowest plane, turns"] == pytest.approx(gemma["slowest plane, turns"], rel=0.02)
    chart = show.turns_chart({**regime.REFERENCE_MODELS, **settings}).to_dict()
    values = chart["layer"][0]["data"]["values"]
    assert len(values) == 128 * 2 + 64 + 32 + sum(s.head_dim // 2 for s in settings.values())
    assert chart["width"] <= 600
