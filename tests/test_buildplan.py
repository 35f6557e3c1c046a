"""The zoo's build plan: counts and estimates per regime, the advice to split, and its printing."""

from __future__ import annotations

import pytest

from ropebook import buildplan, zoo, zoo_command


def _item(name: str, regime: str, cached: bool, **overrides) -> buildplan.Item:
    model_config, train_config = zoo.configs(name, profile="cpu", regime=regime, **overrides)
    return buildplan.Item(regime, cached, model_config, train_config)


def test_plan_counts_and_estimates_each_regime_at_its_shapes_rate():
    items = [
        _item("rope", "lesson", True),
        _item("nope", "lesson", False),
        _item("alibi", "lesson", False, steps=100),
        _item("rope", "matched", False),
    ]
    lesson, matched = items[1].shape, items[3].shape
    assert lesson != matched and items[1].shape == items[2].shape  # the encoding aside
    rates = {lesson: buildplan.Rate(0.5, 10.0), matched: buildplan.Rate(0.25, 4.0)}
    plans = buildplan.plan(items, rates)
    steps = items[1].train_config.steps
    tokens_per_step = 16 * 128
    assert [p.regime for p in plans] == ["lesson", "matched"]
    assert (plans[0].cached, plans[0].to_train, plans[0].steps) == (1, 2, steps + 100)
    assert plans[0].tokens == (steps + 100) * tokens_per_step
    assert plans[0].seconds == pytest.approx((steps + 100) * 0.5 + 2 * 10.0)
    m_steps = items[3].train_config.steps
    assert plans[1].seconds == pytest.approx(m_steps * 0.25 + 4.0) and plans[1].cached == 0
    with pytest.raises(KeyError, match="no measured rate.*matched"):
        buildplan.plan(items, {lesson: rates[lesson]})


def test_probes_time_one_model_per_shape_to_train_preferring_rope():
    items = [
        _item("rope", "lesson", True),  # cached: nothing to time for it
        _item("nope", "lesson", False),
        _item("rope", "lesson", False, seed=1),
        _item("alibi", "matched", False),
    ]
    chosen = buildplan.probes(items)
    assert chosen == {items[1].shape: items[2], items[3].shape: items[3]}
    assert buildplan.probes(items[:1]) == {}


def test_describe_says_how_to_split_only_a_long_build():
    short = [buildplan.RegimePlan("lesson", 3, 2, 360, 737_280, 600.0)]
    long = [*short, buildplan.RegimePlan("flagship", 0, 9, 16_200, 33_177_600, 3 * 3600.0)]
    lines = buildplan.describe(short, how="from a test")
    assert "3 cached" in lines[1] and "2 to train" in lines[1] and "~10 min" in lines[1]
    assert not any("--shard" in line for line in lines)
    text = "\n".join(buildplan.describe(long, how="from a test", shard="1/4"))
    assert "shard 1/4" in text and "~3.2 h for 11 models" in text
    assert "--shard I/N" in text and "cluster/" in text and "--workers auto" in text


def test_task_models_train_every_step_so_their_estimate_is_no_bound():
    """Every arm of a task comparison trains the same fixed steps (no early stop): the plan
    counts each at all its steps, the same for every encoding and task, and says no "at most"."""
    task = _item("rope", "task", False)
    others = [_item(name, "task", False) for name in ("nope", "layout-llama4")]
    assert task.train_config.stop_accuracy is None
    assert {i.train_config.steps for i in (task, *others)} == {task.train_config.steps}
    rates = {task.shape: buildplan.Rate(0.2, 3.0)}
    (plan,) = buildplan.plan([task, *others], rates)
    steps = task.train_config.steps
    assert plan.steps == 3 * steps and plan.seconds == pytest.approx(3 * (steps * 0.2 + 3))
    lines = buildplan.describe([plan], how="from a test")
    assert "at most" not in "\n".join(lines) and "criterion" not in lines[1]
    assert f"({3 * steps * 32 * 128 / 1e6:,.1f} M tokens)" in lines[1]


def test_summary_puts_measured_beside_estimated():
    plans = [buildplan.RegimePlan("lesson", 0, 2, 360, 737_280, 120.0)]
    (line,) = buildplan.summarise(plans, {"lesson": 45.0})[1:]
    assert "45 s" in line and "(~2 min)" in line


def test_smoke_zoo_prints_counts_and_estimate_before_training(tiny_zoo, capsys):
    zoo.load("rope", profile="smoke", progress=False)  # cached before the build
    capsys.readouterr()
    assert (
        zoo_command.main(["--profile", "smoke", "--names", "rope", "nope", "--seeds", "0", "1"])
        == 0
    )
    out = capsys.readouterr().out
    plan_line = next(line for line in out.splitlines() if line.strip().startswith("lesson"))
    assert plan_line.split()[1:5] == ["1", "cached,", "3", "to"]
    assert out.index("estimated total") < out.index("[1/4]")  # before any model loads
    assert "zoo training time per regime, measured" in out.split("[4/4]")[1].split("val ppl")[0]
