"""The kept study of the decay chapter's ``decay.over_training`` (``ropebook.decay_training_study``):
the least-decaying layer of the flagship RoPE and NoPE models over training, on many seeds. It
reads each model as the chapter does, round-trips its file, names a broken one, decides only
where its runs are the chapter's models read with the chapter's settings on the seeds its plan
called for, its rebuilt trajectories reach every verdict on constructed data, and its plan is
the pilot's numbers through ``power.seeds_needed``."""

from __future__ import annotations

import json
import math
import re

import numpy as np
import pytest
from scipy import stats

from ropebook import claims, data, pipeline, studies, zoo
from ropebook import decay_training_study as study
from ropebook.analysis import decay
from ropebook.analysis import dynamics as dy
from ropebook.present import dynamics as show_dy
from ropebook.stats import power

SEEDS = tuple(range(study.SEEDS))  # the plan's seeds, 0..31
STAT = study.STATISTIC
STEPS = (0, 18, 35, 67, 130, 250, 483, 932, 1800)  # the cpu flagship's snapshots
TOKENS = tuple(2048 * s for s in STEPS)
COMMAND = (
    f"python -m ropebook decay_training_study --profile cpu --seeds {study.SEEDS} "
    "--n-windows 64 --window-seed 0 --trained-short 8"
)


def records(seeds=SEEDS, change=None, profile="smoke"):
    """Synthetic runs whose spec hashes are the ones the code trains at ``profile``; each run's
    value moves linearly from about −1 by ``change(model, seed)`` (default: the pilot's means,
    RoPE +2.5 and NoPE +0.4, with seed noise)."""
    rng = np.random.default_rng(3)
    default = {"rope": 2.5, "nope": 0.4}
    runs = []
    for s in seeds:
        for name in study.MODELS:
            start = -1 + 0.1 * rng.standard_normal()
            moved = (
                default[name] + 0.5 * rng.standard_normal() if change is None else change(name, s)
            )
            values = start + moved * np.linspace(0, 1, len(STEPS))
            runs.append({
                "model": name, "domain": "shakespeare", "seed": s, "overrides": {},
                "spec_hash": zoo.spec_hash(name, seed=s, profile=profile, regime="flagship"),
                "steps": list(STEPS), "tokens": list(TOKENS),
                "values": [float(f"{v:.6g}") for v in values],
            })  # fmt: skip
    return runs


def written(tmp_path, runs, profile="smoke", **about):
    path = tmp_path / f"{study.STUDY}.json"
    studies.write(
        study.STUDY, runs, profile=profile, regime="flagship", domain="shakespeare",
        command="python -m ropebook decay_training_study", path=path, models=list(study.MODELS),
        **(study.DEFAULTS | about),
    )  # fmt: skip
    return study.load(path)


def deciding(results, change=None):
    change = change or {}
    return study.deciding_runs(
        results, change.get("profile", "smoke"), regime=change.get("regime", "flagship"),
        **{k: change.get(k, v) for k, v in study.DEFAULTS.items()},
    )  # fmt: skip


# ---------------------------------------------------------------- the file


def test_the_file_round_trips_into_the_chapters_trajectories(tmp_path):
    runs = records()
    results = written(tmp_path, runs)
    assert results["runs"] == runs and studies.stale(results) == []
    assert {k: results[k] for k in study.SETTINGS} == study.DEFAULTS
    built = study.trajectories(results)
    assert list(built) == list(study.MODELS)
    for name in study.MODELS:
        trajectory = built[name][STAT]
        assert trajectory.seeds == SEEDS and trajectory.model == name
        assert (trajectory.toward, trajectory.reference) == (-1, 0.0)  # the chapter's
        np.testing.assert_array_equal(trajectory.steps, STEPS)
        np.testing.assert_array_equal(trajectory.tokens, TOKENS)
        by_seed = {r["seed"]: r["values"] for r in runs if r["model"] == name}
        np.testing.assert_array_equal(trajectory.values, [by_seed[s] for s in SEEDS])


def test_the_trajectories_pair_the_seeds_every_model_has(tmp_path):
    runs = [r for r in records(seeds=(0, 1, 2, 3)) if (r["model"], r["seed"]) != ("nope", 3)]
    built = study.trajectories(written(tmp_path, runs))
    assert built["rope"][STAT].seeds == built["nope"][STAT].seeds == (0, 1, 2)


def _raw(tmp_path, runs, about):
    path = tmp_path / f"{study.STUDY}.json"
    path.write_text(json.dumps({
        "format": studies.FORMAT, "study": study.STUDY, "profile": "smoke", "regime": "flagship",
        "domain": "shakespeare", "seeds": [0, 1, 2], "command": "-", **about, "runs": runs,
    }))  # fmt: skip
    return path


@pytest.mark.parametrize(
    ("break_it", "problem"),
    [
        (lambda runs, about: runs[0].pop("values"), "rope seed 0 has no finite least-decaying"),
        (lambda runs, about: runs[3]["values"].__setitem__(4, float("nan")), "nope seed 1 has no"),
        (lambda runs, about: runs[0].update(values=[0.5]), "at two snapshots or more"),
        (lambda runs, about: runs[1]["steps"].pop(), "has 8 steps and 9 token counts for 9"),
        (lambda runs, about: runs[2].update(steps=[1, *STEPS[1:]]), "untrained snapshot"),
        (lambda runs, about: runs[2].update(steps=[0, 18, 18, *STEPS[3:]]), "rising steps"),
        (
            lambda runs, about: [r.update(tokens=[0, *TOKENS[1:-1], 1]) for r in runs[:2]],
            "runs whose snapshots differ",
        ),
        (lambda runs, about: runs[1].update(model="p-rope-0.75"), "a run of 'p-rope-0.75'"),
        (
            lambda runs, about: [runs.remove(r) for r in list(runs) if r["model"] == "nope"],
            "no runs of \\['nope'\\]",
        ),
        (lambda runs, about: about.pop("trained_short"), "no settings \\['trained_short'\\]"),
        (lambda runs, about: runs[0].pop("spec_hash"), "lacks \\['spec_hash'\\]"),
    ],
)
def test_a_broken_file_names_the_problem(tmp_path, break_it, problem):
    runs, about = records(seeds=(0, 1, 2)), dict(study.DEFAULTS)
    break_it(runs, about)
    path = _raw(tmp_path, runs, about)
    with pytest.raises(ValueError, match=problem) as error:
        study.load(path)
    assert str(path) in str(error.value)


def test_a_file_that_is_no_study_is_refused(tmp_path):
    path = tmp_path / "broken.json"
    path.write_text("{")
    with pytest.raises(ValueError, match="not valid JSON"):
        study.load(path)
    path.write_text(json.dumps({"format": studies.FORMAT, "study": "decay_study", "runs": [{}]}))
    with pytest.raises(ValueError, match="not a format-1 results file of the decay_training_study"):
        study.load(path)
    path.write_text(json.dumps({"format": studies.FORMAT, "study": study.STUDY, "runs": []}))
    with pytest.raises(ValueError, match="with runs"):
        study.load(path)
    with pytest.raises(ValueError, match="no results of the decay_training_study study"):
        study.load(tmp_path / "absent.json")


# ---------------------------------------------------------------- when the study decides


@pytest.mark.parametrize(
    ("change", "reason"),
    [
        ({}, None),
        ({"profile": "cpu"}, "trained the smoke profile's models"),
        ({"regime": "matched"}, "regime = flagship (this run: matched)"),
        ({"n_windows": 8}, "n_windows = 64 (this run: 8)"),
        ({"window_seed": 1}, "window_seed = 0 (this run: 1)"),
        ({"trained_short": 4}, "trained_short = 8 (this run: 4)"),
        ({"seeds": SEEDS[:-1]}, f"has {study.SEEDS - 1} paired seed(s)"),
        ({"seeds": (0, 1, 2)}, "has 3 paired seed(s)"),
    ],
)
def test_the_study_decides_only_on_the_chapters_models_settings_and_planned_seeds(
    tmp_path, change, reason
):
    results = written(tmp_path, records(seeds=change.get("seeds", SEEDS)))
    found, why = deciding(results, change)
    if reason is None:
        assert found is not None, why
        assert why.startswith(f"the kept study's {study.SEEDS} paired seeds (")
        assert results["commit"][:7] in why and results["measured"] in why
        assert found["rope"][STAT].seeds == SEEDS
    else:
        assert found is None and reason in why


def test_a_stale_absent_or_one_model_study_does_not_decide(tmp_path):
    runs = records()
    runs[2]["spec_hash"] = "0" * 16  # a RoPE run the code no longer trains
    found, why = deciding(written(tmp_path, runs))
    assert found is None and "stale" in why and "rope seed 1" in why
    assert deciding(None) == (
        None,
        "no kept study (python -m ropebook decay_training_study makes it)",
    )
    other = records(profile="cpu")  # another profile's hashes: stale at smoke
    assert "stale" in deciding(written(tmp_path, other))[1]


# ---------------------------------------------------------------- verdicts on constructed data


@pytest.mark.parametrize(
    ("rope", "nope", "verdict"),
    [
        (-1.0, 0.5, "held"),  # RoPE's least-decaying layer falls more than NoPE's
        (2.5, 0.4, "not held"),  # it rises more: training pushes RoPE toward decay
        (0.4, 0.4, "cannot decide"),  # the same change, seed noise either way
    ],
)
def test_the_rebuilt_controlled_trend_reaches_each_verdict(tmp_path, rope, nope, verdict):
    noise = 0.8 * np.array([1, -1] * (len(SEEDS) // 2))  # mean 0, s.d. about 0.8

    def change(name, seed):
        return {"rope": rope + noise[seed], "nope": nope}[name]

    results = written(tmp_path, records(change=change))
    runs, basis = deciding(results)
    (controlled,) = dy.controlled_trends(runs, [STAT]).values()
    assert controlled.n_seeds == study.SEEDS
    assert controlled.difference.mean == pytest.approx(rope - nope, abs=1e-4)
    assert controlled.claim_verdict == verdict
    # the chapter's claim, from the rebuilt trajectories, with a build's own seeds beside
    rope_trend = dy.trend_test(runs["rope"][STAT])
    kept_claim = show_dy.control_claim([controlled], [rope_trend])
    build = dy.controlled_trends(
        {name: {STAT: dy.Trajectory(STAT, name, (0, 1, 2), np.array(STEPS), np.array(TOKENS),
                                    runs[name][STAT].values[:3], -1)} for name in study.MODELS},
        [STAT],
    )  # fmt: skip
    fields = study.beside(kept_claim, list(build.values()), basis)
    record = claims.ClaimSet(claims.ClaimSpec("decay.over_training", "-", "-", claims.given))
    record.record("decay.over_training", **fields)
    (claim,) = record.claims()
    assert claim.verdict == verdict and claim.seeds == study.SEEDS
    assert claim.evidence.startswith(f"{basis}; {study.SEEDS} paired seeds (rope and nope")
    assert claim.measured.startswith(kept_claim["measured"])
    assert "; this build's own seeds, beside: least-decaying layer, rope − nope " in claim.measured
    assert build[STAT].difference.text in claim.measured


def test_beside_says_when_the_build_has_no_control():
    fields = study.beside({"evidence": "held", "measured": "m", "basis": "b"}, [], "kept")
    assert fields == {
        "evidence": "held", "basis": "kept; b",
        "measured": "m; this build's own seeds, beside: no control to set against",
    }  # fmt: skip


# ---------------------------------------------------------------- the study measures the chapter


@pytest.fixture
def flagship_zoo(tiny_zoo, monkeypatch):
    """The tiny zoo with 6-step flagship models (a snapshot per step), and random held-out
    tokens in place of the corpora's test split."""
    fields = {"n_heads": 2, "head_dim": 32, "steps": 6}
    monkeypatch.setitem(zoo._REGIME_FIELDS, ("smoke", "flagship"), fields)

    def tokens(domain, split, vocab_size=data.DEFAULT_VOCAB, **_):
        rng = np.random.default_rng([data.DOMAINS.index(domain), len(split), 7])
        return rng.integers(0, vocab_size, 6_000).astype(np.uint16)

    monkeypatch.setattr(data, "load_tokens", tokens)
    return tiny_zoo


def test_the_study_keeps_what_the_chapter_reads(flagship_zoo, monkeypatch):
    """End to end on tiny flagship models: the study's file, rebuilt, gives the chapter's own
    trajectories and RoPE − NoPE trend, and decides where the plan's seeds are met."""
    options = {"n_windows": 2, "window_seed": 5, "trained_short": 2}
    found = study.measure((0, 1), profile="smoke", progress=False, **options)
    assert [(r["model"], r["seed"]) for r in found] == [
        (n, s) for s in (0, 1) for n in study.MODELS
    ]
    assert all(isinstance(r["trained_now"], bool) and r["provenance"] for r in found)
    # the chapter's cells, verbatim in effect
    flagship = dy.load_models(study.MODELS, profile="smoke", regime="flagship", seeds=(0, 1))
    flag_windows = data.sample_windows(
        data.load_tokens("shakespeare", "test"), flagship["rope"][0].config.context, 2,
        np.random.default_rng([5, 8]),
    )  # fmt: skip
    decay_runs = {
        name: dy.over_training(
            models, dy.decay_measure(flag_windows, 2), toward={STAT: -1}, reference={STAT: 0.0}
        )
        for name, models in flagship.items()
    }
    path = flagship_zoo / f"{study.STUDY}.json"
    studies.write(study.STUDY, found, profile="smoke", regime="flagship", domain="shakespeare",
                  command="-", path=path, models=list(study.MODELS), **options)  # fmt: skip
    results = study.load(path)
    assert deciding(results, {"profile": "smoke", **options})[0] is None  # the plan needs 32
    monkeypatch.setattr(study, "SEEDS", 2)
    runs, why = deciding(results, options)
    assert runs is not None and "2 paired seeds" in why
    for name in study.MODELS:
        ours, theirs = runs[name][STAT], decay_runs[name][STAT]
        assert ours.seeds == theirs.seeds == (0, 1)
        np.testing.assert_array_equal(ours.steps, theirs.steps)
        np.testing.assert_array_equal(ours.tokens, theirs.tokens)
        np.testing.assert_allclose(ours.values, theirs.values, rtol=1e-5, atol=1e-7)
    ours = dy.controlled_trends(runs, [STAT])[STAT]
    theirs = dy.controlled_trends(decay_runs, [STAT])[STAT]
    np.testing.assert_allclose(ours.changes, theirs.changes, rtol=1e-4, atol=1e-6)
    assert ours.verdict == theirs.verdict


# ---------------------------------------------------------------- the plan and the command


def test_the_plan_is_the_pilots_numbers_through_seeds_needed():
    """The pilot's s.d. is its interval's (three seeds: half-width = t · s.d. / √3), which also
    gives the minimum detectable difference the chapter recorded; the seeds are what
    power.seeds_needed gives at the target fixed in advance, and the build's flagship seeds are
    the first of them."""
    mean, low, high = study.PILOT_DIFFERENCE
    n = len(study.PILOT_SEEDS)
    assert mean == pytest.approx((low + high) / 2, abs=1e-3)
    assert mean == pytest.approx(study.PILOT_CHANGES["rope"] - study.PILOT_CHANGES["nope"])
    implied = (high - low) / 2 / stats.t.ppf(0.975, n - 1) * math.sqrt(n)
    assert implied == pytest.approx(study.PILOT_SD, abs=0.005)
    assert power.min_detectable_effect(study.PILOT_SD, n) == pytest.approx(
        study.PILOT_MDE, rel=3e-3
    )
    assert study.SEEDS == power.seeds_needed(study.PILOT_SD, study.TARGET) == 32
    for name in study.MODELS:
        assert zoo.seeds_for(name, profile="cpu", regime="flagship") == study.PILOT_SEEDS
    assert study.PILOT_SEEDS == SEEDS[: len(study.PILOT_SEEDS)]


def test_the_target_is_a_unit_of_the_contrast_fixed_by_its_definition():
    """One unit: ten times the chapter's flat margin, under the all-ones set-up's contrast at the
    cpu flagship's head size, base and context (what the docstring says)."""
    assert study.TARGET == 1.0 == pytest.approx(10 * decay.TRAINED_MARGIN)
    config, _ = zoo.configs("rope", profile="cpu", regime="flagship")
    ones = decay.ones_contrast(config.head_dim, config.rope_base, config.context, 8)
    assert round(ones, 1) == 3.6 and study.TARGET < ones


def test_the_pilot_is_the_executed_chapters_record():
    """Where this checkout has the cpu chapter executed, its decay.over_training record holds
    the pilot's interval over the build's three seeds (deciding, or beside a kept study)."""
    path = pipeline.EXECUTED_DIR / "decay.ipynb"
    if not path.exists():
        pytest.skip("no executed decay chapter here")
    notebook = json.loads(path.read_text())
    if notebook["metadata"].get("papermill", {}).get("parameters", {}).get("profile") != "cpu":
        pytest.skip("the executed decay chapter is not the cpu profile's")
    (claim,) = [c for c in claims.read_claims(path) if c.id == "decay.over_training"]
    found = re.search(r"95% CI \[(\S+), (\S+)\] over 3 seeds", f"{claim.interval} {claim.measured}")
    assert found, claim
    assert (float(found[1]), float(found[2])) == study.PILOT_DIFFERENCE[1:]
    assert f"{study.PILOT_DIFFERENCE[0]:+.3f}" in claim.measured


def test_the_defaults_are_the_chapters_parameters():
    chapter = pipeline.chapter_parameters(pipeline.read_chapter("decay"))
    assert study.DEFAULTS == {
        "n_windows": chapter["n_windows"].default, "window_seed": chapter["seed"].default,
        "trained_short": chapter["trained_short"].default,
    }  # fmt: skip
    assert chapter["regime"].default == study.REGIME


def test_the_command_refuses_bad_arguments_before_measuring(capsys, monkeypatch):
    monkeypatch.setattr(study, "measure", lambda *a, **k: pytest.fail("measured"))
    for argv, message in [
        (["--seeds", "2"], "at least 3"),
        (["--n-windows", "0"], "--n-windows must be at least 1"),
        (["--window-seed", "-1"], "--window-seed must be at least 0"),
        (["--trained-short", "0"], "--trained-short must be at least 1"),
    ]:
        with pytest.raises(SystemExit):
            study.main(argv)
        assert message in capsys.readouterr().err


def test_the_command_plans_its_seeds_and_writes_its_settings(tmp_path, monkeypatch):
    runs = records(seeds=SEEDS, profile="cpu")
    asked = {}

    def measure(seeds, **options):
        asked.update(options, seeds=list(seeds))
        return runs

    monkeypatch.setattr(study, "measure", measure)
    monkeypatch.setattr(studies, "path_of", lambda name: tmp_path / f"{name}.json")
    assert study.main([]) == 0  # the default: the plan's seeds
    results = study.load(tmp_path / f"{study.STUDY}.json")
    assert asked == {"seeds": list(SEEDS), "profile": "cpu", **study.DEFAULTS}
    assert results["command"] == COMMAND
    assert results["models"] == list(study.MODELS) and results["statistic"] == STAT
    assert results["regime"] == "flagship" and results["seeds"] == list(SEEDS)
    assert {k: results[k] for k in study.SETTINGS} == study.DEFAULTS


# ---------------------------------------------------------------- the kept file, once measured


@pytest.fixture
def kept():
    results = study.kept()
    if results is None:
        pytest.skip(f"no kept file yet ({COMMAND} makes it)")
    return results


def test_the_kept_study_is_current_and_decides_the_cpu_build(kept):
    """data/results/decay_training_study.json: the cpu profile's flagship RoPE and NoPE as the
    code trains them today, on the plan's seeds, read with the chapter's defaults."""
    assert kept["profile"] == "cpu" and studies.stale(kept) == []
    assert studies.paired_seeds(kept) == list(SEEDS)
    assert kept["command"] == COMMAND
    runs, why = deciding(kept, {"profile": "cpu"})
    assert runs is not None and kept["commit"][:7] in why
    assert deciding(kept, {"profile": "smoke"})[0] is None


def test_the_kept_command_writes_itself_again(kept, monkeypatch, tmp_path):
    monkeypatch.setattr(study, "measure", lambda seeds, **_: kept["runs"])
    monkeypatch.setattr(studies, "path_of", lambda name: tmp_path / f"{name}.json")
    assert study.main(kept["command"].split()[4:]) == 0
    again = json.loads((tmp_path / f"{study.STUDY}.json").read_text())
    for field in set(kept) - {"measured", "commit", "machine"}:
        assert again[field] == kept[field], field


def test_the_plans_pilot_numbers_are_the_kept_studys_first_seeds(kept):
    """The pilot the plan typed in (the cpu build's flagship seeds 0-2) is what the kept study
    measured on those same models: the plan's inputs are data, not invented."""
    runs = study.trajectories(kept)
    pilot = {
        name: {STAT: dy.Trajectory(STAT, name, study.PILOT_SEEDS, t.steps, t.tokens,
                                   t.values[: len(study.PILOT_SEEDS)], t.toward)}
        for name, t in ((n, runs[n][STAT]) for n in study.MODELS)
    }  # fmt: skip
    controlled = dy.controlled_trends(pilot, [STAT])[STAT]
    assert controlled.difference.mean == pytest.approx(study.PILOT_DIFFERENCE[0], abs=6e-4)
    assert np.std(controlled.changes, ddof=1) == pytest.approx(study.PILOT_SD, abs=0.005)
    for name, change in study.PILOT_CHANGES.items():
        ours = controlled.model_changes if name == "rope" else controlled.control_changes
        assert np.mean(ours) == pytest.approx(change, abs=6e-4)
