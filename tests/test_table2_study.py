"""The kept Table 2 study: its file round-trips, it decides only where its runs are the models
the build trains, and the build's reproduction of its shared seeds reaches each verdict."""

from __future__ import annotations

import functools
import json
import types

import pytest

from ropebook import studies, table2_study, zoo
from ropebook.analysis import ablation

REMEMBERED = functools.cache(zoo.spec_hash)  # a hash builds its configs (slow); same in, same out


@pytest.fixture(autouse=True)
def remembered_spec_hashes(monkeypatch):
    monkeypatch.setattr(zoo, "spec_hash", REMEMBERED)


def record(name, domain, seed, ppl, profile="smoke"):
    return {
        "model": name, "domain": domain, "seed": seed, "overrides": {}, "val_ppl": ppl,
        "spec_hash": zoo.spec_hash(name, seed=seed, profile=profile, domain=domain),
    }  # fmt: skip


def records(seeds=(0, 1, 2), profile="smoke"):
    return [
        record(n, d, s, 100.0 + 10 * i + s, profile)
        for d in ablation.DOMAINS
        for i, n in enumerate(zoo.TABLE2)
        for s in seeds
    ]


def written(tmp_path, runs, profile="smoke"):
    path = tmp_path / "table2_study.json"
    studies.write(
        table2_study.STUDY, runs, profile=profile, regime="lesson", domain="shakespeare, python",
        command="python -m ropebook table2_study", path=path,
    )  # fmt: skip
    return path


def test_a_written_study_loads_and_pairs_every_model_on_its_shared_seeds(tmp_path):
    runs = records((0, 1, 2, 3))
    runs = [r for r in runs if not (r["model"] == "nope" and r["seed"] == 3)]  # one seed short
    results = table2_study.load(written(tmp_path, runs))
    kept = table2_study.runs(results)
    assert set(kept) == {(n, d) for n in zoo.TABLE2 for d in ablation.DOMAINS}
    assert all([r.seed for r in v] == [0, 1, 2] for v in kept.values())  # seed 3 is unpaired
    assert kept["rope", "python"][2].val_ppl == 112.0


def test_a_study_without_a_perplexity_or_a_model_names_the_problem(tmp_path):
    runs = records()
    bad = json.loads(json.dumps(runs))
    bad[0]["val_ppl"] = None
    with pytest.raises(ValueError, match="has no perplexity"):
        table2_study.load(written(tmp_path, bad))
    short = [r for r in runs if r["model"] != "rope-500k"]
    with pytest.raises(ValueError, match="rope-500k"):
        table2_study.load(written(tmp_path, short))
    with pytest.raises(ValueError, match="no results of the table2_study study"):
        table2_study.load(tmp_path / "absent.json")


def test_the_study_decides_only_where_its_runs_are_this_profiles_models(tmp_path):
    results = table2_study.load(written(tmp_path, records()))
    kept, why = table2_study.deciding_runs(results, "smoke")
    assert kept is not None and "3 paired seeds" in why
    assert table2_study.deciding_runs(results, "cpu")[0] is None  # another profile's models
    assert "smoke profile" in table2_study.deciding_runs(results, "cpu")[1]
    assert table2_study.deciding_runs(None, "smoke") == (
        None,
        table2_study.deciding_runs(None, "cpu")[1],
    )
    few = table2_study.load(written(tmp_path, records((0, 1))))
    assert "2 paired seed(s)" in table2_study.deciding_runs(few, "smoke")[1]


def test_a_run_whose_spec_the_code_no_longer_trains_is_stale_per_corpus(tmp_path):
    runs = records()
    runs[-1]["spec_hash"] = zoo.spec_hash(runs[-1]["model"], seed=runs[-1]["seed"],
                                          profile="smoke", domain="shakespeare")  # fmt: skip
    assert runs[-1]["domain"] == "python"  # a Shakespeare spec labelled Python
    results = table2_study.load(written(tmp_path, runs))
    assert studies.stale(results) == [f"{runs[-1]['model']} seed {runs[-1]['seed']}"]
    kept, why = table2_study.deciding_runs(results, "smoke")
    assert kept is None and "stale" in why
    assert studies.stale(table2_study.load(written(tmp_path, records()))) == []


@pytest.mark.parametrize(
    ("build_ppl", "verdict"),
    [(100.3, "held"), (100.6, "not held"), (99.4, "not held")],
)
def test_reproduction_of_the_shared_seeds_reaches_each_verdict(build_ppl, verdict):
    kept = {("rope", "python"): [table2_study.KeptRun(0, 100.0), table2_study.KeptRun(1, 90.0)]}
    build = {
        ("rope", "python"): [table2_study.KeptRun(1, 90.0), table2_study.KeptRun(0, build_ppl)]
    }
    reproduction = table2_study.reproduced(build, kept)
    assert reproduction.n == 2
    assert reproduction.largest == pytest.approx(abs(build_ppl - 100.0))
    assert reproduction.where == "rope on python, seed 0"
    assert reproduction.verdict(0.5) == verdict


def test_reproduction_without_a_shared_seed_is_not_testable():
    kept = {("rope", "python"): [table2_study.KeptRun(5, 100.0)]}
    build = {("rope", "python"): [table2_study.KeptRun(0, 100.0)], ("nope", "python"): []}
    reproduction = table2_study.reproduced(build, kept)
    assert reproduction.verdict(0.5) == "not testable here"
    with pytest.raises(ValueError, match="margin"):
        reproduction.verdict(0.0)


TRAINED = table2_study.training_of([{"host": "h", "started": "2026-12-02 11:53:53 UTC"}])
RETRAINED = table2_study.training_of([{"host": "h", "started": "2026-12-03 09:00:00 UTC"}])


@pytest.mark.parametrize(
    ("build_ppl", "verdict"), [(100.0, "uninformative here"), (100.9, "uninformative here")]
)
def test_runs_loaded_from_the_cache_that_trained_the_study_test_nothing(build_ppl, verdict):
    """The same training is equal by construction: left out, whatever its numbers say."""
    kept = {("rope", "python"): [table2_study.KeptRun(0, 100.0, TRAINED)]}
    build = {("rope", "python"): [table2_study.KeptRun(0, build_ppl, TRAINED)]}
    reproduction = table2_study.reproduced(build, kept)
    assert (reproduction.n, reproduction.same) == (0, 1)
    assert reproduction.verdict(0.5) == verdict


@pytest.mark.parametrize(("retrained_ppl", "verdict"), [(100.2, "held"), (101.0, "not held")])
def test_only_the_runs_trained_apart_decide_the_reproduction(retrained_ppl, verdict):
    kept = {("rope", "python"): [table2_study.KeptRun(0, 100.0, TRAINED),
                                 table2_study.KeptRun(1, 100.0, TRAINED)]}  # fmt: skip
    build = {("rope", "python"): [table2_study.KeptRun(0, 150.0, TRAINED),  # loaded: left out
                                  table2_study.KeptRun(1, retrained_ppl, RETRAINED)]}  # fmt: skip
    reproduction = table2_study.reproduced(build, kept)
    assert (reproduction.n, reproduction.same) == (1, 1)
    assert reproduction.largest == pytest.approx(abs(retrained_ppl - 100.0))
    assert reproduction.verdict(0.5) == verdict


def test_a_build_reads_each_models_training_from_its_checkpoint(tmp_path):
    provenance = [{"host": "h", "started": "2026-12-02 11:53:53 UTC", "steps": [0, 180]}]
    (tmp_path / "checkpoint.json").write_text(json.dumps({"provenance": provenance}))
    model = types.SimpleNamespace(seed=3, val_ppl=120.0, path=tmp_path)
    (run,) = table2_study.as_kept({("rope", "python"): [model]})["rope", "python"]
    assert run == table2_study.KeptRun(3, 120.0, table2_study.training_of(provenance))
    assert table2_study.training_of([]) == ""  # nothing recorded: never taken for the same run
    assert table2_study.training_of(provenance) != RETRAINED


def test_the_command_refuses_too_few_seeds_before_training(capsys):
    with pytest.raises(SystemExit):
        table2_study.main(["--seeds", "2"])
    assert "at least 3" in capsys.readouterr().err


def test_the_kept_study_is_current_and_decides_the_cpu_build():
    """data/results/table2_study.json: the cpu profile's specs as the code trains them today,
    every Table 2 model on both corpora on the same 16 seeds, with the command that re-makes it."""
    results = table2_study.kept()
    assert results is not None and results["profile"] == "cpu"
    assert results["command"] == "python -m ropebook table2_study --profile cpu --seeds 16"
    assert studies.stale(results) == []
    kept, why = table2_study.deciding_runs(results, "cpu")
    assert kept is not None and "16 paired seeds" in why and results["commit"][:7] in why
    assert {len(runs) for runs in kept.values()} == {16}
    assert table2_study.deciding_runs(results, "smoke")[0] is None  # smoke trains other models
