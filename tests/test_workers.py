"""The zoo on worker processes: each pinned to one core with one device, sharing the jobs through
the models' locks, every model trained once and exactly as a one-device process trains it."""

from __future__ import annotations

import fcntl
import os
import subprocess
import sys
from pathlib import Path

import jax
import numpy as np
import pytest

from ropebook import REPO_ROOT, checkpoints, runtime, train, workers, zoo, zoo_command


def test_count_reads_a_positive_number_or_auto():
    assert workers.count("3") == 3
    expected = len(os.sched_getaffinity(0)) if jax.default_backend() == "cpu" else 1
    assert workers.count("auto") == expected
    for bad in ("0", "-1", "two", ""):
        with pytest.raises(ValueError, match=f"--workers must be .* got '{bad}'"):
            workers.count(bad)


def test_a_workers_environment_asks_for_one_core_and_one_device(monkeypatch):
    monkeypatch.setenv("XLA_FLAGS", f"--xla_cpu_enable_fast_math=false {runtime.DEVICE_FLAG}=2")
    monkeypatch.setenv("ROPEBOOK_CPU_DEVICES", "2")
    env = workers.environment(1)
    assert env["ROPEBOOK_CPU_CORES"] == "1" and env["ROPEBOOK_CPU_DEVICES"] == "1"
    assert env["XLA_FLAGS"] == "--xla_cpu_enable_fast_math=false"


def _child(env: dict[str, str]) -> subprocess.CompletedProcess:
    script = "import os, jax, ropebook; print(sorted(os.sched_getaffinity(0)), jax.device_count())"
    return subprocess.run(
        [sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=120
    )


def test_a_process_pins_itself_to_the_cores_it_is_given():
    core = max(os.sched_getaffinity(0))
    done = _child(workers.environment(core))
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == [f"[{core}]", "1"]
    bad = _child(dict(workers.environment(core), ROPEBOOK_CPU_CORES="0,x"))
    assert bad.returncode != 0 and "ROPEBOOK_CPU_CORES='0,x'" in bad.stderr


def test_train_if_free_leaves_a_model_that_another_process_holds(tiny_zoo, monkeypatch):
    where = dict(seed=0, profile="smoke", domain="shakespeare", regime="lesson")
    folder = tiny_zoo / "zoo" / zoo.spec_hash("rope", **where)
    folder.mkdir(parents=True)
    with open(folder / ".lock", "w") as lock, monkeypatch.context() as patch:
        fcntl.flock(lock, fcntl.LOCK_EX)  # another process is training it
        trained = []
        patch.setattr(train, "train", lambda *a, **k: trained.append(a))
        assert zoo.train_if_free("rope", **where) is None and not trained
        assert zoo.cache_state(folder)[0] == "running"
    model = zoo.train_if_free("rope", **where)  # released: this process trains it
    assert model is not None and model.trained_now and zoo.is_done(folder)


def test_workers_and_shards_do_not_mix(capsys):
    with pytest.raises(SystemExit):
        zoo_command.main(["--profile", "smoke", "--workers", "2", "--shard", "0/2"])
    assert "leave out --shard" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        zoo_command.main(["--profile", "smoke", "--workers", "none"])
    assert "--workers must be a positive integer or 'auto'" in capsys.readouterr().err


def _zoo(cache: Path, *args: str, env: dict[str, str] | None = None) -> str:
    env = {**(env or os.environ), "ROPEBOOK_CACHE": str(cache)}
    command = [sys.executable, "-m", "ropebook", "zoo", "--profile", "smoke", *args]
    done = subprocess.run(
        command, cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=900
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


@pytest.mark.slow
def test_workers_train_each_model_once_as_a_one_device_process_does(tmp_path):
    names = ["--names", "rope", "alibi", "--seeds", "0", "1", "--steps", "12"]  # both attentions
    # the kernel where it applies (rope), in both runs: `auto` would time both paths afresh in
    # each run's empty cache, and under load two runs can choose differently (rounding apart)
    fused = {**os.environ, "ROPEBOOK_ATTENTION": "fused"}
    output = _zoo(tmp_path / "workers", *names, "--workers", "2", env=fused)
    assert "training 4 models on 2 worker processes" in output
    lines = output.splitlines()
    table = [r for r in map(str.split, lines) if len(r) > 4 and r[0] != "worker"]
    assert sorted((r[0], r[1]) for r in table if r[4] == "trained") == sorted(
        (n, s) for n in ("rope", "alibi") for s in "01"
    )
    assert sum(line.startswith("worker on core [") for line in lines) == 4  # one line a model
    one_device = {k: v for k, v in fused.items() if k != "XLA_FLAGS"}
    _zoo(tmp_path / "one", *names, env=one_device | {"ROPEBOOK_CPU_DEVICES": "1"})
    folders = sorted((tmp_path / "workers" / "zoo").iterdir())
    assert len(folders) == 4
    for folder in folders:
        meta = checkpoints.read_metadata(folder)
        assert [p["devices"] for p in meta["provenance"]] == [1]  # trained once, on one device
        params, _, _ = checkpoints.load_checkpoint(folder)
        want, _, want_meta = checkpoints.load_checkpoint(tmp_path / "one" / "zoo" / folder.name)
        losses = {k: [row["loss"] for row in rows] for k, rows in meta["history"].items()}
        assert losses == {k: [r["loss"] for r in rows] for k, rows in want_meta["history"].items()}
        for got, expected in zip(jax.tree.leaves(params), jax.tree.leaves(want), strict=True):
            np.testing.assert_array_equal(got, expected)


def test_train_on_workers_trains_what_the_cache_lacks_for_a_later_load(
    tmp_path, monkeypatch, capfd
):
    """The library path a chapter takes for the models it adds (the recall chapter's seeds)."""
    monkeypatch.setenv("ROPEBOOK_CACHE", str(tmp_path))  # the workers' cache, and
    monkeypatch.setattr(zoo, "CACHE_DIR", tmp_path)  # this process's
    where = dict(profile="smoke", overrides={"steps": 4, "warmup": 1})
    jobs = [("rope", 0, "recall", "task"), ("nope", 0, "recall", "task")]
    assert zoo.train_on_workers(jobs, n=1, **where) == {}  # one worker: the caller's load trains
    assert zoo.train_on_workers(jobs[:1], n=2, **where) == {}  # one model: likewise
    assert not (tmp_path / "zoo").exists() or not any((tmp_path / "zoo").iterdir())
    seen = []
    capfd.readouterr()
    trained = zoo.train_on_workers(
        jobs, n=2, on_trained=lambda j, m: seen.append(j), quiet=True, **where
    )
    assert sorted(trained) == sorted(jobs) == sorted(seen)
    out = capfd.readouterr().out  # quiet: the workers' lines stay in their logs
    assert "training 2 models on 2 worker processes" in out and "worker on core" not in out
    for name, seed, domain, regime in jobs:
        model = zoo.load(name, seed=seed, domain=domain, regime=regime, profile="smoke",
                         **where["overrides"])  # fmt: skip
        assert not model.trained_now and model.tokens_seen > 0
        assert trained[name, seed, domain, regime] == pytest.approx(model.seconds / 2)
    assert zoo.train_on_workers(jobs, n=2, **where) == {}  # all cached: no worker starts


def test_a_quiet_workers_failure_shows_its_last_lines(tmp_path, monkeypatch, capfd):
    monkeypatch.setenv("ROPEBOOK_CACHE", str(tmp_path))
    monkeypatch.setattr(zoo, "CACHE_DIR", tmp_path)
    broken = dict(os.environ, ROPEBOOK_CPU_CORES="0,x")  # refused when the worker imports ropebook
    monkeypatch.setattr(workers, "environment", lambda core: broken)
    jobs = [("rope", 0, "recall", "task"), ("nope", 0, "recall", "task")]
    assert zoo.train_on_workers(jobs, profile="smoke", n=2, quiet=True) == {}
    out = capfd.readouterr().out
    for i in (0, 1):
        assert f"worker {i} exited with status 1; what it left trains on loading" in out
    assert out.count("ROPEBOOK_CPU_CORES='0,x'") >= 2  # each failed worker's own last lines
