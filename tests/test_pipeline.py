"""The chapter runner: parameter checks, atomic results, provenance, jupytext round trip."""

import dataclasses
import json
import pathlib
import re
import shlex
import subprocess
import sys

import jupytext
import pytest

from ropebook import REPO_ROOT, claims, pipeline, workers

CHAPTER = """# %% [markdown]
# # A test chapter

# %% tags=["parameters"]
profile = "cpu"
steps = 3
rate = 0.5
label = "x"
fail = False

# %%
assert isinstance(steps, int) and isinstance(rate, float)
if fail:
    raise RuntimeError("boom in the test chapter")
print(profile, steps, rate, label)
"""


@pytest.fixture
def sandbox(tmp_path, monkeypatch):
    chapters, executed = tmp_path / "chapters", tmp_path / "executed"
    chapters.mkdir()
    (chapters / "toy.py").write_text(CHAPTER)
    monkeypatch.setattr(pipeline, "CHAPTERS_DIR", chapters)
    monkeypatch.setattr(pipeline, "EXECUTED_DIR", executed)
    return tmp_path


def test_parameters_are_parsed_with_types(sandbox):
    declared = pipeline.chapter_parameters(pipeline.read_chapter("toy"))
    assert {n: p.type_name for n, p in declared.items()} == {
        "profile": "str", "steps": "int", "rate": "float", "label": "str", "fail": "bool",
    }  # fmt: skip


@pytest.mark.parametrize(
    "given, message",
    [
        ({"no_such_param": "1"}, "unknown parameter 'no_such_param'"),
        ({"steps": "many"}, "steps must be int"),
        ({"steps": "2.5"}, "steps must be int"),
        ({"fail": "1"}, "fail must be bool"),
        ({"profile": "tpu"}, "profile must be one of smoke, cpu, gpu"),
    ],
)
def test_bad_parameters_fail_before_running(sandbox, given, message):
    with pytest.raises(pipeline.ChapterError, match=message) as error:
        pipeline.run_chapter("toy", given)
    assert "Valid parameters: profile: str = 'cpu', steps: int = 3" in str(error.value)
    assert not (sandbox / "executed").exists()  # nothing ran, nothing written


def test_values_are_coerced(sandbox):
    declared = pipeline.chapter_parameters(pipeline.read_chapter("toy"))
    values = pipeline.validate_parameters(
        "toy", declared, {"steps": "7", "rate": "2", "label": "5"}
    )
    assert values == {"steps": 7, "rate": 2.0, "label": "5"}


def test_unknown_chapter_lists_chapters(sandbox):
    with pytest.raises(pipeline.ChapterError, match="chapters: toy"):
        pipeline.run_chapter("nope")


@pytest.mark.slow
def test_run_records_provenance_and_failure_keeps_previous(sandbox, recwarn):
    good = pipeline.run_chapter("toy", {"steps": "5"}, profile="smoke", progress=False)
    # papermill warned about every output path not ending in .ipynb (the runner's temp files)
    assert not [str(w.message) for w in recwarn if issubclass(w.category, UserWarning)]
    notebook = json.loads(good.read_text())
    meta = notebook["metadata"]["ropebook"]
    assert meta["parameters"] == {"steps": 5, "profile": "smoke"}
    assert meta["jax_backend"] == "cpu" and meta["jax_devices"]
    assert meta["packages"]["jax"] and meta["git_commit"]
    outputs = ["".join(o.get("text", "")) for c in notebook["cells"] for o in c.get("outputs", [])]
    assert any("smoke 5 0.5 x" in text for text in outputs)
    provenance = json.dumps(notebook["cells"][-1]["outputs"])
    assert "Provenance:" in provenance
    took = re.search(r"UTC, in (\d+) s\.", provenance)  # the runner's clock, kernel start included
    assert took and 0 <= int(took[1]) <= meta["seconds"] + 1
    # the values used are shown once: in the parameters cell; papermill's cell is off the page
    parameters, injected = notebook["cells"][2:4]
    assert "".join(parameters["source"]).splitlines() == [
        'profile = "smoke"', "steps = 5", "rate = 0.5", 'label = "x"', "fail = False",
    ]  # fmt: skip
    assert injected["metadata"]["tags"] == ["injected-parameters", "remove-cell"]
    box = notebook["cells"][1]  # under the title: the rerun box, then the chapter
    assert box["metadata"]["tags"] == [pipeline.RERUN_TAG]
    declared = pipeline.chapter_parameters(pipeline.read_chapter("toy"))
    assert "".join(box["source"]) == pipeline.rerun_box("toy", declared, meta["parameters"])
    assert 'make run CHAPTER=toy PROFILE=smoke PARAMS="steps=5"' in "".join(box["source"])
    assert good.with_suffix(".py").read_text() == CHAPTER  # the source the box offers
    assert pipeline.is_up_to_date("toy", {"steps": 5, "profile": "smoke"})
    assert not pipeline.is_up_to_date("toy", {"steps": 6, "profile": "smoke"})

    before = good.read_bytes()
    with pytest.raises(pipeline.ChapterError) as error:
        pipeline.run_chapter("toy", {"fail": "true"}, progress=False)
    text = str(error.value)
    assert "chapter 'toy' failed in cell" in text and "boom in the test chapter" in text
    assert "RuntimeError" in text
    assert good.read_bytes() == before
    assert good.with_suffix(".py").read_text() == CHAPTER
    assert not list((sandbox / "executed").glob(".toy.*"))  # no temp files left behind


READER = """# %% [markdown]
# # A chapter that uses another's result

# %% tags=["parameters"]
profile = "cpu"

# %%
from ropebook import pipeline

record = pipeline.chapter_record("toy", profile=profile)
print("read", record.name, record.provenance["finished"])
"""


def _executed(path, profile, claim_list=(), finished=1.0):
    """A minimal executed notebook: its profile and finish time, its claims glued as a chapter
    glues them (what ``claims.read_claims`` parses)."""
    data = {"application/papermill.record/text/plain": repr(json.dumps(
        [dataclasses.asdict(c) for c in claim_list]))}  # fmt: skip
    cell = {"cell_type": "code", "source": "", "metadata": {},
            "outputs": [{"metadata": {"scrapbook": {"name": "claims"}}, "data": data}]}  # fmt: skip
    meta = {"ropebook": {"profile": profile, "finished": finished}}
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"cells": [cell], "metadata": meta}))


def test_a_chapter_reads_another_chapters_record_or_is_told_which_command_makes_it(sandbox):
    (sandbox / "chapters" / "reader.py").write_text(READER)
    assert pipeline.reads("reader") == ("toy",) and pipeline.reads("toy") == ()
    with pytest.raises(pipeline.ChapterError, match="python -m ropebook run toy --profile smoke"):
        pipeline.chapter_record("toy", profile="smoke")  # never ran
    # refused before any cell runs: no kernel, no notebook
    with pytest.raises(pipeline.ChapterError, match="'toy' has not run"):
        pipeline.run_chapter("reader", profile="smoke", progress=False)
    assert not (sandbox / "executed" / "reader.ipynb").exists()

    claim = claims.Claim("toy.answer", "a source", "a statement", "measured 1.5", "held")
    _executed(sandbox / "executed" / "toy.ipynb", "cpu", [claim])
    with pytest.raises(pipeline.ChapterError, match="at the cpu profile, not smoke"):
        pipeline.chapter_record("toy", profile="smoke")
    assert pipeline.chapter_claim("toy.answer", profile="cpu") == claim
    with pytest.raises(pipeline.ChapterError, match="recorded no claim 'toy.other'"):
        pipeline.chapter_claim("toy.other")

    (sandbox / "chapters" / "typo.py").write_text(READER.replace('record("toy"', 'record("tyo"'))
    with pytest.raises(pipeline.ChapterError, match="reads no chapter"):
        pipeline.reads("typo")


def test_run_all_runs_a_read_chapter_first_and_its_reader_again_when_it_is_newer(
    sandbox, monkeypatch
):
    """``run all --jobs 2``: the reader (first in the book, here) waits for the chapter it
    reads, reads this run's record, and is out of date once that record is newer than its page."""
    (sandbox / "chapters" / "a_reader.py").write_text(READER)  # before toy in book order
    monkeypatch.setattr(workers, "cores", lambda: [0, 1])
    paths = pipeline.run_all("smoke", jobs=2)
    assert [p.stem for p in paths] == ["a_reader", "toy"]
    meta = {p.stem: json.loads(p.read_text())["metadata"]["ropebook"] for p in paths}
    outputs = json.dumps(json.loads(paths[0].read_text())["cells"])
    assert f"read toy {meta['toy']['finished']}" in outputs  # the record this run wrote
    assert meta["a_reader"]["finished"] >= meta["toy"]["finished"]
    values = {"profile": "smoke"}
    assert pipeline.is_up_to_date("a_reader", values)

    notebook = json.loads(paths[1].read_text())  # toy runs again, later than its reader
    notebook["metadata"]["ropebook"]["finished"] = meta["a_reader"]["finished"] + 0.1
    paths[1].write_text(json.dumps(notebook))
    assert pipeline.is_up_to_date("toy", values)
    assert not pipeline.is_up_to_date("a_reader", values)
    before = paths[1].stat().st_mtime_ns
    pipeline.run_all("smoke", jobs=2)  # the reader alone runs again
    assert paths[1].stat().st_mtime_ns == before
    assert pipeline.is_up_to_date("a_reader", values)


def test_cli_rejects_unknown_parameter_fast():
    result = subprocess.run(
        [sys.executable, "-m", "ropebook", "run", "rope_basics", "-p", "no_such_param", "1"],
        capture_output=True, text=True, cwd=REPO_ROOT, timeout=60,
    )  # fmt: skip
    assert result.returncode == 2
    assert "unknown parameter 'no_such_param'" in result.stderr
    assert "Valid parameters: profile: str = 'cpu'" in result.stderr


@pytest.mark.parametrize(
    "path", sorted((REPO_ROOT / "chapters").glob("*.py")), ids=lambda p: p.stem
)
def test_chapters_are_percent_scripts_with_one_parameters_cell(path):
    notebook = jupytext.read(path)
    tagged = [c for c in notebook.cells if "parameters" in c.metadata.get("tags", [])]
    assert len(tagged) == 1, f"{path.name}: exactly one cell tagged parameters"
    assert "profile" in pipeline.chapter_parameters(notebook)
    # tags survive the .py -> .ipynb -> .py round trip
    again = jupytext.reads(jupytext.writes(notebook, "ipynb"), "ipynb")
    assert jupytext.writes(again, "py:percent") == jupytext.writes(notebook, "py:percent")
    assert "format_name: percent" in path.read_text()


def test_sync_leaves_chapter_sources_unchanged(tmp_path):
    """`make sync` (part of `make book`) writes the notebooks under the project's jupytext.toml
    and must leave every tracked chapter source byte for byte as it was."""
    (tmp_path / "chapters").mkdir()
    (tmp_path / "jupytext.toml").write_text((REPO_ROOT / "jupytext.toml").read_text())
    sources = sorted((REPO_ROOT / "chapters").glob("*.py"))
    for path in sources:
        (tmp_path / "chapters" / path.name).write_text(path.read_text())
    jupytext_cli = pathlib.Path(sys.executable).with_name("jupytext")
    subprocess.run(
        [str(jupytext_cli), "--to", "ipynb", *(f"chapters/{p.name}" for p in sources)],
        cwd=tmp_path, check=True, capture_output=True,
    )  # fmt: skip
    for path in sources:
        assert (tmp_path / "chapters" / path.name).read_text() == path.read_text(), path.name
        assert (tmp_path / "chapters" / path.with_suffix(".ipynb").name).exists()


RANGED = """# %% tags=["parameters"]
profile = "cpu"  # smoke | cpu | gpu
confidence = 0.95  # in (0, 1): level of every interval
steps = 3  # in [1, inf)
factors = [1, 2]  # in [1, 16]: each a multiple of the context
names = ["rope"]  # in zoo.SPECS
dtype = "float32"  # float32 | bfloat16 (weights)
note = "free"  # any text, no domain
"""


@pytest.mark.parametrize(
    "given, message",
    [
        ({"confidence": "1.5"}, r"confidence must be in \(0, 1\), got 1.5"),
        ({"confidence": "0"}, r"confidence must be in \(0, 1\), got 0"),
        ({"steps": "0"}, r"steps must be in \[1, inf\)"),
        ({"factors": "[1, 32]"}, r"every element of factors must be in \[1, 16\], got 32"),
        (
            {"names": "['rope', 'bogus']"},
            r"every element of names must be in zoo.SPECS, got 'bogus'",
        ),
        ({"dtype": "float16"}, r"dtype must be float32 \| bfloat16, got 'float16'"),
    ],
)
def test_declared_domains_reject_values_before_running(sandbox, given, message):
    (sandbox / "chapters" / "toy.py").write_text(RANGED)
    with pytest.raises(pipeline.ChapterError, match=message) as error:
        pipeline.run_chapter("toy", given)
    assert "confidence: float = 0.95 (in (0, 1))" in str(error.value)
    assert not (sandbox / "executed").exists()


def test_declared_domains_accept_values_inside(sandbox):
    (sandbox / "chapters" / "toy.py").write_text(RANGED)
    declared = pipeline.chapter_parameters(pipeline.read_chapter("toy"))
    assert declared["note"].domain is None
    given = {"confidence": "0.5", "steps": "10", "factors": "[16]", "names": "['nope']",
             "dtype": "bfloat16", "note": "x | y"}  # fmt: skip
    assert pipeline.validate_parameters("toy", declared, given)["factors"] == [16]


def test_a_default_outside_its_domain_is_a_chapter_error(sandbox):
    (sandbox / "chapters" / "toy.py").write_text(RANGED.replace("0.95  #", "1.95  #"))
    with pytest.raises(pipeline.ChapterError, match="declared default does not fit"):
        pipeline.chapter_parameters(pipeline.read_chapter("toy"))


def test_a_domain_survives_ruff_wrapping_the_line(sandbox):
    wrapped = 'profile = "cpu"  # smoke | cpu | gpu\nthreshold = (\n    0.25  # in (0, 1): a long description\n)\n'
    (sandbox / "chapters" / "toy.py").write_text('# %% tags=["parameters"]\n' + wrapped)
    declared = pipeline.chapter_parameters(pipeline.read_chapter("toy"))
    assert declared["threshold"].domain == "in (0, 1)"
    with pytest.raises(pipeline.ChapterError, match=r"threshold must be in \(0, 1\)"):
        pipeline.validate_parameters("toy", declared, {"threshold": "2"})


def test_run_all_records_chapters_run_now_and_up_to_date(tmp_path):
    """The build page's chapter times: a notebook finished before ``run all`` began was skipped
    as up to date, and keeps the time and date of the run that produced it."""
    executed = tmp_path / "toy.ipynb"
    meta = {"seconds": 42.0, "finished": 1_700_000_000.0}
    executed.write_text(json.dumps({"cells": [], "metadata": {"ropebook": meta}}))
    assert pipeline._chapter_time(executed, started=1_699_999_000.0) == {
        "seconds": 42.0, "ran": True, "finished": "2023-11-14 22:13 UTC",
    }  # fmt: skip
    assert not pipeline._chapter_time(executed, started=1_700_000_001.0)["ran"]


def test_run_all_in_processes_runs_each_chapter_once_and_names_a_failure(sandbox, monkeypatch):
    """``run all --jobs 2``: each chapter runs in its own process with the run's parameters, the
    build record lists them in book order, and a failing chapter is named with its own error."""
    threads = "import os\nprint('threads', os.environ.get('OMP_NUM_THREADS'))\n"
    (sandbox / "chapters" / "toy2.py").write_text(
        CHAPTER.replace("steps = 3", "steps = 4") + "\n# %%\n" + threads
    )
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    monkeypatch.setattr(workers, "cores", lambda: [0, 1, 2, 3])
    paths = pipeline.run_all("smoke", jobs=2)
    assert [p.stem for p in paths] == ["toy", "toy2"]
    for path, steps in zip(paths, (3, 4), strict=True):
        text = json.dumps(json.loads(path.read_text())["cells"])
        assert f"smoke {steps} 0.5 x" in text  # each ran with its own parameters and the profile
        assert (path.with_suffix(".py")).exists()
    # each child's share of the 4 cores for torch's and BLAS's threads, so the two do not fight
    assert "threads 2" in json.dumps(json.loads(paths[1].read_text())["cells"])
    record = json.loads((sandbox / "executed" / "records" / "chapters.json").read_text())
    assert [c["chapter"] for c in record["chapters"]] == ["toy", "toy2"]
    assert all(c["ran"] for c in record["chapters"])
    before = paths[0].stat().st_mtime_ns
    assert pipeline.run_all("smoke", jobs=2) == paths  # up to date: nothing runs again
    assert paths[0].stat().st_mtime_ns == before

    (sandbox / "chapters" / "toy3.py").write_text(CHAPTER.replace("fail = False", "fail = True"))
    with pytest.raises(pipeline.ChapterError, match=r"(?s)'toy3' failed.*boom in the test chapter"):
        pipeline.run_all("smoke", jobs=2, force=True)
    assert paths[0].exists() and not (sandbox / "executed" / "toy3.ipynb").exists()


@pytest.mark.parametrize(
    "source, values, expected",
    [
        ('a = 1  # in [0, 9]: ünïcode θ\nb = "x"\n', {"a": 2, "b": "y z"},
         'a = 2  # in [0, 9]: ünïcode θ\nb = "y z"\n'),
        ("n = 10_000  # same value: kept as written\n", {"n": 10000}, "n = 10_000  # same value: kept as written\n"),
        ("t = (\n    0.25  # in (0, 1): wrapped by ruff\n)\nu = [1]\n", {"t": 0.5, "u": ["a", 2]},
         "t = (\n    0.5  # in (0, 1): wrapped by ruff\n)\nu = [\"a\", 2]\n"),
        ("flag = False\nnone = None\n", {"flag": True, "none": 3}, "flag = True\nnone = 3\n"),
    ],
)  # fmt: skip
def test_parameters_cell_shows_the_values_used(source, values, expected):
    shown = pipeline.with_values(source, values)
    assert shown == expected
    namespace = {}
    exec(shown, namespace)  # the cell still runs, and sets the values the run used
    assert {k: namespace[k] for k in values} == values


# ------------------------------------------------------------------ the page's "Rerun" box
def box_rows(box: str) -> dict[str, list[str]]:
    """The parameter table of a rerun box: ``{name: [type, default, values, meaning]}``, with the
    Markdown escapes of ``|`` undone."""
    rows = {}
    for line in box.splitlines():
        if line.startswith("| `"):
            cells = [c.strip().replace("\\|", "|") for c in re.split(r"(?<!\\)\|", line)[1:-1]]
            rows[cells[0].strip("`")] = [cells[1], cells[2].strip("`"), *cells[3:]]
    return rows


def box_command(box: str) -> str:
    lines = box.splitlines()
    return lines[lines.index("```bash") + 1]


def command_values(command: str, name: str, declared: dict) -> dict:
    """What the runner receives from ``command``: `make run` is expanded by make itself (-n) into
    the runner's command line, which is split as the shell splits it and validated."""
    if command.startswith("make "):
        expanded = subprocess.run(
            "make -n --no-print-directory " + command.removeprefix("make "), shell=True,
            cwd=REPO_ROOT, capture_output=True, text=True, check=True,
        ).stdout  # fmt: skip
        command = next(line for line in expanded.splitlines() if "-m ropebook run" in line)
    words = shlex.split(command)
    words = words[words.index("run") + 1 :]
    assert words[0] == name
    given, rest = {}, words[1:]
    while rest:
        flag, *rest = rest
        if flag == "--profile":
            given["profile"], *rest = rest
        else:
            assert flag == "-p", words
            key, value, *rest = rest
            given[key] = value
    return pipeline.validate_parameters(name, declared, given)


def test_rerun_box_states_every_declared_parameter(sandbox):
    (sandbox / "chapters" / "toy.py").write_text(RANGED)
    declared = pipeline.chapter_parameters(pipeline.read_chapter("toy"))
    box = pipeline.rerun_box("toy", declared, {"profile": "smoke"})
    assert box.startswith(":::{dropdown} Rerun this chapter") and box.endswith(":::")
    assert "{download}`toy.ipynb`" in box and "{download}`toy.py`" in box
    assert box_rows(box) == {
        "profile": ["str", "'cpu'", "smoke | cpu | gpu", ""],
        "confidence": ["float", "0.95", "in (0, 1)", "level of every interval"],
        "steps": ["int", "3", "in [1, inf)", ""],
        "factors": ["list", "[1, 2]", "each in [1, 16]", "each a multiple of the context"],
        "names": ["list", "['rope']", "each in zoo.SPECS", ""],
        "dtype": ["str", "'float32'", "float32 | bfloat16", "(weights)"],
        "note": ["str", "'free'", "any", "any text, no domain"],
    }


@pytest.mark.parametrize(
    "values",
    [
        {"profile": "smoke"},
        {},  # no profile given: the chapter's default
        {"profile": "gpu", "steps": 10, "confidence": 0.5, "dtype": "bfloat16", "note": "x-1"},
        {"profile": "cpu", "factors": [1, 16], "note": "two words"},  # beyond what make carries
    ],
)
def test_rerun_command_reproduces_the_run(sandbox, values):
    (sandbox / "chapters" / "toy.py").write_text(RANGED)
    declared = pipeline.chapter_parameters(pipeline.read_chapter("toy"))
    command = box_command(pipeline.rerun_box("toy", declared, values))
    assert command.startswith("make run ") == ("factors" not in values)
    assert command_values(command, "toy", declared) == {"profile": "cpu", **values}


@pytest.mark.parametrize(
    "path", sorted((REPO_ROOT / "chapters").glob("*.py")), ids=lambda p: p.stem
)
def test_every_chapter_box_matches_its_parameters_cell(path):
    """Each chapter's box lists exactly its parameters cell (names, types, defaults, domains) and
    its command, run through the Makefile, gives the runner the page's values."""
    declared = pipeline.chapter_parameters(jupytext.read(path))
    box = pipeline.rerun_box(path.stem, declared, {})
    rows = box_rows(box)
    assert list(rows) == list(declared)
    for name, parameter in declared.items():
        domain = parameter.domain or "any"
        if isinstance(parameter.default, list) and parameter.domain:
            domain = "each " + domain  # checked element by element
        assert rows[name][:3] == [parameter.type_name, repr(parameter.default), domain]
    command = box_command(box)
    assert command == f"make run CHAPTER={path.stem} PROFILE={declared['profile'].default}"
    assert command_values(command, path.stem, declared) == {"profile": declared["profile"].default}
