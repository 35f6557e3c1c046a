"""Verdict rules and declared claim sets."""

import pytest

from ropebook import claims


def test_rules():
    assert claims.holds(True) == "held" and claims.holds(False) == "not held"
    assert claims.fails(True) == "not held" and claims.fails(0) == "held"
    assert claims.graded([True, True]) == "held"
    assert claims.graded((True, False)) == "partly"
    assert claims.graded([False, False]) == "not held"
    above = claims.interval_above(0.5)
    assert [above((0.6, 0.9)), above((0.4, 0.6)), above((0.1, 0.4))] == [
        "held",
        "cannot decide",
        "not held",
    ]
    below = claims.interval_below(0.5)
    assert [below((0.1, 0.4)), below((0.4, 0.6)), below((0.6, 0.9))] == [
        "held",
        "cannot decide",
        "not held",
    ]
    assert claims.given("partly") == "partly" and claims.untestable() == "not testable here"
    with pytest.raises(ValueError, match="not in"):
        claims.given("maybe")


def test_claim_set_records_each_declared_claim_once():
    specs = claims.ClaimSet(
        claims.ClaimSpec("c.a", "Barbero et al. 2025, Prop. 3.1", "A holds"),
        claims.ClaimSpec(
            "c.b", "Barbero et al. 2025, Fig. 2", "B above 1", claims.interval_above(1)
        ),
    )
    with pytest.raises(ValueError, match=r"never recorded: \['c.a', 'c.b'\]"):
        specs.claims()
    specs.record("c.b", (1.5, 2.0), "2 ± 0.5", interval="95% CI [1.5, 2.0]", seeds=3)
    specs.record("c.a", False, "counter-example found")
    with pytest.raises(ValueError, match="recorded twice"):
        specs.record("c.a", True, "again")
    with pytest.raises(KeyError, match="not declared"):
        specs.record("c.z", True, "x")
    records = specs.claims()
    assert [c.id for c in records] == ["c.a", "c.b"]  # declaration order
    assert [c.verdict for c in records] == ["not held", "held"]
    assert records[1].seeds == 3 and records[1].source == "Barbero et al. 2025, Fig. 2"
    with pytest.raises(ValueError, match="duplicate"):
        claims.ClaimSet(claims.ClaimSpec("x", "s", "t"), claims.ClaimSpec("x", "s", "t"))


def test_source_items_count_only_the_papers_the_book_reproduces():
    assert claims.source_items("Barbero et al. 2025, Figs 2, 8-9") == {"Fig. 2", "Fig. 8", "Fig. 9"}
    assert claims.source_items("CABLE Fig. 12 (Veisi et al. 2025)") == {"CABLE Fig. 12"}
    assert claims.source_items("Chen et al. 2023 (PI), Table 3") == set()
    assert claims.source_items("Peng et al. 2024 (YaRN), Tables 1-2") == set()


def test_claim_set_basis_applies_to_measured_claims_only():
    specs = claims.ClaimSet(
        claims.ClaimSpec("c.proof", "Barbero et al. 2025, Prop. 3.1", "a proof"),
        claims.ClaimSpec("c.model", "Barbero et al. 2025, Fig. 2", "a measurement"),
        claims.ClaimSpec("c.own", "Barbero et al. 2025, Fig. 3", "its own basis"),
        basis="lesson regime, 368,640 tokens per model",
    )
    specs.record("c.proof", True, "sympy")
    specs.record("c.model", True, "0.3", seeds=3)
    specs.record("c.own", True, "0.4", seeds=1, basis="1 random draw")
    proof, measured, own = specs.claims()
    assert proof.evidence is None and claims.evidence_text(proof) == "—"
    assert measured.evidence == "3 seeds; lesson regime, 368,640 tokens per model"
    assert own.evidence == "1 random draw"
    assert "lesson" in zoo_budget()


def zoo_budget() -> str:
    from ropebook import zoo

    return zoo.budget("cpu")


def test_combine_parts():
    assert claims.combine(["held", "held"]) == "held"
    assert claims.combine(["held", "cannot decide"]) == "partly"
    assert claims.combine(["not held", "cannot decide"]) == "not held"
    assert claims.combine(["cannot decide", "cannot decide"]) == "cannot decide"
    assert claims.combine(["held", "not testable here"]) == "not testable here"


def test_combine_the_parts_that_could_be_tested():
    assert claims.combine_testable(["not testable here", "held"]) == "held"
    assert claims.combine_testable(["cannot decide", "not testable here"]) == "cannot decide"
    assert claims.combine_testable(["not held", "held"]) == "partly"
    assert claims.combine_testable(["not testable here"] * 2) == "not testable here"


def test_too_few_runs_leaves_a_measured_finding_open_and_an_unmeasured_one_untestable():
    """One convention for every rule with a minimum of runs: a single seed measured the claim
    (open, more seeds decide it); only no run at all makes it untestable here."""
    assert claims.too_few_runs(1) == "cannot decide"
    assert claims.too_few_runs(0) == "not testable here"
    assert claims.combine([claims.too_few_runs(1), "held"]) == "partly"


# ---------------------------------------------------------------- every rule family, every way
def test_interval_rules_reach_every_verdict():
    above = claims.interval_above(0.0, margin=0.5)
    assert above((0.1, 0.4)) == "held"  # wholly above, even inside the margin
    assert above((-0.9, -0.1)) == "not held"
    assert above((-0.3, 0.4)) == "bounded"  # contains 0, inside ±0.5: a decided null
    assert above((-0.3, 0.6)) == "cannot decide"  # reaches past the margin
    below = claims.interval_below(1.0, margin=0.2)
    assert [below(i) for i in ((0.1, 0.9), (1.1, 1.5), (0.9, 1.1), (0.7, 1.1))] == [
        "held",
        "not held",
        "bounded",
        "cannot decide",
    ]
    # without a margin nothing is bounded
    assert claims.interval_above(0.0)((-0.01, 0.01)) == "cannot decide"


def test_informative_or_keeps_a_regime_that_cannot_tell_out_of_the_verdicts():
    assert claims.informative_or(True, "held") == "held"
    assert claims.informative_or(False, "held") == "uninformative here"
    assert claims.informative_or(False, "not held") == "uninformative here"
    with pytest.raises(ValueError, match="not in"):
        claims.informative_or(True, "fine")


def test_combine_reaches_bounded_and_uninformative():
    assert claims.combine(["bounded", "bounded"]) == "bounded"
    assert claims.combine(["bounded", "cannot decide"]) == "cannot decide"
    assert claims.combine(["bounded", "not held"]) == "not held"
    assert claims.combine(["bounded", "held"]) == "partly"
    assert claims.combine(["held", "uninformative here"]) == "uninformative here"


def test_proofs_and_checks_are_asserted_not_scored():
    specs = claims.ClaimSet(
        claims.ClaimSpec("k.proof", "Barbero et al. 2025, Prop. 3.1", "p", kind=claims.PROVED),
        claims.ClaimSpec("k.check", "ours", "c", kind=claims.CHECKED),
        claims.ClaimSpec("k.none", "ours", "n", claims.untestable, kind=claims.CHECKED),
        claims.ClaimSpec("k.find", "Barbero et al. 2025, Fig. 3", "f", claims.interval_above(0)),
        claims.ClaimSpec("k.open", "Barbero et al. 2025, Fig. 4", "o", claims.interval_above(0)),
    )
    with pytest.raises(claims.CheckFailed, match="k.check"):
        specs.record("k.check", False, "off by 1e-3")
    assert "k.check" not in specs.records  # nothing half-recorded
    specs.record("k.proof", True, "sympy")
    specs.record("k.check", True, "exact")
    specs.record("k.none", None, "no heads to check")  # nothing to check: allowed, no plan asked
    specs.record("k.find", (0.1, 0.3), "0.2")
    specs.record("k.open", (-0.1, 0.3), "0.1", to_decide="12 seeds", exploratory=True)
    records = specs.claims()
    assert [c.kind for c in records] == ["proved", "checked", "checked", "finding", "finding"]
    counts = claims.tally(records)
    assert counts["findings"] == 2 and counts["held"] == 1 and counts["cannot decide"] == 1
    assert counts["proved"] == 1 and counts["checked"] == 2
    assert counts["not testable here"] == 0  # the check with nothing to check is not scored
    assert claims.tally_text(records) == (
        "2 findings (1 held, 1 cannot decide; 1 exploratory); 1 proved, 2 checked"
    )
    assert claims.verdict_label(records[4]) == "cannot decide (exploratory)"
    assert [claims.verdict_label(c) for c in records[:3]] == [
        "proved",
        "checked",
        "checked: not testable here",
    ]
    family = claims.expected_false_verdicts(records)
    assert family["decided"] == 1 and family["expected"] == pytest.approx(0.05)
    assert family["cannot_decide_share"] == 0.5
    with pytest.raises(ValueError, match="kind"):
        claims.ClaimSpec("k.bad", "s", "t", kind="anecdote")


def test_claims_glued_before_kinds_load_as_findings():
    old = {"id": "a.b", "source": "s", "statement": "t", "measured": "m", "verdict": "held"}
    assert claims.Claim(**old).kind == "finding"


def test_exploratory_findings_stay_out_of_the_familys_count():
    specs = claims.ClaimSet(
        claims.ClaimSpec("e.planned", "ours", "a", claims.interval_above(0)),
        claims.ClaimSpec("e.looked", "ours", "b", claims.interval_above(0)),
    )
    specs.record("e.planned", (0.1, 0.2), "0.15")
    specs.record("e.looked", (0.1, 0.2), "0.15", exploratory=True)
    family = claims.expected_false_verdicts(specs.claims())
    assert family["decided"] == 1  # the exploratory one is shown, not counted
    assert claims.tally(specs.claims())["exploratory"] == 1
