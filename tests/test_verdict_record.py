"""Each build's verdicts, kept: the record round-trips with its provenance, a broken one is named,
and the changes against it list every moved verdict or kind and every claim that came or went."""

from __future__ import annotations

import json

import pytest

from ropebook import claims, verdict_record


def claim(cid: str, verdict: str, kind: str = claims.FINDING) -> claims.Claim:
    return claims.Claim(cid, "a source", "a statement", "a measurement", verdict, kind=kind)


def record(name: str, found: list[claims.Claim], profile: str = "cpu", commit: str = "abc1234"):
    provenance = {"profile": profile, "git_commit": commit, "finished": 1_796_219_599.4}
    return claims.ChapterRecord(name, name.title(), found, provenance)


def test_kept_verdicts_round_trip_with_where_they_came_from(tmp_path):
    records = [
        record("decay", [claim("decay.trained", "cannot decide"), claim("decay.fig2", "held",
                                                                        claims.CHECKED)]),
        record("p_rope", [claim("p_rope.nope_worst", "held")], commit="def5678"),
    ]  # fmt: skip
    path = verdict_record.write(records, tmp_path / "verdicts-cpu.json")
    kept = verdict_record.load("cpu", path)
    assert kept["verdicts"] == {
        "decay.trained": ("finding", "cannot decide"),
        "decay.fig2": ("checked", "held"),
        "p_rope.nope_worst": ("finding", "held"),
    }
    assert kept["commits"] == ["abc1234", "def5678"]
    assert kept["measured"] == "2026-12-02"  # the chapters' last finish, not the day kept
    assert "abc1234, def5678" in verdict_record.kept_label(kept)
    assert verdict_record.load("cpu", tmp_path / "absent.json") is None


def test_chapters_run_at_different_profiles_are_no_one_build(tmp_path):
    records = [record("decay", [claim("decay.a", "held")]),
               record("p_rope", [claim("p_rope.b", "held")], profile="smoke")]  # fmt: skip
    assert verdict_record.profile_of(records) is None
    with pytest.raises(ValueError, match="different profiles"):
        verdict_record.write(records, tmp_path / "v.json")


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("{", "not valid JSON"),
        (json.dumps({"format": 1, "profile": "smoke", "verdicts": {"a.b": ["finding", "held"]}}),
         "verdict record of the cpu profile"),
        (json.dumps({"format": 1, "profile": "cpu", "verdicts": {"a.b": "held"}}),
         "without a \\[kind, verdict\\] pair"),
    ],
)  # fmt: skip
def test_a_broken_record_is_named(tmp_path, text, problem):
    path = tmp_path / "verdicts-cpu.json"
    path.write_text(text)
    with pytest.raises(ValueError, match=problem):
        verdict_record.load("cpu", path)


def test_changes_list_moved_verdicts_kinds_and_claims_that_came_or_went():
    before = {
        "decay.trained": ("finding", "cannot decide"),
        "decay.same": ("finding", "held"),
        "p_rope.table1": ("finding", "held"),
        "p_rope.gone": ("finding", "not held"),
        "build.budget": ("finding", "held"),
    }
    after = {
        "decay.trained": ("finding", "not held"),
        "decay.same": ("finding", "held"),
        "p_rope.table1": ("checked", "held"),
        "p_rope.new": ("finding", "held"),
    }
    found = verdict_record.changes(before, after)
    assert [c.claim for c in found] == [
        "decay.trained", "p_rope.table1", "p_rope.new", "p_rope.gone", "build.budget",
    ]  # fmt: skip
    assert found[0].row() == {
        "claim": "decay.trained",
        "before": "cannot decide (finding)",
        "after": "not held (finding)",
    }
    assert found[2].row()["before"] == "—" and found[3].row()["after"] == "—"
    # a page that reads only some chapters compares only theirs
    assert "build.budget" not in [
        c.claim for c in verdict_record.changes(before, after, ["decay", "p_rope"])
    ]
    assert verdict_record.changes(after, after) == []


def test_the_landing_pages_table_of_kept_files_names_kept_verdicts_as_such(tmp_path):
    """Kept verdicts are no study: the landing page's table of ``data/results`` says what they
    are, with their commits, rather than a study's blanks."""
    from ropebook.present import studies as show_studies

    verdict_record.write([record("decay", [claim("decay.trained", "held")])],
                         tmp_path / "verdicts-cpu.json")  # fmt: skip
    study = {"study": "decay_study", "regime": "lesson", "profile": "cpu", "seeds": [0, 1, 2],
             "machine": {"devices": "2 × cpu"}, "measured": "2026-12-03", "commit": "18fd517"}  # fmt: skip
    (tmp_path / "decay_study.json").write_text(json.dumps(study))
    rows = show_studies.kept_table(tmp_path).splitlines()[2:]
    assert (
        rows[0] == "| `decay_study.json` | lesson (cpu) | 3 | 2 × cpu | 2026-12-03 | `18fd517` |"
    )  # the study is the file's name: said once
    assert rows[1].startswith("| `verdicts-cpu.json` (a build's verdicts")
    assert "all chapters (cpu) | — |" in rows[1] and rows[1].endswith("| 2026-12-02 | `abc1234` |")
    assert "?" not in rows[1]
    (tmp_path / "recipes-gpu-matched.json").write_text(json.dumps(study | {"study": "recipes"}))
    other = [r for r in show_studies.kept_table(tmp_path).splitlines() if "recipes" in r]
    assert other == [r"| `recipes-gpu-matched.json` (recipes) | lesson (cpu) | 3 | 2 × cpu "
                     "| 2026-12-03 | `18fd517` |"]  # fmt: skip
