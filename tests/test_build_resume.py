"""A `make book` stopped part way and run again resumes the same build: its records name one build,
every attempt of a stage counts (a killed one to its last heartbeat), and the budget can decide."""

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from ropebook import REPO_ROOT, buildrecord, pipeline, train, zoo, zoo_command
from ropebook.present import build as show

FIRST, SECOND, OTHER = (
    "2026-12-02 08:00:00 UTC",
    "2026-12-03 09:00:00 UTC",
    "2026-12-04 10:00:00 UTC",
)


def part(monkeypatch, name):
    monkeypatch.setenv(buildrecord.BUILD_ENV, name)


def test_a_second_make_book_resumes_an_unfinished_build(tmp_path, monkeypatch):
    part(monkeypatch, FIRST)
    first = buildrecord.begin("cpu", tmp_path)
    assert first["parts"] == [FIRST] and not first["complete"]
    part(monkeypatch, SECOND)
    resumed = buildrecord.begin("cpu", tmp_path)
    assert resumed["name"] == FIRST and resumed["parts"] == [FIRST, SECOND]
    assert resumed["began"] == first["began"]  # the build began with its first part
    assert buildrecord.current_build(tmp_path) == FIRST
    assert buildrecord.began(tmp_path) == first["began"]
    assert buildrecord.begin("cpu", tmp_path)["parts"] == [FIRST, SECOND]  # listed once
    buildrecord.end(tmp_path)
    part(monkeypatch, OTHER)  # after the end, a make book is a new build
    assert buildrecord.begin("cpu", tmp_path)["parts"] == [OTHER]
    assert buildrecord.current_build(tmp_path) == OTHER


def test_another_profile_or_no_make_is_not_a_resumption(tmp_path, monkeypatch):
    part(monkeypatch, FIRST)
    buildrecord.begin("cpu", tmp_path)
    part(monkeypatch, SECOND)
    assert buildrecord.begin("smoke", tmp_path)["parts"] == [SECOND]
    part(monkeypatch, OTHER)  # not listed: its records are its own
    assert buildrecord.current_build(tmp_path) == OTHER and buildrecord.began(tmp_path) is None
    monkeypatch.delenv(buildrecord.BUILD_ENV)
    assert buildrecord.current_build(tmp_path) is None
    with pytest.raises(buildrecord.RecordError, match=buildrecord.BUILD_ENV):
        buildrecord.begin("cpu", tmp_path)


def test_end_needs_an_open_build_listing_this_make(tmp_path, monkeypatch):
    part(monkeypatch, FIRST)
    with pytest.raises(buildrecord.RecordError, match="no open build"):
        buildrecord.end(tmp_path)


def test_every_attempt_counts_and_a_killed_one_to_its_last_heartbeat(tmp_path, monkeypatch):
    """Part one's stage is killed (SIGKILL: nothing runs after it); part two's attempt finds it
    still marked running, counts it as interrupted, and adds its own time."""
    part(monkeypatch, FIRST)
    buildrecord.begin("cpu", tmp_path)
    script = (
        "import sys; from pathlib import Path; from ropebook import buildrecord; "
        "buildrecord.HEARTBEAT_SECONDS = 0.1; "
        "buildrecord.run_stage('zoo', [sys.executable, '-c', 'import time; time.sleep(60)'], "
        "Path(sys.argv[1]))"
    )
    killed = subprocess.Popen([sys.executable, "-c", script, str(tmp_path)], env=os.environ)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        record = buildrecord.read("stage-zoo", tmp_path)
        if record and record["attempts"][-1]["seconds"] >= 0.3:
            break
        time.sleep(0.05)
    killed.send_signal(signal.SIGKILL)
    killed.wait()
    record = buildrecord.read("stage-zoo", tmp_path)
    assert record["outcome"] == "running" and record["build"] == FIRST
    heartbeat = record["attempts"][-1]["seconds"]

    part(monkeypatch, SECOND)
    buildrecord.begin("cpu", tmp_path)
    assert buildrecord.run_stage("zoo", [sys.executable, "-c", "pass"], tmp_path) == 0
    record = buildrecord.read("stage-zoo", tmp_path)
    assert record["build"] == FIRST and record["outcome"] == "finished"
    assert [(a["part"], a["outcome"]) for a in record["attempts"]] == [
        (FIRST, "interrupted"), (SECOND, "finished"),
    ]  # fmt: skip
    second = record["attempts"][1]["seconds"]
    assert record["seconds"] == pytest.approx(
        heartbeat + buildrecord.HEARTBEAT_SECONDS + second, abs=0.11
    )


def test_a_failed_attempt_counts_but_the_stage_did_not_run(tmp_path, monkeypatch):
    part(monkeypatch, FIRST)
    buildrecord.begin("cpu", tmp_path)
    assert buildrecord.run_stage("proofs", [sys.executable, "-c", "raise SystemExit(3)"], tmp_path)
    record = buildrecord.read("stage-proofs", tmp_path)
    assert record["outcome"] == "failed" and len(record["attempts"]) == 1
    records = show.load(tmp_path, FIRST)
    assert not show._ran(records, "stage-proofs")
    assert buildrecord.run_stage("proofs", [sys.executable, "-c", "pass"], tmp_path) == 0
    assert show._ran(show.load(tmp_path, FIRST), "stage-proofs")
    assert [a["outcome"] for a in buildrecord.read("stage-proofs", tmp_path)["attempts"]] == [
        "failed", "finished",
    ]  # fmt: skip


def test_a_new_build_drops_an_earlier_builds_attempts(tmp_path, monkeypatch):
    part(monkeypatch, FIRST)
    buildrecord.begin("cpu", tmp_path)
    buildrecord.run_stage("data", [sys.executable, "-c", "pass"], tmp_path)
    buildrecord.end(tmp_path)
    part(monkeypatch, SECOND)
    buildrecord.begin("cpu", tmp_path)
    buildrecord.run_stage("data", [sys.executable, "-c", "pass"], tmp_path)
    record = buildrecord.read("stage-data", tmp_path)
    assert record["build"] == SECOND and [a["part"] for a in record["attempts"]] == [SECOND]


PLAN = {"budget": {"build_minutes": 120, "reference_tokens_per_second": 16000}}


def resumed_build(folder, *, cached: int = 0) -> None:
    """Records of a first cpu build in two parts on a machine half the reference's speed: the
    first killed in the chapters stage after 10 min of it, the second finishing the chapters in 5."""
    state = {"name": FIRST, "parts": [FIRST, SECOND], "began": 0.0, "profile": "cpu",
             "complete": False, "format": buildrecord.FORMAT}  # fmt: skip
    (folder / "build.json").write_text(json.dumps(state))

    def write(name, **data):
        record = {**data, "format": buildrecord.FORMAT, "build": FIRST, "finished": SECOND}
        (folder / f"{name}.json").write_text(json.dumps(record))

    for stage in show.BEFORE_CHAPTERS:
        attempts = [{"part": FIRST, "began": FIRST, "seconds": 60.0, "outcome": "finished"}]
        write(f"stage-{stage}", stage=stage, seconds=60.0, command=["make"], attempts=attempts,
              outcome="finished")  # fmt: skip
    chapters_attempts = [
        {"part": FIRST, "began": FIRST, "seconds": 600.0, "outcome": "running"},  # killed
        {"part": SECOND, "began": SECOND, "seconds": 285.0, "outcome": "running"},  # this page
    ]
    write("stage-chapters", stage="chapters", seconds=915.0, command=["make"],
          attempts=chapters_attempts, outcome="running")  # fmt: skip
    write("zoo", profile="cpu", regimes=[
        {"regime": "lesson", "trained": 48, "cached": cached, "seconds": 1.0, "estimated": 1.0},
    ])  # fmt: skip
    write("chapters", profile="cpu", wall_seconds=300.0, chapters=[
        {"chapter": "decay", "seconds": 500.0, "ran": True, "finished": FIRST},
        {"chapter": "recall", "seconds": 290.0, "ran": True, "finished": SECOND},
    ])  # fmt: skip
    write("machine", benchmark={"profile": "cpu", "tokens_per_second": 8000.0})


def test_a_resumed_first_build_decides_the_budget_counting_every_part(tmp_path):
    resumed_build(tmp_path)
    records = show.load(tmp_path, SECOND)
    assert records.build == FIRST and records.part == SECOND
    spent = show.budget(records, "cpu", PLAN)
    assert spent.not_first_in_one_go == [] and spent.verdict == "held"
    # 6 one-minute stages; chapters: part one's killed attempt to its heartbeat bound, then 5 min
    chapters = 600.0 + buildrecord.HEARTBEAT_SECONDS + 300.0
    assert spent.reference_minutes == pytest.approx((6 * 60 + chapters) / 60 / 2)
    assert "2 `make book` invocations" in show.stages_text(records)


def test_a_resumed_build_still_needs_an_empty_cache(tmp_path):
    resumed_build(tmp_path, cached=3)
    spent = show.budget(show.load(tmp_path, SECOND), "cpu", PLAN)
    assert spent.verdict == "not testable here"
    assert "3 zoo models found in the cache" in "; ".join(spent.not_first_in_one_go)


def test_a_stage_run_twice_says_so_on_its_row(tmp_path):
    resumed_build(tmp_path)
    record = json.loads((tmp_path / "stage-zoo.json").read_text())
    record["attempts"] = [
        {"part": FIRST, "began": FIRST, "seconds": 50.0, "outcome": "interrupted"},
        {"part": SECOND, "began": SECOND, "seconds": 10.0, "outcome": "finished"},
    ]
    (tmp_path / "stage-zoo.json").write_text(json.dumps(record))
    rows = {r["stage"]: r for r in show.stage_rows(show.load(tmp_path, SECOND))}
    assert rows["zoo"]["time"].endswith("in 2 attempts: 1 interrupted, 1 finished "
                                        "(each unfinished counted to its last heartbeat + one)")  # fmt: skip
    assert rows["data"]["time"] == "60 s"


def test_models_and_chapters_of_an_earlier_part_count_as_this_builds(tmp_path, monkeypatch):
    """What part one trained names the build in its provenance; what it executed finished after
    the build began: part two counts both as trained and run by the build, not as found."""
    monkeypatch.setenv("ROPEBOOK_EXECUTED", str(tmp_path))
    records = tmp_path / buildrecord.RECORDS
    part(monkeypatch, FIRST)
    state = buildrecord.begin("cpu", records)
    config, tc = zoo.configs("rope", profile="smoke")
    assert train.provenance(config, tc)["build"] == FIRST
    part(monkeypatch, SECOND)
    buildrecord.begin("cpu", records)
    assert train.provenance(config, tc)["build"] == FIRST  # a later part stamps the same build
    model = tmp_path / "model"
    model.mkdir()
    meta = {"format": 1, "file": "x", "sha256": "0", "step": 1, "model": {}, "train": {},
            "provenance": [{"host": "h"}, {"host": "h", "build": FIRST}]}  # fmt: skip
    (model / "checkpoint.json").write_text(json.dumps(meta))
    assert zoo_command.trained_by(model, FIRST) and not zoo_command.trained_by(model, OTHER)
    assert not zoo_command.trained_by(model, None)
    # its training time stays on the zoo's row when part two reloads it; a model found cached,
    # trained by no part of this build, adds none
    assert zoo_command.regime_seconds(2.0, True, True, 50.0) == 2.0  # trained in this call
    assert zoo_command.regime_seconds(2.0, False, True, 50.0) == 50.0  # in an earlier part
    assert zoo_command.regime_seconds(2.0, False, False, 50.0) == 0.0  # found cached

    executed = tmp_path / "decay.ipynb"
    executed.write_text(json.dumps({"metadata": {"ropebook": {"finished": state["began"] + 5,
                                                              "seconds": 5.0}}}))  # fmt: skip
    assert pipeline._chapter_time(executed, state["began"])["ran"]
    assert not pipeline._chapter_time(executed, state["began"] + 10)["ran"]


def test_make_book_begins_and_ends_through_the_stage_command(tmp_path):
    env = {**os.environ, "ROPEBOOK_EXECUTED": str(tmp_path), buildrecord.BUILD_ENV: FIRST,
           "PYTHONPATH": str(REPO_ROOT / "src")}  # fmt: skip
    command = [sys.executable, "-m", "ropebook", "stage"]
    run = subprocess.run([*command, "--begin", "cpu"], capture_output=True, text=True, env=env)
    assert run.returncode == 0 and "(cpu profile): new" in run.stdout
    env[buildrecord.BUILD_ENV] = SECOND
    run = subprocess.run([*command, "--begin", "cpu"], capture_output=True, text=True, env=env)
    assert "resumed, part 2" in run.stdout
    run = subprocess.run([*command, "--end"], capture_output=True, text=True, env=env)
    assert run.returncode == 0 and "complete" in run.stdout
    makefile = (REPO_ROOT / "Makefile").read_text()
    assert "book: begin setup" in makefile and "stage --end" in makefile
