"""Gemma's layouts at 5:1, global last and first: the runs' specs, the results file, the readings."""

from __future__ import annotations

import numpy as np
import pytest

from ropebook import layout_language, layout_ratio, layouts, recipes, studies, zoo
from ropebook.analysis import recall as rc
from ropebook.present import layout_ratio as show


def test_arms_are_six_layers_five_local_and_the_global_placed():
    for arm, name, where in layout_ratio.ARMS:
        config = layout_ratio.job(arm, "recall", 0, "smoke").model_config
        assert config.n_layers == layout_ratio.N_LAYERS
        if where is None:
            assert config.layers is None and name == "rope"
            continue
        kinds = "".join("L" if layer.local else "G" for layer in config.layers)
        assert kinds == ("LLLLLG" if where == "last" else "GLLLLL"), arm
    last, first = (layout_ratio.job(f"gemma4-{w}", "kback", 0, "smoke") for w in ("last", "first"))
    assert last.spec_hash != first.spec_hash
    assert last.model_config.layers[-1] == first.model_config.layers[0]


def test_task_runs_train_fixed_steps_without_stopping():
    task = layout_ratio.job("gemma3-last", "recall", 0, "cpu")
    assert task.train_config.stop_accuracy is None
    assert task.train_config.steps == layout_ratio.STEPS["cpu"]
    # the language runs are zoo.load's own spec: the zoo's cache key with the same overrides
    chosen = layout_ratio.overrides("gemma3-first", "shakespeare", "smoke")
    assert layout_ratio.job("gemma3-first", "shakespeare", 1, "smoke").spec_hash == zoo.spec_hash(
        "layout-gemma3", seed=1, profile="smoke", regime="matched", domain="shakespeare", **chosen
    )


def test_bad_input_is_refused_before_training(tmp_path, monkeypatch):
    def no_training(*args, **kwargs):
        raise AssertionError("trained")

    monkeypatch.setattr(zoo, "_load", no_training)
    with pytest.raises(SystemExit):
        layout_ratio.main(["--profile", "smoke", "--seeds", "0"])
    with pytest.raises(SystemExit):
        layout_ratio.main(["--profile", "smoke", "--out", str(tmp_path / "absent" / "r.json")])
    with pytest.raises(ValueError, match="unknown arm"):
        layout_ratio.measure((0,), profile="smoke", arms=("gemma2-last",))
    with pytest.raises(ValueError, match="unknown domain"):
        layout_ratio.measure((0,), profile="smoke", domains=("wikitext-2",))
    with pytest.raises(SystemExit):  # fewer placement seeds than every arm has
        layout_ratio.main(["--profile", "smoke", "--seeds", "2", "--placement-seeds", "1"])
    with pytest.raises(ValueError, match="no results"):  # --keep needs a file to keep from
        layout_ratio.main(["--profile", "smoke", "--keep", "--out", str(tmp_path / "r.json")])


def test_study_plan_extends_only_the_placement_arms_on_recall():
    assert (
        layout_ratio.study_plan(3) == layout_ratio.study_plan(3, 3) == layout_ratio.plan(range(3))
    )
    extended = layout_ratio.study_plan(1, 3)
    assert extended[:15] == layout_ratio.plan([0])
    assert sorted(extended[15:]) == sorted(
        (s, "recall", a) for s in (1, 2) for a in layout_ratio.PLACEMENT_ARMS
    )
    assert set(layout_ratio.PLACEMENT_ARMS) == {f"{g}-{w}" for g in layout_ratio.LAYOUTS
                                                for w in ("last", "first")}  # fmt: skip


def spec_records(runs, profile="smoke"):
    """Run records carrying what :func:`layout_ratio.job` trains today for each planned run."""
    return [{"arm": arm, "domain": domain, "seed": seed, "model": layout_ratio._arm(arm)[0],
             "overrides": layout_ratio.overrides(arm, domain, profile),
             "spec_hash": layout_ratio.job(arm, domain, seed, profile).spec_hash}
            for seed, domain, arm in runs]  # fmt: skip


def test_reused_runs_stand_as_measured_and_stale_ones_are_trained(monkeypatch):
    trained = []

    def no_training(job, *args, **kwargs):
        trained.append(job.spec_hash)
        raise RuntimeError("trained")

    monkeypatch.setattr(zoo, "_load", no_training)
    runs = layout_ratio.study_plan(1, 2)
    kept = spec_records(runs)
    out = layout_ratio.measure((), profile="smoke", progress=False, runs=runs, reuse=kept)
    assert trained == [] and all(a is b for a, b in zip(out, kept, strict=True))
    changed = [kept[0] | {"spec_hash": "0" * 16}, *kept[1:]]  # one run no longer today's spec
    with pytest.raises(RuntimeError, match="trained"):
        layout_ratio.measure((), profile="smoke", progress=False, runs=runs, reuse=changed)
    assert trained == [kept[0]["spec_hash"]]


def test_keep_rewrites_the_file_naming_the_measurement_it_kept(monkeypatch, tmp_path):
    monkeypatch.setattr(zoo, "_load", lambda *a, **k: pytest.fail("trained"))
    path = studies.write(
        layout_ratio.STUDY, spec_records(layout_ratio.study_plan(1, 2)), profile="smoke",
        regime="task and matched", domain="recall, kback, shakespeare", path=tmp_path / "r.json",
        command="python -m ropebook layout_ratio --profile smoke --seeds 1 --placement-seeds 2",
    )  # fmt: skip
    before = layout_ratio.load(path)
    argv = ["--profile", "smoke", "--seeds", "1", "--placement-seeds", "2", "--keep"]
    assert layout_ratio.main([*argv, "--out", str(path)]) == 0
    after = layout_ratio.load(path)
    assert after["runs"] == before["runs"] and after["placement_seeds"] == 2
    assert after["command"] == (
        "python -m ropebook layout_ratio --profile smoke --seeds 1 --placement-seeds 2"
    )
    (earlier,) = after["earlier"]
    assert earlier["commit"] == before["commit"] and earlier["runs"] == len(before["runs"])
    assert "kept as measured at commit" in show.provenance(after)
    assert layout_ratio.seeds_text(after) == "2 on recall, 1 on k-back and language"


def test_measured_file_round_trips_with_values_from_the_runs(tiny_zoo, monkeypatch, tmp_path):
    monkeypatch.setitem(layout_ratio.STEPS, "smoke", 12)
    monkeypatch.setattr(layout_ratio, "N_WINDOWS", 2)
    arms, domains = ("gemma3-last",), ("kback", "shakespeare")
    records = layout_ratio.measure(
        (0,), profile="smoke", progress=False, arms=arms, domains=domains
    )
    path = studies.write(
        layout_ratio.STUDY, records, profile="smoke", regime="task and matched",
        domain="kback, shakespeare", command="test", path=tmp_path / "r.json",
        max_factor=layout_ratio.MAX_FACTOR["smoke"],
    )  # fmt: skip
    results = layout_ratio.load(path)
    assert results["runs"] == records and layout_ratio.stale(results) == []
    task, language = results["runs"]
    model = zoo._load(layout_ratio.job("gemma3-last", "kback", 0, "smoke"), "task",
                      progress=False, wait=True)  # fmt: skip
    job = layout_ratio.job("gemma3-last", "kback", 0, "smoke")
    assert task["spec_hash"] == model.spec_hash and job.train_config.stop_accuracy is None
    assert task["curve"]["steps"][-1] == 12  # trained every step: no early stop
    assert task["curve"]["accuracy"] == [r["accuracy"] for r in model.history["val"]]
    batch = rc.task_batch(layout_ratio.tasks.get("kback"), 2 * model.config.context, 2)
    assert layout_ratio.accuracy(results, "kback", "gemma3-last", 2)[0] == pytest.approx(
        rc.accuracy([model], batch)[0]
    )
    assert layout_ratio.factors(results) == [1, 2]
    assert np.isnan(layout_ratio.accuracy(results, "kback", "gemma3-last", 1, beyond=True)[0])
    assert language["last_loss"] > 0 and set(language["ppl_by_factor"]) == {"1", "2"}
    changed = results | {"runs": [task | {"spec_hash": "0" * 16}, language]}
    assert layout_ratio.stale(changed) == ["gemma3-last on kback seed 0"]


def synthetic(accuracy: dict[str, float], n: int = 4, noise: float = 0.01) -> dict:
    """Task runs whose accuracy at 1x is ``accuracy[arm]`` plus a seed effect and noise, and
    language runs whose log perplexity is shifted by the same number (nats)."""
    rng = np.random.default_rng(0)
    seed_effect = 0.02 * rng.standard_normal(n)
    runs = []
    for arm, _, _ in layout_ratio.ARMS:
        for seed in range(n):
            value = accuracy[arm] + seed_effect[seed] + noise * rng.standard_normal()
            for task in layout_ratio.TASKS:
                runs.append({"arm": arm, "domain": task, "seed": seed,
                             "curve": {"steps": [50, 100], "accuracy": [0.1, value]},
                             "reached_at": 100 if value >= 0.99 else None,
                             "accuracy_by_factor": {str(f): value / f**0.5 for f in (1, 2, 4, 8)},
                             "beyond_by_factor": {"1": None} | {str(f): value / 3 for f in (2, 4, 8)}})  # fmt: skip
            runs.append({"arm": arm, "domain": "shakespeare", "seed": seed,
                         "ppl_by_factor": {str(f): float(np.exp(4 + 0.1 * f + value))
                                           for f in (1, 2, 4, 8)}})  # fmt: skip
    return {"runs": runs, "max_factor": 8, "criterion": 0.99, "seeds": list(range(n))}


def test_readings_pair_seeds_and_come_from_the_records():
    base = dict.fromkeys((a for a, _, _ in layout_ratio.ARMS), 0.995)
    results = synthetic(base | {"gemma3-last": 0.3}, noise=0.002)
    late = layout_ratio.placement(results, "recall", "gemma3")
    assert late.estimate.mean == pytest.approx(0.3 - 0.995, abs=0.03) and late.n == 4
    assert late.verdict(above=False, threshold=-0.05) == "held"
    assert layout_ratio.placement(results, "recall", "gemma4").equivalence(0.05) == "held"
    far = layout_ratio.placement(results, "kback", "gemma3", 8, beyond=True)
    assert far.estimate.mean == pytest.approx((0.3 - 0.995) / 3, abs=0.03)
    assert layout_ratio.reached(results, "recall", "gemma3-last")[:2] == (0, 4)
    assert layout_ratio.reached(results, "recall", "gemma4-first")[0] >= 2
    vs_rope = layout_ratio.against_rope(results, "kback", "gemma4-first", 8)
    assert vs_rope.equivalence(0.05) == "held"
    placed = layout_ratio.language_placement(results, "gemma3", 1)
    assert placed.difference.mean == pytest.approx(100 * np.expm1(0.3 - 0.995), abs=3)
    gaps = layout_ratio.language_against_rope(results, 8)
    assert set(gaps) == {"gemma3-last", "gemma3-first", "gemma4-last", "gemma4-first"}
    assert layout_language.within({"g": gaps["gemma4-first"]}, margin=2.0) == "held"
    assert layout_language.within({"g": gaps["gemma3-last"]}, margin=2.0) == "not held"
    with pytest.raises(ValueError, match="unknown task"):
        layout_ratio.accuracy(results, "passkey", "rope")
    with pytest.raises(ValueError, match="no run"):
        layout_ratio.accuracy({"runs": []}, "recall", "rope")


def test_against_four_layers_agrees_or_not_with_the_chapter():
    results = synthetic(dict.fromkeys((a for a, _, _ in layout_ratio.ARMS), 0.995), noise=0.0005)
    rng = np.random.default_rng(1)

    def chapter(gap: float, noise: float) -> dict:
        runs = [{"model": m, "seed": s, "ppl_by_factor": {
            "1": float(np.exp(4 + (gap if m == "layout-gemma3" else 0.0)
                              + noise * rng.standard_normal()))}}
            for m in ("rope", "layout-gemma3") for s in range(4)]  # fmt: skip
        return {"runs": runs}

    def verdict(gap: float, noise: float = 0.001) -> str:
        agreement = layout_ratio.against_four_layers(results, chapter(gap, noise), "gemma3", 1)
        return agreement.equivalence(recipes.MARGIN)

    assert verdict(0.0) == "held" and verdict(0.2) == "not held"
    assert verdict(0.0, noise=0.02) == "cannot decide"  # 2 % per run: wider than ±0.5 %


def test_layer_dicts_read_back_and_refuse_uniform_layouts():
    chosen = layouts.layout("gemma3", n_layers=6, head_dim=32, context=128, base=500.0)
    dicts = layouts.layer_dicts(chosen)
    assert dicts[-1] == {} and all(d["window"] == layouts.MIN_SPAN for d in dicts[:-1])
    config = zoo.configs("rope", profile="smoke", regime="task", n_layers=6, layers=dicts)[0]
    assert config.layers == chosen.fields["layers"]
    with pytest.raises(ValueError, match="uniform"):
        layouts.layer_dicts(layouts.layout("all-rope", n_layers=6, head_dim=32, context=128,
                                           base=500.0))  # fmt: skip


def test_readings_pair_arms_on_the_seeds_both_have(monkeypatch):
    base = dict.fromkeys((a for a, _, _ in layout_ratio.ARMS), 0.995)
    results = synthetic(base | {"gemma4-last": 0.3}, noise=0.002)
    more = synthetic(base | {"gemma4-last": 0.3}, n=6, noise=0.002)["runs"]
    results["runs"] += [r for r in more if r["seed"] >= 4 and r["domain"] == "recall"
                        and r["arm"] in layout_ratio.PLACEMENT_ARMS]  # fmt: skip
    assert layout_ratio.placement(results, "recall", "gemma4").n == 6
    assert layout_ratio.placement(results, "kback", "gemma4").n == 4
    assert layout_ratio.against_rope(results, "recall", "gemma4-first", 8).n == 4
    assert layout_ratio.common_seeds(results, "recall", ["gemma3-last", "rope"]) == [0, 1, 2, 3]
    assert layout_ratio.seeds_text(results) == "6 on recall, 4 on k-back and language"
    monkeypatch.setattr(show, "provenance", lambda results: "measured here")
    assert show.values(results)["seeds"] == "6 on recall, 4 on k-back and language"


def test_presentation_reads_the_file():
    base = dict.fromkeys((a for a, _, _ in layout_ratio.ARMS), 0.995)
    results = synthetic(base | {"gemma4-last": 0.2}, noise=0.002)
    rows = show.task_rows(results)
    assert len(rows) == len(layout_ratio.TASKS) * len(layout_ratio.ARMS)
    late = next(r for r in rows if r["layout"] == "Gemma 4, global last" and r["task"] == "recall")
    assert late["reached 99 %"] == "0/4" and late["at steps"] == "never, never, never, never"
    assert late["accuracy at 1× (%)"].startswith("20.")
    placed = {r["layout"]: r for r in show.placement_rows(results)}
    assert placed["Gemma 4"]["recall at 1×"].startswith("-79.")
    assert placed["Gemma 3"]["recall at 1×"].startswith(("+0.", "-0."))
    language = show.language_rows(results)
    assert [r["layout"] for r in language][-1] == "all-RoPE" and language[-1][
        "vs all-RoPE at 1×"
    ] == "—"
    chart = show.curve_chart(results).to_dict()
    (points,) = chart["datasets"].values()  # altair keeps inline data as one named dataset
    assert len(points) == 2 * len(layout_ratio.TASKS) * len(layout_ratio.ARMS) * 4
    assert {p["accuracy"] for p in points if p["layout"] == "Gemma 4, global last"} > {0.1}


def test_glued_values_come_from_the_readings(monkeypatch):
    monkeypatch.setattr(show, "provenance", lambda results: "measured here")
    base = dict.fromkeys((a for a, _, _ in layout_ratio.ARMS), 0.995)
    results = synthetic(base | {"gemma3-last": 0.3}, noise=0.002)
    chapter = {"runs": [{"model": m, "seed": s, "ppl_by_factor": {"1": float(np.exp(4.995))}}
                        for m in ("rope", "layout-gemma3", "layout-gemma4") for s in range(4)]}  # fmt: skip
    glued = show.values(results, chapter)
    assert glued["provenance"] == "measured here" and glued["seeds"] == "4"
    assert glued["gemma3.recall.last.reached"] == "0/4"
    first = [r for r in results["runs"] if r["arm"] == "gemma3-first" and r["domain"] == "recall"]
    assert (
        glued["gemma3.recall.first.reached"]
        == f"{sum(r['accuracy_by_factor']['1'] >= 0.99 for r in first)}/4"
    )
    assert (
        glued["gemma3.kback.placement"] == layout_ratio.placement(results, "kback", "gemma3").text()
    )
    assert glued["gemma4.language.vs_four_layers"].startswith(("held", "not held"))
