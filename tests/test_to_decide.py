"""Every undecided claim says what would decide it: the ClaimSet refusal, the seed counts in its
sentences (against ``power.seeds_needed``), and old claim records without the field."""

from __future__ import annotations

import json
import math
from dataclasses import asdict

import numpy as np
import pytest

from ropebook import claims
from ropebook.analysis import ablation, interval_text
from ropebook.analysis.dynamics import Trajectory, trend_test
from ropebook.present import decide
from ropebook.seedplan import MeasuredSd
from ropebook.stats import power

SPECS = (
    claims.ClaimSpec(
        "t.open", "Barbero et al. 2025, Fig. 2", "A above 1", claims.interval_above(1)
    ),
    claims.ClaimSpec("t.untestable", "Barbero et al. 2025, Fig. 3", "B", claims.untestable),
    claims.ClaimSpec("t.closed", "Barbero et al. 2025, Fig. 4", "C holds"),
)


def test_claim_set_refuses_an_undecided_claim_that_does_not_say_what_would_decide_it():
    specs = claims.ClaimSet(*SPECS)
    specs.record("t.open", (0.5, 1.5), "1.0", seeds=3)  # the interval contains 1: cannot decide
    specs.record("t.untestable", None, "no model")
    specs.record("t.closed", True, "proof")  # decided: needs nothing
    with pytest.raises(ValueError, match=r"what would decide them.*\['t.open', 't.untestable'\]"):
        specs.claims()


def test_claim_set_publishes_undecided_claims_with_what_decides_them():
    specs = claims.ClaimSet(*SPECS)
    specs.record("t.open", (0.5, 1.5), "1.0", seeds=3, to_decide="12 paired seeds would ...")
    specs.record("t.untestable", None, "no model", to_decide="a checkpoint")
    specs.record("t.closed", True, "proof", to_decide="kept only for open claims")
    opened, untestable, closed = specs.claims()
    assert (opened.verdict, opened.to_decide) == ("cannot decide", "12 paired seeds would ...")
    assert untestable.undecided and untestable.to_decide == "a checkpoint"
    assert closed.verdict == "held" and closed.to_decide is None
    table = claims.markdown_table([opened, closed])
    assert table.count("*To decide:*") == 1 and "3 seeds. *To decide:* 12 paired" in table
    # with no other evidence the cell is just what decides it
    assert claims.evidence_cell(untestable) == "*To decide:* a checkpoint"


def _notebook(records: list[dict]) -> dict:
    """An executed notebook as ``claims.glue_claims`` leaves it (glue with display=False)."""
    output = {
        "output_type": "display_data",
        "metadata": {"scrapbook": {"name": "claims"}},
        "data": {"application/papermill.record/text/plain": repr(json.dumps(records))},
    }
    return {"cells": [{"cell_type": "code", "source": "", "outputs": [output]}], "metadata": {}}


def test_claims_of_notebooks_executed_before_the_field_still_load(tmp_path):
    old = {
        "id": "t.old", "source": "Barbero et al. 2025, Fig. 2", "statement": "A",
        "measured": "1.0", "verdict": "cannot decide", "interval": None, "seeds": 1,
        "evidence": "1 seed",
    }  # fmt: skip
    path = tmp_path / "old.ipynb"
    path.write_text(json.dumps(_notebook([old])))
    (claim,) = claims.read_claims(path)
    assert claim.to_decide is None and claim.undecided and claim == claims.Claim(**old)
    new = asdict(claims.Claim(**old, to_decide="3 seeds"))
    path.write_text(json.dumps(_notebook([new])))
    assert claims.read_claims(path)[0].to_decide == "3 seeds"


def _log_comparison(a, b) -> ablation.Comparison:
    return ablation.compare("a", a, "b", b, log=True)


def test_seeds_text_of_a_comparison_gives_the_count_of_seeds_needed():
    c = _log_comparison([480.1, 481.0, 479.5, 480.9], [479.0, 480.2, 479.9, 479.1])
    logs = 100 * (np.log([480.1, 481.0, 479.5, 480.9]) - np.log([479.0, 480.2, 479.9, 479.1]))
    sd, effect = float(np.std(logs, ddof=1)), abs(float(logs.mean()))
    expected = power.seeds_needed(sd, effect)
    text = decide.comparison_to_decide(c)
    assert text.startswith(f"{expected} paired seeds would detect the measured difference of ")
    assert f"(paired s.d. {sd:.2g} %; 95 %, 80 % power); this run has 4" in text
    assert expected > 4  # the comparison above is not decided by its 4 seeds
    # the same from the interval alone (what claims keep), and from the raw differences
    e = ablation.estimate(logs)
    assert power.seeds_to_decide_interval(e.mean, e.low, e.high, 4).needed == expected
    assert power.seeds_to_decide(logs).needed == expected


def test_a_single_seed_asks_for_a_second_and_uses_the_books_measured_sd():
    c = _log_comparison([480.1], [479.0])
    effect = abs(100 * math.log(480.1 / 479.0))
    text = decide.comparison_to_decide(c)
    assert text.startswith("1 seed: a second seed is needed to measure the paired s.d.")
    assert f"{power.seeds_needed(1.0, 1.0)} paired seeds would detect it" in text
    measured = MeasuredSd(0.43, "matched: 0.75-RoPE vs RoPE", exact=True)
    text = decide.comparison_to_decide(c, measured)
    assert f"at 0.43 % (the book's measured paired s.d. for {measured.comparison}" in text
    assert f"), {power.seeds_needed(0.43, effect)} paired seeds would detect" in text


def test_counts_beyond_reach_and_differences_of_zero_are_said_as_such():
    far = power.seeds_to_decide([1.0, -1.0, 1.01, -1.0], limit=1000)  # mean 0.0025, s.d. 1.15
    assert far.needed is None and far.beyond_limit
    assert decide.seeds_text(far).startswith("more than 1,000 paired seeds would be needed")
    zero = power.seeds_to_decide([0.2, -0.2, 0.1, -0.1])
    assert zero.needed is None and not zero.beyond_limit
    assert "is 0: more paired seeds can only bound it" in decide.seeds_text(zero)
    same = power.seeds_to_decide([0.0, 0.0, 0.0])
    assert decide.seeds_text(same).startswith("all 3 paired seeds gave the same value")


def test_the_fast_search_finds_what_seeds_needed_finds():
    for sd, effect in ((1.0, 1.0), (1.0, 0.5), (1.44, 0.11), (0.9, 0.54), (1.0, 0.03), (2, 3)):
        assert power.seeds_to_decide([effect], sd=sd).needed == power.seeds_needed(sd, effect)


def test_sd_from_interval_recovers_the_sample_sd():
    values = [0.3, 0.9, 0.4, 1.2, 0.7]
    e = interval_text(values, 3)
    assert e.n == 5
    assert power.sd_from_interval(e.low, e.high, e.n) == pytest.approx(np.std(values, ddof=1))
    assert math.isnan(power.sd_from_interval(0.1, 0.1, 1))
    r = decide.interval_result(e, threshold=0.5)
    assert r.needed == power.seeds_needed(float(np.std(values, ddof=1)), abs(np.mean(values) - 0.5))


def test_a_trend_over_training_counts_seeds_of_its_change():
    values = np.array([[0.1, 0.2, 0.5], [0.2, 0.2, 0.3], [0.1, 0.3, 0.2]])
    steps = np.array([0, 10, 100])
    trajectory = Trajectory("lift", "rope", (0, 1, 2), steps, 64 * steps, values, toward=1)
    trend = trend_test(trajectory)
    change = values[:, -1] - values[:, 0]
    expected = power.seeds_needed(float(np.std(change, ddof=1)), abs(change.mean()))
    assert decide.trend_to_decide(trend).startswith(f"{expected} seeds would detect")


def test_the_scorecard_lists_every_open_finding():
    def claim(cid, verdict, to_decide=None, kind="finding"):
        return claims.Claim(cid, "s", "t", "m", verdict, to_decide=to_decide, kind=kind)

    record = claims.ChapterRecord(
        "ch", "Ch", [claim("a", "held"), claim("b", "cannot decide", "10 seeds"),
                     claim("c", "not testable here"), claim("d", "uninformative here", "θ = 500"),
                     claim("e", "not testable here", kind="checked"),
                     claim("f", "held", kind="proved")], {},
    )  # fmt: skip
    rows = decide.undecided_rows([record])
    assert [(r["claim"], r["what would decide it"]) for r in rows] == [
        ("b", "10 seeds"),
        ("c", "— (not recorded)"),
        ("d", "θ = 500"),
    ]  # a check with nothing to check is not an open finding
    values = decide.undecided_values([record])
    assert values == {
        "findings": 4, "undecided": 3, "cannot_decide": 1, "uninformative": 1, "not_testable": 1,
        "with_plan": 2,
    }  # fmt: skip
