"""The build page is filled from the build's records, and says which stages this build skipped."""

import json
import subprocess
import sys

import pytest

from ropebook import REPO_ROOT, buildrecord, pipeline
from ropebook.present import build as show

BUILD = "2026-01-02 03:04:05 UTC"
EARLIER = "2025-12-31 23:00:00 UTC"


def write(folder, name, build, **data):
    folder.mkdir(parents=True, exist_ok=True)
    record = {**data, "format": buildrecord.FORMAT, "build": build, "finished": build}
    (folder / f"{name}.json").write_text(json.dumps(record))


@pytest.fixture
def records(tmp_path):
    """A cached rebuild's records: setup from an earlier build, the rest from this one."""
    folder = tmp_path / "records"
    write(folder, "stage-setup", EARLIER, stage="setup", seconds=301.0, command=["make", "install"])
    write(folder, "stage-data", BUILD, stage="data", seconds=12.5, command=["python", "data"])
    write(folder, "stage-zoo", BUILD, stage="zoo", seconds=47.0, command=["python", "zoo"])
    write(folder, "stage-html", EARLIER, stage="html", seconds=6120.0, command=["jupyter-book"])
    write(folder, "zoo", BUILD, profile="cpu", regimes=[
        {"regime": "lesson", "trained": 0, "cached": 97, "seconds": 0.0, "estimated": 0.0},
        {"regime": "matched", "trained": 2, "cached": 34, "seconds": 754.0, "estimated": 700.0},
    ])  # fmt: skip
    write(folder, "chapters", BUILD, profile="cpu", chapters=[
        {"chapter": "rope_basics", "seconds": 17.0, "ran": False, "finished": "2025-12-30 10:00 UTC"},
        {"chapter": "decay", "seconds": 1234.0, "ran": True, "finished": BUILD},
    ])  # fmt: skip
    write(folder, "machine", BUILD, cpu="Test CPU 9000", cores=8, cores_usable=6, load_average=0.5,
          instruction_set="AVX-512", os="Linux-test", python="3.11.7",
          devices=["cpu:cpu"], device_count=6, versions={"jax": "9.9.9", "python": "3.11.7"},
          benchmark={"model": "rope, cpu profile, lesson regime", "batch": [32, 128], "steps": 10,
                     "step_seconds": 0.25, "tokens_per_second": 16384.0},
          attention={"path": "fused", "reason": "auto: measured", "seconds": {"fused": 0.002,
                                                                            "xla": 0.003}})  # fmt: skip
    return folder


def test_the_zoo_stage_says_it_ran_on_worker_processes(records):
    regimes = [{"regime": "task", "trained": 3, "cached": 0, "seconds": 30.0, "estimated": 40.0}]
    write(records, "zoo", BUILD, profile="cpu", regimes=regimes, workers=2)
    stages = {row["stage"]: row for row in show.stage_rows(show.load(records, BUILD))}
    assert stages["zoo"]["what it did"] == "cpu profile: 3 trained, 0 cached, on 2 worker processes"


def test_chapters_run_side_by_side_count_their_wall_time(records):
    chapters = [
        {"chapter": "decay", "seconds": 600.0, "ran": True, "finished": BUILD},
        {"chapter": "recall", "seconds": 540.0, "ran": True, "finished": BUILD},
    ]  # overlapping: 19 min of their own time in 10 min of wall
    write(records, "chapters", BUILD, profile="cpu", jobs=2, wall_seconds=610.0, chapters=chapters)
    found = show.load(records, BUILD)
    stages = {row["stage"]: row for row in show.stage_rows(found)}
    assert stages["chapters"]["time"] == "10 min so far"
    assert stages["chapters"]["what it did"].startswith("2 run, 2 at a time, 0 up to date")
    spent = {r["stage"]: r for r in show.budget(found, "cpu").rows}
    assert spent["chapters"]["time here"] == "10 min"


def test_tables_show_the_records_values(records):
    found = show.load(records, BUILD)
    machine = {row[""]: row["value"] for row in show.machine_rows(found)}
    assert machine["CPU"] == "Test CPU 9000" and machine["vector instruction set"] == "AVX-512"
    assert machine["cores"] == "8 (6 usable here)"
    bench = machine["lesson benchmark"]
    assert bench.startswith("16,384 tokens/s") and "32×128" in bench
    assert "load average 0.5 on 6 cores" in bench
    assert machine["attention path"].startswith("fused: auto: measured")
    assert "fused 2.00 ms, xla 3.00 ms" in machine["attention path"]
    assert {"package": "jax", "version": "9.9.9"} in show.version_rows(found)
    assert show.machine_text(found) == (  # the scorecard's line: what its claims rest on
        "Test CPU 9000, 6 cores (AVX-512), 6 JAX device(s) cpu:cpu; lesson benchmark 16,384 "
        "tokens/s (this build)"
    )

    stages = {row["stage"]: row for row in show.stage_rows(found)}
    assert list(stages) == ["setup", "data", "zoo", "chapters"]  # in make book's order
    assert stages["setup"]["ran in"] == f"an earlier build ({EARLIER})"  # make skipped it
    assert stages["setup"]["time"] == "5 min"
    assert stages["data"]["ran in"] == "this build" and stages["data"]["time"] == "12 s"
    assert stages["zoo"]["what it did"] == "cpu profile: 2 trained, 131 cached"
    assert stages["chapters"]["what it did"].startswith("1 run, 1 up to date")
    assert stages["chapters"]["time"] == "21 min so far"  # only the chapter run now counts
    assert "did not run setup" in show.stages_text(found)

    zoo = show.zoo_rows(found)
    assert [r["regime"] for r in zoo] == ["lesson", "matched"]
    assert zoo[0]["training time"] == "—" and zoo[1]["training time"] == "13 min"
    assert zoo[1]["estimated before"] == "12 min" and zoo[1]["cached"] == 34

    chapters = {row["chapter"]: row for row in show.chapter_rows(found)}
    assert chapters["decay"] == {"chapter": "decay", "run": "now", "time": "21 min"}
    assert chapters["rope_basics"]["run"] == "up to date: not run"
    assert chapters["rope_basics"]["time"] == "17 s (the run of 2025-12-30 10:00 UTC)"

    site = show.site_text(found)
    assert "built after this page" in site and "1.7 h" in site and EARLIER in site


def test_outside_make_no_row_claims_this_build(records):
    found = show.load(records, None)
    assert all(row["ran in"].startswith("recorded ") for row in show.stage_rows(found))
    assert "no `ROPEBOOK_BUILD`" in show.stages_text(found)


def test_missing_records_are_named(tmp_path):
    found = show.load(tmp_path / "none", BUILD)
    assert show.machine_rows(found) == show.stage_rows(found) == show.zoo_rows(found) == []
    assert str(tmp_path / "none" / "machine.json") in show.machine_text(found)
    assert "built without the Makefile" in show.stages_text(found)
    assert str(tmp_path / "none" / "stage-html.json") in show.site_text(found)
    assert str(tmp_path / "none" / "zoo.json") in found.missing("zoo", "the zoo")


@pytest.mark.parametrize("text", ["{not json", "[1, 2]", '{"format": 0, "regimes": []}'])
def test_a_damaged_record_is_an_error_naming_its_file(records, text):
    (records / "zoo.json").write_text(text)
    with pytest.raises(buildrecord.RecordError, match=str(records / "zoo.json")):
        show.load(records, BUILD)


def test_stage_records_time_and_build_and_a_failure_as_failed(tmp_path, monkeypatch):
    monkeypatch.setenv(buildrecord.BUILD_ENV, BUILD)
    command = [sys.executable, "-c", "import time; time.sleep(0.3)"]
    assert buildrecord.run_stage("data", command, tmp_path) == 0
    record = buildrecord.read("stage-data", tmp_path)
    assert record["build"] == BUILD and record["command"] == command
    assert 0.3 <= record["seconds"] < 30 and record["outcome"] == "finished"
    assert (
        buildrecord.run_stage("proofs", [sys.executable, "-c", "raise SystemExit(3)"], tmp_path)
        == 3
    )
    assert buildrecord.read("stage-proofs", tmp_path)["outcome"] == "failed"
    assert not list(tmp_path.glob(".*"))  # written atomically: no temp file left


def test_stage_command_rejects_unknown_stage():
    result = subprocess.run(
        [sys.executable, "-m", "ropebook", "stage", "nonsense", "--", "true"],
        capture_output=True, text=True, cwd=REPO_ROOT, timeout=60,
    )  # fmt: skip
    assert result.returncode == 2 and "stage {setup,assets" in result.stderr


def test_build_page_runs_last():
    assert pipeline.chapter_names()[-1] == "build"


@pytest.mark.slow
def test_page_shows_the_records(records, tmp_path, monkeypatch):
    """Run through the runner, the page shows the synthetic records' values, none typed in."""
    monkeypatch.setattr(pipeline, "EXECUTED_DIR", tmp_path / "executed")
    monkeypatch.setenv(buildrecord.BUILD_ENV, BUILD)
    page = pipeline.run_chapter(
        "build", {"records_dir": str(records)}, profile="smoke", progress=False
    )
    outputs = json.dumps(json.loads(page.read_text())["cells"])
    for value in ("Test CPU 9000", "16,384 tokens/s", "2 trained, 131 cached", "did not run setup",
                  "17 s (the run of 2025-12-30 10:00 UTC)", "9.9.9", "1.7 h",
                  "not a first cpu build ("):  # fmt: skip
        assert value in outputs, value


def test_a_records_folder_inside_the_clone_is_named_relative_to_it():
    from ropebook import REPO_ROOT
    from ropebook.present import build as page

    records = page.load(REPO_ROOT / "executed" / "no-such-records")
    assert records.missing("zoo", "the zoo") == (
        "No record of the zoo: `executed/no-such-records/zoo.json` does not exist."
    )


PLAN = {"budget": {"build_minutes": 120, "reference_tokens_per_second": 16000}}


def first_build(folder, zoo_minutes: float) -> None:
    """Records of a first cpu build in one go on a machine half the reference's speed."""
    for stage in show.BEFORE_CHAPTERS:
        seconds = zoo_minutes * 60 if stage == "zoo" else 60.0
        write(folder, f"stage-{stage}", BUILD, stage=stage, seconds=seconds, command=["make"])
    write(folder, "zoo", BUILD, profile="cpu", regimes=[
        {"regime": "lesson", "trained": 48, "cached": 0, "seconds": 1.0, "estimated": 1.0},
    ])  # fmt: skip
    write(folder, "chapters", BUILD, profile="cpu", chapters=[
        {"chapter": "decay", "seconds": 600.0, "ran": True, "finished": BUILD},
        {"chapter": "recall", "seconds": 1200.0, "ran": True, "finished": BUILD},
    ])  # fmt: skip
    write(folder, "machine", BUILD, benchmark={"profile": "cpu", "tokens_per_second": 8000.0})


@pytest.mark.parametrize(("zoo_minutes", "verdict"), [(200.0, "held"), (210.0, "not held")])
def test_a_first_cpu_build_in_one_go_decides_the_budget(tmp_path, zoo_minutes, verdict):
    first_build(tmp_path, zoo_minutes)
    spent = show.budget(show.load(tmp_path, BUILD), "cpu", PLAN)
    # 5 one-minute stages, the zoo, 30 min of chapters, at half the reference's speed
    assert spent.reference_minutes == pytest.approx((5 + zoo_minutes + 30) / 2)
    assert spent.not_first_in_one_go == [] and spent.verdict == verdict
    assert [r["stage"] for r in spent.rows] == [*show.BEFORE_CHAPTERS, "chapters"]
    assert {r["counted"] for r in spent.rows} == {"yes"}
    measured, _ = show.budget_text(spent)
    assert measured.startswith(f"{spent.reference_minutes:.1f} reference minutes")


def test_a_cached_rebuild_cannot_decide_the_budget_and_says_why(records):
    write(records, "machine", BUILD, benchmark={"profile": "cpu", "tokens_per_second": 16000.0})
    spent = show.budget(show.load(records, BUILD), "cpu", PLAN)
    assert spent.verdict == "not testable here"
    why = "; ".join(spent.not_first_in_one_go)
    assert "stages not run by this build: setup, assets, proofs, machine" in why
    assert "131 zoo models found in the cache" in why and "1 chapters up to date" in why
    # counted: the data and zoo stages and the chapter run now (12.5 s + 47 s + 1234 s)
    assert spent.reference_minutes == pytest.approx((12.5 + 47 + 1234) / 60)
    counted = {r["stage"]: r["counted"] for r in spent.rows}
    assert counted["setup"] == f"no: an earlier build ({EARLIER})" and counted["zoo"] == "yes"


def test_the_budget_needs_the_profiles_benchmark(records):
    spent = show.budget(show.load(records, BUILD), "smoke", PLAN)
    assert spent.reference_minutes is None and spent.verdict == "not testable here"
    assert "the smoke profile" in spent.not_first_in_one_go[0]
    assert show.budget_text(spent)[0].startswith("not measured")


def test_a_faster_library_makes_the_same_wall_time_fewer_reference_minutes(tmp_path):
    """The reference CPU's benchmark was timed with an older training step: with today's step
    1.6× as fast there, the same wall time here is worth 1/1.6 the reference minutes."""
    first_build(tmp_path, 200.0)
    faster = {"budget": PLAN["budget"] | {"library_speedup": {"factor": 1.6}}}
    before, after = (show.budget(show.load(tmp_path, BUILD), "cpu", p) for p in (PLAN, faster))
    assert after.reference_tokens_per_second == pytest.approx(1.6 * 16000)
    assert after.reference_minutes == pytest.approx(before.reference_minutes / 1.6)


def test_a_resumed_build_scales_by_its_fastest_benchmark(tmp_path, monkeypatch):
    """Each part of a resumed build measures the machine again; load only slows a benchmark,
    so the budget takes the fastest reading (a slower second one cannot lower the minutes), and
    the page lists them. A record of another build carries none of its readings over."""
    first_build(tmp_path, 200.0)
    slow = {"profile": "cpu", "tokens_per_second": 6000.0, "parts": [8000.0, 6000.0]}
    write(tmp_path, "machine", BUILD, benchmark=slow)
    spent = show.budget(show.load(tmp_path, BUILD), "cpu", PLAN)
    assert spent.reference_minutes == pytest.approx((5 + 200 + 30) / 2)  # at 8,000, not 6,000
    assert buildrecord.build_benchmark({"benchmark": slow}) == 8000.0
    assert show._parts_text(slow).endswith(
        "read 8,000, 6,000 tokens/s: the budget takes the fastest"
    )
    monkeypatch.setenv(buildrecord.BUILD_ENV, BUILD)
    monkeypatch.setenv("ROPEBOOK_EXECUTED", str(tmp_path))
    assert buildrecord.earlier_benchmarks({"build": BUILD, "benchmark": slow}) == [8000.0, 6000.0]
    legacy = {"build": BUILD, "benchmark": {"tokens_per_second": 7000.0}}  # before parts
    assert buildrecord.earlier_benchmarks(legacy) == [7000.0]
    assert buildrecord.earlier_benchmarks({"build": "another", "benchmark": slow}) == []
