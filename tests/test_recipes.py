"""The recipe comparison: paired s.d.s and their ratios against closed forms, stale specs named,
a broken results file refused."""

from __future__ import annotations

import dataclasses
import json

import jax
import numpy as np
import pytest
from scipy import stats

from ropebook import recipes, studies, zoo
from ropebook.analysis import ablation
from ropebook.present import recipes as show_recipes
from ropebook.stats import anatomy


def synthetic(rng: np.random.Generator, n: int = 8, evals: int = 5, confirm: int = 0) -> dict:
    """A results file whose recipes differ only in how much the arms' losses move per seed (and
    ``confirm`` fresh seeds of today's and half the peak LR after the ``n`` discovery seeds)."""
    runs = []
    noises = {"cosine to 10 %": 0.02, "cosine to 0": 0.01, "half the peak LR": 0.015,
              "twice the batch": 0.03}  # fmt: skip
    for schedule, noise in noises.items():
        for model, offset in zip(recipes.ARMS, (0.0, 0.01), strict=True):
            fresh = range(n, n + confirm) if schedule in (recipes.TODAY, "half the peak LR") else ()
            for seed in (*range(n), *fresh):
                last = 3.0 + offset + noise * rng.standard_normal()
                runs.append({
                    "label": schedule, "schedule": schedule,
                    "overrides": recipes.overrides(schedule, "smoke", "matched"), "model": model, "seed": seed, "spec_hash": "x",
                    "last_loss": last, "average_loss": last - 0.01 + 0.002 * rng.standard_normal(),
                    "tail_losses": list(last + 0.003 * rng.standard_normal(evals)),
                })  # fmt: skip
    return {"format": studies.FORMAT, "study": recipes.STUDY, "profile": "smoke",
            "regime": "matched", "domain": recipes.DOMAIN, "arms": list(recipes.ARMS),
            "seeds": list(range(n + confirm)), "runs": runs}  # fmt: skip


def test_compare_matches_closed_forms():
    results = synthetic(np.random.default_rng(0))
    compared = {r.recipe: r for r in recipes.compare(results)}
    assert list(compared) == list(recipes.RECIPES)
    for recipe, result in compared.items():
        a, b = recipes.losses(results, recipe)
        differences = 100 * (a - b)
        sd = np.std(differences, ddof=1)
        assert result.paired_sd.value == pytest.approx(sd)
        low = sd * np.sqrt(7 / stats.chi2.ppf(0.975, 7))
        assert result.paired_sd.low == pytest.approx(low)
        half = stats.t.ppf(0.975, 7) * sd / np.sqrt(8)
        mean = np.mean(differences)
        assert result.difference.high == pytest.approx(100 * np.expm1((mean + half) / 100))
        assert result.sd_ratio.value == pytest.approx(sd / compared["today"].paired_sd.value)
        assert (result.jitter is None) == (recipes.RECIPES[recipe][1] == "average")
        assert result.mean_loss[recipes.ARMS[0]] == pytest.approx(np.mean(a))
    assert compared["today"].sd_ratio.value == pytest.approx(1)
    today = 100 * np.subtract(*recipes.losses(results, "today"))
    for result in compared.values():
        differences = 100 * np.subtract(*recipes.losses(results, result.recipe))
        assert result.sd_ratio == anatomy.paired_sd_ratio(differences, today)
    # the synthetic tails jitter by 0.3 % around each run's last loss
    assert 0.15 < compared["today"].jitter.value < 0.5


def test_compare_reads_the_schedules_measured():
    results = synthetic(np.random.default_rng(4))
    results["runs"] = [r for r in results["runs"] if r["schedule"] != "twice the batch"]
    assert recipes.measured_recipes(results) == [
        r for r in recipes.RECIPES if r != "twice the batch"
    ]
    assert [r.recipe for r in recipes.compare(results)] == recipes.measured_recipes(results)


def test_stale_names_runs_whose_spec_moved():
    results = synthetic(np.random.default_rng(1), n=3)
    for run in results["runs"]:
        run["spec_hash"] = zoo.spec_hash(
            run["model"], seed=run["seed"], profile="smoke", regime="matched",
            **recipes.overrides(run["schedule"], "smoke", "matched"),
        )  # fmt: skip
    assert studies.stale(results) == []
    results["runs"][0]["spec_hash"] = "0" * 16
    assert studies.stale(results) == [f"{recipes.ARMS[0]} seed 0 (cosine to 10 %)"]
    today = zoo.spec_hash("rope", profile="smoke", regime="matched")
    assert today not in {r["spec_hash"] for r in results["runs"]}  # averaging is in the spec


def test_results_file_round_trips_and_bad_ones_fail_clearly(tmp_path):
    results = synthetic(np.random.default_rng(2), n=3)
    path = recipes.write(
        results["runs"], profile="smoke", regime="matched", path=tmp_path / "r.json"
    )
    loaded = recipes.load(path)
    assert loaded["runs"] == results["runs"] and loaded["seeds"] == [0, 1, 2]
    assert (
        loaded["command"] == "python -m ropebook recipes --profile smoke --regime matched --seeds 3"
    )
    assert {"cpu", "versions"} <= set(loaded["machine"]) and loaded["commit"]
    n_devices = len(jax.devices())
    assert loaded["machine"]["devices"] == f"{n_devices} × cpu"  # where the runs trained
    cpu, cores = loaded["machine"]["cpu"], loaded["machine"]["cores"]
    assert studies.measured_on(loaded) == (
        f"{cpu} ({cores} cores; JAX on {n_devices} × cpu), {loaded['measured']}"
    )
    del loaded["machine"]["devices"]  # a file from before devices were kept: the CPU alone
    assert studies.measured_on(loaded) == f"{cpu} ({cores} cores), {loaded['measured']}"
    with pytest.raises(ValueError, match="no results of the recipes study"):
        recipes.load(tmp_path / "missing.json")
    (tmp_path / "bad.json").write_text("{")
    with pytest.raises(ValueError, match="not valid JSON"):
        recipes.load(tmp_path / "bad.json")
    (tmp_path / "other.json").write_text(json.dumps(loaded | {"study": "layout_language"}))
    with pytest.raises(ValueError, match="of the recipes study"):
        recipes.load(tmp_path / "other.json")
    with pytest.raises(ValueError, match="lacks"):
        recipes.write([{"model": "rope"}], profile="smoke", regime="matched", path=tmp_path / "x")


def test_confirmation_reads_the_fresh_seeds_only(tmp_path):
    results = synthetic(np.random.default_rng(5), n=8, confirm=6)
    path = recipes.write(
        results["runs"], profile="smoke", regime="matched", path=tmp_path / "r.json",
        confirmation=("half the peak LR", tuple(range(8, 14))),
    )  # fmt: skip
    loaded = recipes.load(path)
    assert loaded["discovery_seeds"] == list(range(8)) and loaded["seeds"] == list(range(14))
    assert loaded["command"].endswith("--seeds 8 --confirm 'half the peak LR' --confirm-seeds 6")
    # discovery: every recipe on seeds 0-7, as if the fresh seeds were not there
    discovery = recipes.compare(loaded)
    assert [r.recipe for r in discovery] == list(recipes.RECIPES)
    assert {r.n_seeds for r in discovery} == {8}
    a, b = recipes.losses(loaded, "today")
    assert len(a) == 8
    # confirmation: today's and the candidate on seeds 8-13, their ratio on those seeds alone
    today, candidate = recipes.confirmation(loaded)
    assert (today.recipe, candidate.recipe, candidate.n_seeds) == ("today", "half the peak LR", 6)
    fresh = list(range(8, 14))
    assert recipes.measured_recipes(loaded, fresh) == ["today", "tail average", "half the peak LR"]
    differences = [100 * np.subtract(*recipes.losses(loaded, r, fresh)) for r in ("today",
                   "half the peak LR")]  # fmt: skip
    assert candidate.sd_ratio == anatomy.paired_sd_ratio(differences[1], differences[0])
    assert candidate.paired_sd.value == pytest.approx(np.std(differences[1], ddof=1))
    assert recipes.confirmation(synthetic(np.random.default_rng(6), n=3)) is None
    # the headline on every seed each recipe has, as the p_rope_headline chapter tabulates its own runs
    assert recipes.seeds_of(loaded, "half the peak LR") == list(range(14))
    assert recipes.seeds_of(loaded, "twice the batch") == list(range(8))
    names = {"p-rope-0.75": "p", "rope": "r"}
    rows = show_recipes.headline_rows(loaded, names, {"p-rope-0.75": 10.0, "rope": 10.1})
    assert [r["recipe"] for r in rows] == ["today", "half the peak LR"]
    a, b = (np.exp(x) for x in recipes.losses(loaded, "half the peak LR", list(range(14))))
    expected = ablation.compare("p", a, "r", b, log=True)
    assert rows[1]["seeds"] == 14 and rows[1]["our paired Δ"] == expected.difference.format(2)
    assert rows[1]["paper Δ"] == "-0.99 %" and loaded["measured"] in rows[1]["measured on"]
    inside = expected.difference.low <= -0.99 <= expected.difference.high
    assert rows[1]["paper Δ inside"] == ("yes" if inside else "no: excluded")
    assert rows[1]["measured on"] == f"{loaded['machine']['devices']}, {loaded['measured']}"


def test_the_cli_refuses_bad_arguments_before_training(capsys):
    for argv, message in (
        (["--seeds", "2"], "at least 3"),
        (["--confirm", "half the peak LR", "--confirm-seeds", "1"], "at least 3"),
        (["--schedules", "cosine to 0"], "must include today's"),
        (["--confirm", recipes.TODAY], "invalid choice"),
    ):
        with pytest.raises(SystemExit):
            recipes.main(["--profile", "smoke", *argv])
        assert message in capsys.readouterr().err


def test_a_candidate_is_adopted_only_if_confirmed_and_as_good():
    assert show_recipes.adoption_text("held", 0.4).startswith("The candidate qualifies")
    assert show_recipes.adoption_text("held", -0.9).startswith("The candidate qualifies")
    costly = show_recipes.adoption_text("held", 5.7)
    assert "keeps training today's recipe" in costly and "+5.7 %" in costly
    assert "not established" not in costly
    both = show_recipes.adoption_text("cannot decide", 5.7)
    assert "not established" in both and "+5.7 %" in both


@pytest.mark.parametrize("regime", zoo.TAIL_REGIMES)
def test_gpu_headline_files_are_current_and_say_where_they_ran(regime):
    """The headline's GPU results (tools/gpu_headline.sh): the cpu profile's specs as the code
    trains them today, both arms on every seed, trained on a GPU at float32 precision."""
    results = recipes.load(recipes.GPU_FILES[regime])
    assert studies.stale(results) == []
    assert (results["profile"], results["regime"], results["schedules"]) == (
        "cpu", regime, [recipes.TODAY],
    )  # fmt: skip
    assert "NVIDIA" in results["machine"]["devices"]
    assert results["machine"]["matmul_precision"] == "highest"
    assert {p["platform"] for r in results["runs"] for p in r["provenance"]} == {"gpu"}
    a, b = recipes.losses(results, "today", results["seeds"])
    assert len(a) == len(b) == len(results["seeds"]) >= 32
    assert results["command"].startswith("OUT=data/results ")
    assert results["command"].endswith(f"bash tools/gpu_headline.sh {regime}")
    tails = recipes.tails(results, "today", results["seeds"])  # what the methods anatomy reads
    assert all(t.shape == (len(a), 5) for t in tails)
    assert np.array_equal(tails[0][:, -1], a) and np.array_equal(tails[1][:, -1], b)  # final


def test_same_run_differences_pair_one_spec_across_files():
    first = synthetic(np.random.default_rng(6), n=4)
    first |= {"machine": {"cpu": "a CPU", "devices": "2 × cpu"}, "measured": "2026-11-27"}
    second = json.loads(json.dumps(first))
    second["machine"]["devices"] = "1 × NVIDIA H200"
    second["runs"] = [r for r in second["runs"] if r["seed"] < 3]  # seeds 0-2 in both
    for run in second["runs"]:
        run["last_loss"] += 0.01 * (run["seed"] + 1)
    differences = recipes.same_run_differences(first, second)
    assert np.allclose(np.sort(differences), [0.01, 0.01, 0.02, 0.02, 0.03, 0.03])
    rows = show_recipes.same_spec_rows(first, second, {a: a for a in recipes.ARMS})
    assert rows[0]["runs"] == 6 and [r["runs"] for r in rows[1:]] == [3, 3]
    second["runs"][0]["spec_hash"] = "other"
    with pytest.raises(ValueError, match="different spec hashes"):
        recipes.same_run_differences(first, second)


def test_headline_row_says_whether_the_paper_gap_is_inside():
    rng = np.random.default_rng(7)
    b = np.exp(3 + 0.01 * rng.standard_normal(16))
    paper = {"p-rope-0.75": 99.52, "rope": 100.0}  # a gap of −0.48 %
    for shift, inside in ((-0.0048, "yes"), (0.02, "no: excluded")):
        a = b * np.exp(shift + 0.002 * (-1.0) ** np.arange(16))  # mean: the shift exactly
        c = ablation.compare("0.75-RoPE", a, "RoPE", b, 0.95, log=True)
        row = show_recipes.headline_row("runs", "x", c, recipes.ARMS, paper, "here")
        assert (row["runs"], row["paper Δ inside"], row["measured on"]) == ("x", inside, "here")
        assert row["paper Δ"] == "-0.48 %" and "paper's order" not in row


def test_gpu_script_writes_the_files_the_book_reads_and_refuses_bad_stages(tmp_path):
    import subprocess

    from ropebook import paths

    script = paths.REPO_ROOT / "tools" / "gpu_headline.sh"
    text = script.read_text()
    for regime, path in recipes.GPU_FILES.items():  # the script's files are the book's
        assert f'--out "$OUT/{path.name}"' in text and f"gpu_headline.sh {regime}" in text
    run = subprocess.run(["bash", script, "nonsense"], env={"OUT": str(tmp_path), "PATH": "/usr/bin:/bin"},
                         capture_output=True, text=True, cwd=paths.REPO_ROOT)  # fmt: skip
    assert run.returncode == 2 and "unknown stage nonsense" in run.stderr
    run = subprocess.run(["bash", script, "matched"], env={"PATH": "/usr/bin:/bin"},
                         capture_output=True, text=True, cwd=paths.REPO_ROOT)  # fmt: skip
    assert run.returncode != 0 and "set OUT" in run.stderr


def test_study_text_names_the_studys_seeds_device_and_reading():
    results = recipes.load(recipes.GPU_FILES["matched"])
    c = show_recipes.study_comparison(results, "today", {a: a for a in recipes.ARMS})
    text = show_recipes.study_text(c, results)
    assert f"{len(results['seeds'])} paired seeds on {results['machine']['devices']}" in text
    assert c.difference.format(2) in text and f"{c.min_detectable():.2f} %" in text
    verdict = show_recipes.ordering_verdict(c)  # at the margin: the matched study is bounded
    assert verdict == "bounded" and f": {verdict}" in text


@pytest.mark.parametrize("regime", zoo.TAIL_REGIMES)
def test_study_values_hold_the_target_and_the_paper_gap_to_the_interval(regime):
    results = recipes.load(recipes.GPU_FILES[regime])
    c = show_recipes.study_comparison(results, "today", {a: a for a in recipes.ARMS})
    paper = ablation.PAPER_TABLE2["Wiki"]
    values = show_recipes.study_values(c, results, paper)
    assert values["target"] == f"{_plan_target(regime):g} %"
    assert values["meets"] == ("within" if c.min_detectable() <= _plan_target(regime) else "above")
    gap = 100 * (paper[recipes.ARMS[0]] / paper[recipes.ARMS[1]] - 1)
    assert values["paper_gap"] == f"{gap:+.2f} %"
    assert values["paper"] == (
        "inside" if c.difference.low <= gap <= c.difference.high else "outside"
    )
    assert (
        values["seeds"] == len(results["seeds"]) and "tools/gpu_headline.sh" in values["provenance"]
    )


def _plan_target(regime: str) -> float:
    from ropebook import seedplan

    (entry,) = [p for p in seedplan.load_plan()["comparisons"]
                if p["regime"] == regime and p["models"] == list(recipes.ARMS)]  # fmt: skip
    return entry["target_mde"]


# ---------------------------------------------------------------- the kept GPU studies decide


def test_margin_is_the_papers_headline_gap_rounded_up():
    wiki = ablation.PAPER_TABLE2["Wiki"]
    gap = 100 * abs(wiki["p-rope-0.75"] / wiki["rope"] - 1)  # 0.48 %
    assert gap <= recipes.MARGIN < gap + 0.05


def paired(differences, base: float = 30.0) -> ablation.Comparison:
    """A log-scale comparison whose seeds' differences of losses are ``differences`` (nats)."""
    d = np.asarray(differences, np.float64)
    b = base * np.exp(0.01 * np.arange(len(d)))
    return ablation.compare("A", b * np.exp(d), "B", b, log=True)


ORDERINGS = {  # per-seed loss differences (nats) reaching each verdict at the 0.5 % margin
    "held": [-0.02, -0.021, -0.019, -0.02],  # A lower, well outside 0
    "not held": [0.02, 0.021, 0.019, 0.02],
    "bounded": [0.001, -0.001] * 8,  # contains 0, within ±0.5 %
    "cannot decide": [0.05, -0.05, 0.04, -0.03],  # contains 0, reaches past ±0.5 %
}


@pytest.mark.parametrize("verdict", list(ORDERINGS))
def test_ordering_verdict_reaches_every_verdict(verdict):
    c = paired(ORDERINGS[verdict])
    assert show_recipes.ordering_verdict(c) == verdict
    if verdict == "bounded":  # without a margin the same data only bound the effect
        assert show_recipes.ordering_verdict(c, None) == "cannot decide"


def test_an_ordering_on_one_seed_is_open_not_untestable():
    assert show_recipes.ordering_verdict(paired([-0.5])) == "cannot decide"  # no interval


def test_seeds_to_bound_fit_the_interval_inside_the_margin():
    c = paired([0.012, -0.008, 0.01, -0.006, 0.004, -0.01])
    n = show_recipes.seeds_to_bound(c)
    values = 100 * np.log1p(np.asarray(c.difference.values) / 100)
    room = recipes.MARGIN - abs(values.mean())
    half = stats.t.ppf(0.975, n - 1) * np.std(values, ddof=1) / np.sqrt(n)
    assert half <= room < stats.t.ppf(0.975, n - 2) * np.std(values, ddof=1) / np.sqrt(n - 1)
    assert show_recipes.seeds_to_bound(paired([0.01, 0.011, 0.009])) is None  # mean past 0.5 %
    assert show_recipes.seeds_to_bound(paired([0.001])) is None


def test_gpu_files_are_the_cpu_profiles_models_and_decide_the_headlines():
    """The kept GPU studies trained the cpu profile's models (their specs differ only in the tail
    average each run keeps, which leaves the weights trained unchanged): matched 0.75-RoPE −
    RoPE is bounded within the margin, the flagship's interval reaches past it."""
    names = {"p-rope-0.75": "0.75-RoPE", "rope": "RoPE"}
    expected = {"matched": ("bounded", 64), "flagship": ("cannot decide", 32)}
    for regime, path in recipes.GPU_FILES.items():
        results = recipes.load(path)
        differences = recipes.spec_differences(results, "cpu")
        assert set(differences) == {"average_share"} and recipes.same_model(differences)
        assert not recipes.same_model(recipes.spec_differences(results, "smoke"))
        c = show_recipes.study_comparison(results, "today", names)
        record = show_recipes.study_record(c, results, c, differences)
        assert (record["evidence"], record["seeds"]) == expected[regime]
        for part in ("NVIDIA H200", results["measured"], results["commit"], "seeds"):
            assert part in record["basis"]
        assert "same models" in record["basis"]


def test_the_regimes_noise_rests_on_a_kept_study_of_the_same_models_both_ways():
    """ "The paired s.d. is at most 1 %" is decided by a kept study's chi-square interval where it
    trained this build's models (held, not held or open by its own seeds, this build beside);
    a study of other models decides nothing (``None``: the build's runs decide)."""
    results = recipes.load(recipes.GPU_FILES["matched"])
    same = recipes.spec_differences(results, "cpu")
    rng = np.random.default_rng(3)
    noise = rng.standard_normal(64)
    noise = (noise - noise.mean()) / noise.std(ddof=1)  # s.d. exactly 1 before scaling

    def record(sd_percent, seeds=64, differences=same):
        c = paired(list(sd_percent / 100 * noise[:seeds]))
        return show_recipes.noise_record((1.15, 3), c, results, differences)

    quiet, loud = record(0.7), record(1.4)
    assert quiet["evidence"] == "held" and loud["evidence"] == "not held"
    assert record(1.0, seeds=8)["evidence"] == "cannot decide"
    assert loud["seeds"] == 64 and "NVIDIA H200" in loud["basis"]
    sd = 100 * np.std(np.log1p(np.asarray(paired(list(0.014 * noise)).difference.values) / 100),
                      ddof=1)  # fmt: skip
    assert f"{sd:.2f} % of perplexity [" in loud["measured"]
    assert "this build: median 1.15 % [0.60, 7.2" in loud["measured"]
    assert record(1.4, differences=recipes.spec_differences(results, "smoke")) is None


def test_arm_differences_leave_out_the_builds_seeds():
    results = synthetic(np.random.default_rng(1))
    seeds, d = recipes.arm_differences(results, exclude=(0, 1, 2))
    assert seeds == list(range(3, 8))
    a, b = recipes.losses(results, "today", seeds)
    np.testing.assert_allclose(d, a - b)


def test_agreement_both_ways():
    rng = np.random.default_rng(0)
    kept = 0.01 * rng.standard_normal(60)
    same = studies.agreement(kept[:8] * 1.1 + 0.001, kept[8:])
    assert same.agree and same.overlap and same.verdict() == "held"
    welch = stats.ttest_ind(kept[8:], kept[:8] * 1.1 + 0.001, equal_var=False)
    assert same.p_value == pytest.approx(welch.pvalue)
    apart = studies.agreement(kept[:8] + 0.05, kept[8:])  # the build 5 % above the study
    assert not apart.agree and apart.verdict() == "not held"
    assert apart.difference[2] < 0  # study − build, wholly below 0
    one = studies.agreement([0.01], kept)
    assert not one.testable and one.verdict() == "cannot decide"  # measured, no interval


def test_agreement_of_a_build_with_a_kept_study_and_its_verdict():
    results = synthetic(np.random.default_rng(2), n=12)
    a, b = recipes.losses(results, "today", list(range(4)))
    here = ablation.compare("0.75-RoPE", np.exp(a), "RoPE", np.exp(b), log=True)
    agreement = show_recipes.agreement_of(here, range(4), results)
    assert (agreement.n_here, agreement.n_kept) == (4, 8)  # the study's other seeds only
    assert agreement.verdict() == "held"  # the weak test: the interval contains 0
    # the finding's rule is the equivalence test: 4 seeds at the study's 2 % s.d. could not fit
    # the margin even at a difference of 0, so the open test is null by design
    assert agreement.equivalence(recipes.MARGIN) == "cannot decide"
    assert not agreement.can_show_agreement(recipes.MARGIN)
    assert show_recipes.agreement_verdict(agreement, {}) == "uninformative here"
    # with seeds enough to show agreement, the same open interval cannot decide
    roomy = dataclasses.replace(agreement, n_here=400, n_kept=400, sd_kept=0.01,
                                difference=(0.1, -0.3, 0.6))  # fmt: skip
    assert roomy.can_show_agreement(recipes.MARGIN)
    assert show_recipes.agreement_verdict(roomy, {}) == "cannot decide"
    other = {"n_heads": (2, 4)}
    assert show_recipes.agreement_verdict(agreement, other) == "uninformative here"
    apart = ablation.compare("0.75-RoPE", np.exp(a + 0.2), "RoPE", np.exp(b), log=True)
    disagreement = show_recipes.agreement_of(apart, range(4), results)
    assert show_recipes.agreement_verdict(disagreement, {}) == "not held"
    rows = show_recipes.agreement_rows({"matched": (disagreement, {})})
    assert rows[0][f"agree within ±{recipes.MARGIN:g} %"] == "not held"  # shown, not hidden
    assert "do not overlap" in show_recipes.agreement_text(disagreement)


def test_seeds_grown_names_the_comparisons_whose_seeds_were_bought_on_their_data():
    from ropebook.analysis.ablation.seeds import seeds_grown

    before = {"x": paired([0.01, 0.02]), "y": paired([0.01, 0.02])}
    after = {"x": paired([0.01, 0.02, 0.0, 0.01]), "y": paired([0.01, 0.02])}
    assert seeds_grown(before, after) == ["x"]
