"""The kept matched-regime study: its file round-trips and names a broken one, it decides an
ordering only where its runs are the models the build trains, and the chapter's comparison of
its runs reaches held, not held, bounded and cannot decide."""

from __future__ import annotations

import functools
import json

import pytest

from ropebook import matched_study, studies, zoo
from ropebook.analysis import ablation
from ropebook.present import recipes as show_recipes

REMEMBERED = functools.cache(zoo.spec_hash)  # a hash builds its configs (slow); same in, same out
P, REVERSED = matched_study.MODELS


@pytest.fixture(autouse=True)
def remembered_spec_hashes(monkeypatch):
    monkeypatch.setattr(zoo, "spec_hash", REMEMBERED)


def records(gaps, profile="smoke", models=matched_study.MODELS):
    """One run per model and seed; the second model's perplexity ``gaps[seed]`` % above the
    first's (each seed's level differs, so only pairing sees the gap)."""
    return [
        {
            "model": name, "domain": "shakespeare", "seed": seed, "overrides": {},
            "spec_hash": zoo.spec_hash(name, seed=seed, profile=profile, regime="matched"),
            "val_ppl": (80.0 + 3 * seed) * (1 + (gap / 100 if i else 0)),
        }
        for i, name in enumerate(models)
        for seed, gap in enumerate(gaps)
    ]  # fmt: skip


def written(tmp_path, runs, profile="smoke", models=matched_study.MODELS):
    path = tmp_path / "matched_study.json"
    studies.write(
        matched_study.STUDY, runs, profile=profile, regime="matched", domain="shakespeare",
        command="python -m ropebook matched_study", path=path, models=list(models),
    )  # fmt: skip
    return matched_study.load(path)


@pytest.mark.parametrize(
    ("gaps", "verdict"),
    [
        ([2.0, 2.5, 1.8, 2.2, 2.4, 1.9, 2.1, 2.3], "held"),  # reversed worse on every seed
        ([-2.0, -2.5, -1.8, -2.2, -2.4, -1.9, -2.1, -2.3], "not held"),
        ([0.05, -0.05, 0.1, -0.1, 0.0, 0.02, -0.02, 0.01], "bounded"),  # within ±0.5 %
        ([3.0, -2.0, 1.0, -3.0, 2.5, -1.5, 0.5, -0.4], "cannot decide"),
    ],
)
def test_the_study_decides_the_ordering_both_ways(tmp_path, gaps, verdict):
    results = written(tmp_path, records(gaps))
    kept, why = matched_study.deciding_runs(results, "smoke")
    assert kept is not None and f"{len(gaps)} paired seeds" in why
    c = ablation.compare_models(
        "0.75-RoPE", kept[P, "shakespeare"], "reversed", kept[REVERSED, "shakespeare"]
    )
    assert c.difference.n == len(gaps)
    assert show_recipes.ordering_verdict(c) == verdict
    assert "paired Δ" in show_recipes.ordering_measured(c)


def test_the_study_decides_only_for_the_models_the_build_trains(tmp_path):
    results = written(tmp_path, records([1.0, 2.0, 3.0]))
    assert matched_study.deciding_runs(results, "cpu")[0] is None  # another profile's models
    stale = records([1.0, 2.0, 3.0])
    stale[0]["spec_hash"] = "0" * 16
    kept, why = matched_study.deciding_runs(written(tmp_path, stale), "smoke")
    assert kept is None and "stale" in why
    kept, why = matched_study.deciding_runs(None, "smoke")
    assert kept is None and "python -m ropebook matched_study" in why


def test_a_broken_matched_study_names_the_problem(tmp_path):
    bad = records([1.0, 2.0, 3.0])
    bad[4]["val_ppl"] = None
    with pytest.raises(ValueError, match=f"run {REVERSED} seed 1 has no perplexity"):
        written(tmp_path, bad)
    with pytest.raises(ValueError, match="an ordering needs two models"):
        written(tmp_path, records([1.0, 2.0, 3.0])[:3], models=[P])
    with pytest.raises(ValueError, match=f"no runs of \\['{REVERSED}'\\]"):
        written(tmp_path, records([1.0, 2.0, 3.0])[:3])
    (tmp_path / "matched_study.json").write_text("{")
    with pytest.raises(ValueError, match="not valid JSON"):
        matched_study.load(tmp_path / "matched_study.json")


def test_the_command_refuses_one_encoding_before_training(capsys):
    with pytest.raises(SystemExit):
        matched_study.main(["--names", P, P])
    assert "--names needs two encodings" in capsys.readouterr().err


def test_the_command_writes_the_runs_it_measured(monkeypatch, tmp_path):
    runs = records([1.0, 2.0, 3.0], profile="cpu")
    monkeypatch.setattr(matched_study, "measure", lambda seeds, **_: runs)
    monkeypatch.setattr(studies, "path_of", lambda study: tmp_path / f"{study}.json")
    assert matched_study.main(["--seeds", "3"]) == 0
    kept = json.loads((tmp_path / "matched_study.json").read_text())
    assert kept["command"] == (
        f"python -m ropebook matched_study --profile cpu --seeds 3 --names {P} {REVERSED}"
    )
    assert kept["models"] == [P, REVERSED] and kept["regime"] == "matched"


def test_the_kept_matched_study_is_current_and_decides_the_cpu_build():
    """data/results/matched_study.json: the cpu profile's matched 0.75-RoPE and its reversed twin
    as the code trains them today, on 8 paired seeds (the build's 3 first)."""
    results = matched_study.kept()
    assert results is not None and results["profile"] == "cpu"
    assert results["command"] == (
        f"python -m ropebook matched_study --profile cpu --seeds 8 --names {P} {REVERSED}"
    )
    assert studies.stale(results) == []
    kept, why = matched_study.deciding_runs(results, "cpu")
    assert kept is not None and "8 paired seeds" in why and results["commit"][:7] in why
    assert [r.seed for r in kept[P, "shakespeare"]] == list(range(8))
