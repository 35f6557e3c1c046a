"""The rope_basics chapter's library: float32 checks of RoPE's identities and variant spectra."""

import math

import pytest

from ropebook.present import regime as show
from ropebook.proofs import rope_basics as basics


def test_float32_errors_vanish_at_position_zero_and_stay_at_rounding_level():
    # With every position 0 nothing rotates: both identities hold exactly, bit for bit.
    at_zero = basics.float32_errors(draws=50, head_dim=16, base=10_000.0, seed=0, max_position=1)
    assert [row["pairing"] for row in at_zero] == ["half", "interleaved"]
    assert all(
        row[basics.RELATIVE_ERROR] == 0.0 and row[basics.NORM_ERROR] == 0.0 for row in at_zero
    )
    rows = basics.float32_errors(draws=200, head_dim=64, base=10_000.0, seed=0)
    for row in rows:
        assert 0.0 < row[basics.RELATIVE_ERROR] < 1e-4
        assert 0.0 <= row[basics.NORM_ERROR] < 1e-5
    assert rows == basics.float32_errors(draws=200, head_dim=64, base=10_000.0, seed=0)


def test_variant_spectrum_closed_form():
    variants = {
        "RoPE": ("rope", 1.0),
        "half p-RoPE": ("p-rope", 0.5),
        "reversed": ("reversed", 0.5),
    }
    rows = basics.variant_spectrum(variants, head_dim=8, base=10_000.0)
    by_variant = {
        label: [r["frequency g_k (rad/token)"] for r in rows if r["variant"] == label]
        for label in variants
    }
    # g_k = θ^(-2k/d) = 10^(-k) for d = 8, θ = 10^4
    assert by_variant["RoPE"] == pytest.approx([1.0, 0.1, 0.01, 0.001])
    assert by_variant["half p-RoPE"] == pytest.approx([1.0, 0.1, 0.0, 0.0])
    assert by_variant["reversed"] == pytest.approx([0.0, 0.0, 0.01, 0.001])
    first = rows[0]
    assert first["plane k"] == 0 and first["wavelength (tokens)"] == pytest.approx(2 * math.pi)
    still = [r for r in rows if not r["rotates"]]
    assert len(still) == 4 and all(r["wavelength (tokens)"] is None for r in still)
    # planes that do not rotate are drawn a decade below the slowest rotating plane (1e-3)
    assert all(r["plotted frequency"] == pytest.approx(1e-4) for r in still)
    assert basics.rotating_planes(rows) == {"RoPE": 4, "half p-RoPE": 2, "reversed": 2}


def test_spectrum_chart_title_and_width():
    rows = basics.variant_spectrum({"RoPE": ("rope", 1.0)}, head_dim=8, base=10_000.0)
    spec = show.spectrum_chart(rows, head_dim=8, base=10_000.0).to_dict()
    assert spec["title"] == "RoPE variants: frequency of each plane (d = 8, θ = 10,000)"
    assert spec["width"] == 480 and spec["encoding"]["y"]["scale"]["type"] == "log"
    assert [len(values) for values in spec["datasets"].values()] == [4]
