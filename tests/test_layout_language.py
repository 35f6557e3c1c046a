"""The layouts-on-language study: paired comparisons with all-RoPE, and the verdict rules."""

from __future__ import annotations

import numpy as np
import pytest

from ropebook import layout_language


def synthetic(shift: dict[str, float], noise: float = 0.002, n: int = 4) -> dict:
    """Runs whose log perplexity is the same per seed, shifted by ``shift[model]`` (nats)."""
    rng = np.random.default_rng(0)
    base = {(seed, f): 6.0 + 0.05 * np.log2(f) + 0.02 * rng.standard_normal() for seed in range(n)
            for f in (1, 2, 4, 8)}  # fmt: skip
    runs = [
        {"model": m, "seed": seed, "overrides": {}, "spec_hash": "x",
         "ppl_by_factor": {str(f): float(np.exp(base[seed, f] + shift[m] * np.log2(2 * f)
                                                 + noise * rng.standard_normal()))
                           for f in (1, 2, 4, 8)}}
        for m in layout_language.MODELS for seed in range(n)
    ]  # fmt: skip
    return {"models": list(layout_language.MODELS), "runs": runs}


def test_against_rope_pairs_seeds_and_reads_percent():
    shift = dict.fromkeys(layout_language.MODELS, 0.0) | {"layout-gemma4": -0.01}
    results = synthetic(shift)
    assert layout_language.factors(results) == [1, 2, 4, 8]
    at_8 = layout_language.against_rope(results, 8)
    assert "rope" not in at_8 and set(at_8) == set(layout_language.MODELS) - {"rope"}
    gemma = at_8["layout-gemma4"].difference
    assert gemma.mean == pytest.approx(100 * np.expm1(-0.04), abs=0.3)  # 4 × -0.01 nats
    assert (
        gemma.high < 0
        and at_8["layout-gemma3"].difference.low < 0 < at_8["layout-gemma3"].difference.high
    )


def test_verdict_rules():
    equal = synthetic(dict.fromkeys(layout_language.MODELS, 0.0), noise=0.001)
    assert layout_language.within(layout_language.against_rope(equal, 1), margin=2.0) == "held"
    apart = synthetic(dict.fromkeys(layout_language.MODELS, 0.0) | {"layout-llama4": 0.05})
    assert layout_language.within(layout_language.against_rope(apart, 1), margin=2.0) == "not held"
    noisy = synthetic(dict.fromkeys(layout_language.MODELS, 0.0), noise=0.05)
    assert (
        layout_language.within(layout_language.against_rope(noisy, 1), margin=2.0)
        == "cannot decide"
    )
    better = synthetic(dict.fromkeys(layout_language.MODELS, -0.01) | {"rope": 0.0})
    assert layout_language.all_below(layout_language.against_rope(better, 8)) == "held"
    worse = synthetic(
        dict.fromkeys(layout_language.MODELS, -0.01) | {"rope": 0.0, "layout-gemma3": 0.02}
    )
    assert layout_language.all_below(layout_language.against_rope(worse, 8)) == "not held"
    assert layout_language.all_below(layout_language.against_rope(equal, 8)) == "cannot decide"
