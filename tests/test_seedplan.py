"""Seeds chosen by power: counts from measured noise within a budget, added after the profile's."""

from __future__ import annotations

import pytest

from ropebook import REPO_ROOT, seedplan, zoo
from ropebook.present import seedplan as show
from ropebook.stats import power


def _plan(budget_minutes: float) -> dict:
    comparison = {"sd_range": [0.4, 0.4], "source": "test"}
    return {
        "profile": "cpu", "confidence": 0.95, "power": 0.8,
        "budget": {"build_minutes": budget_minutes, "build_minutes_measured": 0,
                   "reserved_minutes": {}, "reference_tokens_per_second": 10_000},
        "seconds_per_model": {"matched": 60, "flagship": 600},
        "base_seeds": {"matched": 3, "flagship": 3},
        "comparisons": [
            comparison | {"id": "a", "regime": "matched", "models": ["p", "r"],
                          "sd": 0.43, "target_mde": 0.5, "headline": True},
            comparison | {"id": "b", "regime": "flagship", "models": ["p", "r"],
                          "sd": 0.9, "target_mde": 1.0, "headline": True},
            comparison | {"id": "c", "regime": "matched", "models": ["q", "r"],
                          "sd": 1.4, "target_mde": 0.5, "headline": False},
        ],
    }  # fmt: skip


def test_a_headline_comparison_gets_its_need_when_it_fits_and_what_fits_when_not():
    needed = power.seeds_needed(0.43, 0.5)
    roomy = seedplan.choose(_plan(1000))
    assert roomy[0].trained == roomy[0].needed == needed and roomy[0].met
    assert roomy[0].mde <= 0.5 < power.min_detectable_effect(0.43, needed - 1)
    assert roomy[0].added_seconds == 2 * 60 * (needed - 3)  # two models, 60 s each per seed
    tight = seedplan.choose(_plan(3))  # 180 s: one more seed of both matched models (120 s)
    assert [c.trained for c in tight] == [4, 3, 3]
    assert not tight[1].met and tight[1].mde == pytest.approx(power.min_detectable_effect(0.9, 3))


def test_a_secondary_comparison_gets_all_it_needs_or_nothing_and_shares_models():
    plan = _plan(140)  # 8400 s: a (600 s) and b (7200 s) fit, c's ~7000 s do not
    c = seedplan.choose(plan)[2]
    assert c.needed > 50 and c.trained == 3  # 1.4 % at 0.5 % needs ~60 seeds: not affordable
    plan["comparisons"][2]["target_mde"] = 2.0  # now it fits: only "q" costs, "r" is paid
    a, _, c = seedplan.choose(plan)
    assert c.met and c.added_seconds == 60 * max(0, c.needed - 3)
    counts = seedplan.seed_counts(seedplan.choose(plan))
    assert counts["matched", "r", "shakespeare"] == max(a.trained, c.trained)


def test_added_seeds_come_after_the_profiles_own_and_leave_the_others_alone():
    assert seedplan.extend_seeds((0, 1, 2), 5) == (0, 1, 2, 3, 4)
    assert seedplan.extend_seeds((0, 1, 2), 2) == (0, 1)
    planned = seedplan.planned_counts("cpu")
    rope = zoo.seeds_for("rope", profile="cpu", regime="matched")
    assert (
        rope[:3] == zoo.PROFILES["cpu"].seeds
        and len(rope) == planned["matched", "rope", "shakespeare"]
    )
    own = zoo.seeds_for("rope", profile="cpu", regime="matched", planned=False)
    assert own == zoo.PROFILES["cpu"].seeds  # without the plan's added seeds (plane_map's)
    assert zoo.seeds_for("alibi", profile="cpu", regime="matched") == zoo.PROFILES["cpu"].seeds
    assert zoo.seeds_for("rope", profile="smoke", regime="matched") == (0,)  # cpu plan only
    jobs = zoo.default_jobs("cpu")
    first_added = next((i for i, j in enumerate(jobs) if j[1] >= 3), len(jobs))
    assert all(j[1] >= 3 for j in jobs[first_added:])  # a partial zoo has every first seed


def test_shortfall_values_count_the_targets_met_and_missed():
    tight = seedplan.choose(_plan(3))  # one more seed of both matched models: no target met
    values = show.shortfall_values(tight, 3.0)
    assert values["spare"] == 3.0 and values["added"] == pytest.approx(2.0)  # 120 s spent
    assert values["met"] == 0 and values["n"] == 3 and not any(x.met for x in tight)
    assert values["worst_ratio"] == pytest.approx(max(x.mde / x.target for x in tight))
    assert values["worst_ratio"] > 1
    roomy = seedplan.choose(_plan(1000))
    values = show.shortfall_values(roomy, 1000.0)
    assert values["met"] == values["n"] == 3 and values["worst_ratio"] == 0.0


def _machine(profile: str, tokens_per_second: float) -> dict:
    return {"benchmark": {"profile": profile, "tokens_per_second": tokens_per_second}}


def test_seeds_follow_the_machine(monkeypatch):
    monkeypatch.delenv(seedplan.SPEEDUP_ENV, raising=False)
    plan = _plan(10)
    plan["budget"]["build_minutes_measured"] = 8  # 2 reference minutes spare at the reference
    assert [seedplan.speedup_of(t, 10_000) for t in (3_000, 19_000, 20_000, 79_000, 80_000)] == [
        1, 1, 2, 4, 8,
    ]  # fmt: skip
    slow, fast = (seedplan.machine_speedup(plan, _machine("cpu", t)) for t in (5_000, 45_000))
    assert (slow.factor, fast.factor) == (1, 4) and "45,000 against 10,000" in fast.source
    assert seedplan.machine_speedup(plan, _machine("smoke", 90_000)).factor == 1  # other profile
    assert seedplan.machine_speedup(plan, {}).factor == 1
    assert seedplan.spare_seconds(plan, 1) == 120 and seedplan.spare_seconds(plan, 4) == 60 * 32
    at_reference = seedplan.choose(plan, seedplan.spare_seconds(plan, slow.factor))
    on_fast = seedplan.choose(plan, seedplan.spare_seconds(plan, fast.factor))
    assert at_reference[0].trained == 4  # one more seed of both matched models
    assert on_fast[0].trained == on_fast[0].needed > at_reference[0].trained  # the headline met
    monkeypatch.setenv(seedplan.SPEEDUP_ENV, "16")
    assert seedplan.machine_speedup(plan, _machine("cpu", 5_000)) == seedplan.Speedup(
        16, f"pinned by {seedplan.SPEEDUP_ENV}"
    )
    for bad in ("3", "0", "fast"):
        monkeypatch.setenv(seedplan.SPEEDUP_ENV, bad)
        with pytest.raises(ValueError, match="power of two"):
            seedplan.machine_speedup(plan, {})
    with pytest.raises(ValueError, match="positive"):
        seedplan.speedup_of(0, 10_000)


def test_the_reference_speed_follows_the_library(monkeypatch):
    """A machine twice the reference with the old step, timed with a step 2× faster there too,
    is the reference's speed, not twice it."""
    monkeypatch.delenv(seedplan.SPEEDUP_ENV, raising=False)
    plan = _plan(10)
    assert seedplan.reference_speed(plan) == 10_000  # no library_speedup recorded: 1
    plan["budget"]["library_speedup"] = {"factor": 2.0}
    assert seedplan.reference_speed(plan) == 20_000
    speedup = seedplan.machine_speedup(plan, _machine("cpu", 20_000))
    assert speedup.factor == 1 and "20,000 against 20,000" in speedup.source
    plan["budget"]["library_speedup"] = {"factor": 0}
    with pytest.raises(ValueError, match="library_speedup"):
        seedplan.reference_speed(plan)


def test_the_plan_plans_the_headline_with_the_largest_noise_the_book_measured():
    """The recipe study's 16 paired seeds (this project's CPU) and the GPU study's 64 matched and
    32 flagship ones under today's recipe measure the headline's noise too; the plan must not
    plan with less (it would promise an MDE the seeds cannot reach)."""
    from ropebook import recipes

    files = {"matched": [recipes.load(), recipes.load(recipes.GPU_FILES["matched"])],
             "flagship": [recipes.load(recipes.GPU_FILES["flagship"])]}  # fmt: skip
    for regime, studies in files.items():
        planned = seedplan.measured_sd(regime, recipes.ARMS)
        for study in studies:
            today = recipes.compare(study, seeds=recipes.seeds_of(study, "today"))[0]
            assert planned.exact and planned.sd >= round(today.paired_sd.value, 2), regime


def test_chapters_minutes_are_set_aside_and_follow_the_machine(monkeypatch):
    plan = _plan(10) | {"chapter_minutes": {"p_rope": 1.5},
                        "chapter_seconds_per_model": {"lesson": 30}}  # fmt: skip
    assert seedplan.spare_seconds(plan, 1) == 60 * (10 - 1.5)  # what the plan itself may spend
    assert seedplan.spare_seconds(plan, 2) == 60 * 2 * (10 - 1.5)
    plan["budget"]["build_minutes_measured"] = 9.4  # room for 0.6 of the chapters' 1.5 minutes
    assert seedplan.chapters_share(plan, 1) == pytest.approx(0.4)
    assert seedplan.spare_seconds(plan, 1) == pytest.approx(0)  # the chapters come first
    assert seedplan.chapters_share(plan, 2) == 1 and seedplan.spare_seconds(
        plan, 2
    ) == pytest.approx(60 * 7.6)
    plan["budget"]["build_minutes_measured"] = 12  # over the budget already: nothing to buy
    assert seedplan.chapters_share(plan, 1) == 0 and seedplan.spare_seconds(plan, 1) < 0
    monkeypatch.setenv(seedplan.SPEEDUP_ENV, "4")
    budget = seedplan.chapter_budget("p_rope", "lesson", "cpu", plan)
    assert (budget.seconds, budget.seconds_per_model) == (60 * 1.5 * 4, 30.0)
    assert "1.5 reference minutes × 4" in budget.source and "share" not in budget.source
    monkeypatch.setenv(seedplan.SPEEDUP_ENV, "1")
    assert seedplan.chapter_budget("p_rope", "lesson", "cpu", plan).seconds == 0  # no room at 1×
    assert seedplan.chapter_budget("p_rope", "lesson", "smoke", plan).seconds == 0  # not planned
    assert seedplan.chapter_budget("decay", "lesson", "cpu", plan).seconds == 0


def test_a_comparison_on_both_corpora_pays_for_both_and_raises_both(tmp_path):
    plan = _plan(1000)
    plan["seconds_per_model"]["lesson"], plan["base_seeds"]["lesson"] = 20, 3
    plan["comparisons"].insert(0, {
        "id": "l", "regime": "lesson", "models": ["q", "n"], "domains": ["shakespeare", "python"],
        "sd": 2.4, "target_mde": 2.0, "headline": False,
        "sd_range": [2.4, 2.4], "source": "test",
    })  # fmt: skip
    lesson = seedplan.choose(plan)[0]
    needed = power.seeds_needed(2.4, 2.0)
    assert lesson.met and lesson.trained == needed and lesson.domains == ("shakespeare", "python")
    assert lesson.added_seconds == 20 * 2 * 2 * (needed - 3)  # two models on two corpora
    counts = seedplan.seed_counts(seedplan.choose(plan))
    assert counts["lesson", "q", "python"] == counts["lesson", "n", "shakespeare"] == needed
    assert ("matched", "p", "python") not in counts  # the matched ones name no corpus: Shakespeare
    plan["comparisons"][0]["domains"] = ["wiki"]
    path = tmp_path / "plan.json"
    path.write_text(__import__("json").dumps(plan))
    with pytest.raises(ValueError, match="domains from"):
        seedplan.load_plan(path)


def test_a_minimum_is_bought_before_cheaper_comparisons_earlier_in_the_file():
    plan = _plan(10)  # 600 s
    cheap = {"id": "l", "regime": "matched", "models": ["q", "n"], "sd": 1.0,
             "target_mde": 2.0, "headline": False, "sd_range": [1.0, 1.0],
             "source": "test"}  # fmt: skip
    plan["comparisons"].insert(0, cheap)
    assert power.seeds_needed(1.0, 2.0) == 5  # 2 models × 2 seeds × 60 s = 240 s
    assert seedplan.choose(plan)[0].trained == 5  # first in the file: served first
    plan["comparisons"][1]["min_seeds"] = 7  # the headline's floor: 2 × 4 × 60 s = 480 s
    first, headline, *_ = seedplan.choose(plan)
    assert first.trained == 3 and first.added_seconds == 0  # 120 s left: not all of its need
    assert (headline.trained, headline.added_seconds) == (8, 600)  # its floor, then what is left
    plan["comparisons"][1]["min_seeds"] = 6  # 360 s: 240 s left, exactly the cheap one's need
    first, headline, *_ = seedplan.choose(plan)
    assert (first.trained, headline.trained) == (5, 6)


def test_a_comparison_in_its_own_units_plans_seeds_alike_and_stays_out_of_perplexity_sds():
    plan = _plan(1000) | {"units": seedplan.PERPLEXITY_PERCENT}
    plan["seconds_per_model"]["lesson"], plan["base_seeds"]["lesson"] = 20, 3
    one_model = {"id": "domains", "regime": "lesson", "models": ["r"], "units": "correlation",
                 "sd": 0.024, "sd_range": [0.024, 0.036], "target_mde": 0.043,
                 "headline": False, "source": "test"}  # fmt: skip
    plan["comparisons"].insert(0, one_model)
    first = seedplan.choose(plan)[0]
    assert first.needed == power.seeds_needed(0.024, 0.043) == 5  # s.d. / target alone decide
    assert first.met and first.added_seconds == 20 * 2 and first.units == "correlation"
    assert seedplan.choose(plan)[1].units == seedplan.PERPLEXITY_PERCENT  # the plan's default
    assert seedplan.measured_sd("lesson", ("r",), plan) is None  # a correlation is not a % s.d.
    assert seedplan.measured_sd("matched", ("p", "r"), plan).sd == 0.43
    (row,) = show.plan_rows([first], {})
    assert row["comparison"] == "domains (units: correlation)"
    assert (row["paired s.d. (book)"], row["target MDE"]) == ("0.024 (0.024–0.036)", "0.043")
    assert row["MDE planned"] == f"{power.min_detectable_effect(0.024, 5):.3f}" and "%" not in str(
        row
    )


def test_the_plan_buys_the_rope_seeds_that_the_frequency_chapters_domain_reading_needs():
    """The frequency-usage chapter reads RoPE on the seeds the plan adds (its Fig. 19 claim, a
    correlation); the plan must afford that entry's whole need on the reference machine, and the
    chapters that pair every Table 2 model on the profile's seeds must not take it up."""
    plan = seedplan.load_plan()
    (domains,) = [c for c in seedplan.choose(plan) if c.units != seedplan.PERPLEXITY_PERCENT]
    assert domains.models == ("rope",) and domains.domains == ("shakespeare",) and domains.met
    assert seedplan.seed_counts([domains])["lesson", "rope", "shakespeare"] == domains.trained > 3
    text = (REPO_ROOT / "chapters" / "frequency_usage.py").read_text()
    assert "seeds = zoo.seeds_for(model_name, profile=profile)" in text
    for chapter in ("p_rope", "p_sweep"):
        text = (REPO_ROOT / "chapters" / f"{chapter}.py").read_text()
        assert 'seeds = zoo.seeds_for("rope", profile=profile, planned=False)' in text


def test_the_plan_expects_each_comparison_open_with_one_minus_its_power():
    roomy = seedplan.choose(_plan(1000))
    expected = sum(1 - power.t_test_power(c.target / c.sd, c.trained) for c in roomy)
    assert seedplan.expected_open(roomy) == pytest.approx(expected)
    # a comparison given all it needs is open at most 1 - 0.8 of the time
    assert all(1 - power.t_test_power(c.target / c.sd, c.trained) <= 0.2 for c in roomy if c.met)
    # fewer seeds, less power: more open verdicts expected
    assert seedplan.expected_open(seedplan.choose(_plan(3))) > seedplan.expected_open(roomy)
    real = seedplan.choose(seedplan.load_plan())
    assert 0 < seedplan.expected_open(real) < len(real)
