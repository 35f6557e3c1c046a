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
    assert claims.source_items("Peng et al. 2023 (YaRN), Tables 1-2") == set()


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
