"""Each build's verdicts, kept, so the next build can say what changed.

A build's verdicts live in its executed chapters (their claim records). ``python -m ropebook
verdicts --keep`` writes them, claim by claim with each claim's kind, to
``data/results/verdicts-<profile>.json`` with the commit, machine and date of the chapters that
made them (:func:`write`, atomic); without ``--keep`` it prints what changed against the kept
record. The scorecard lists the same changes (:func:`changes`): every claim whose kind or verdict
differs, and the claims that appeared or went, before → after.
"""

from __future__ import annotations

import argparse
import datetime
import json
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ropebook import claims, io, paths

FORMAT = 1
Verdicts = dict[str, tuple[str, str]]  # claim id -> (kind, verdict)


def path_of(profile: str) -> Path:
    return paths.REPO_ROOT / "data" / "results" / f"verdicts-{profile}.json"


def verdicts(records: Iterable[claims.ChapterRecord]) -> Verdicts:
    """Every claim of the chapters' records, in their order: ``{id: (kind, verdict)}``."""
    return {c.id: (c.kind, c.verdict) for r in records for c in r.claims}


def profile_of(records: Iterable[claims.ChapterRecord]) -> str | None:
    """The profile every chapter ran at, or ``None`` where they differ (or none recorded it)."""
    ran = {r.provenance.get("profile") for r in records}
    return ran.pop() if len(ran) == 1 else None


def write(records: list[claims.ChapterRecord], path: Path | None = None) -> Path:
    """Keep the verdicts of ``records`` (chapters run at one profile) with where they came from."""
    from ropebook import buildrecord

    profile = profile_of(records)
    if profile is None:
        raise ValueError("the chapters ran at different profiles: no one build's verdicts to keep")
    commits = sorted({str(r.provenance.get("git_commit", "unknown")) for r in records})
    finished = [r.provenance["finished"] for r in records if "finished" in r.provenance]
    path = path_of(profile) if path is None else Path(path)
    io.write_json_atomic(path, {
        "format": FORMAT, "profile": profile, "commits": commits,
        "measured": datetime.date.fromtimestamp(max(finished, default=time.time())).isoformat(),
        "machine": buildrecord.machine(),
        "verdicts": {cid: list(kv) for cid, kv in verdicts(records).items()},
    })  # fmt: skip
    return path


def load(profile: str, path: Path | None = None) -> dict[str, Any] | None:
    """The kept record of ``profile`` (``None`` where none is kept), or a ValueError naming what
    is wrong with the file."""
    path = path_of(profile) if path is None else Path(path)
    if not path.exists():
        return None
    try:
        kept = json.loads(path.read_text())
    except json.JSONDecodeError as error:
        raise ValueError(f"{path}: not valid JSON ({error})") from error
    table = kept.get("verdicts") if isinstance(kept, dict) else None
    if kept.get("format") != FORMAT or kept.get("profile") != profile or not table:
        raise ValueError(f"{path}: not a format-{FORMAT} verdict record of the {profile} profile")
    if bad := [cid for cid, kv in table.items() if not (isinstance(kv, list) and len(kv) == 2)]:
        raise ValueError(f"{path}: claims without a [kind, verdict] pair: {bad[:3]}")
    kept["verdicts"] = {cid: (kind, verdict) for cid, (kind, verdict) in table.items()}
    return kept


@dataclass(frozen=True)
class Change:
    """One claim whose record differs: ``(kind, verdict)`` before and after (``None``: absent)."""

    claim: str
    before: tuple[str, str] | None
    after: tuple[str, str] | None

    def row(self) -> dict[str, str]:
        def side(kv: tuple[str, str] | None) -> str:
            return "—" if kv is None else f"{kv[1]} ({kv[0]})"

        return {"claim": self.claim, "before": side(self.before), "after": side(self.after)}


def changes(
    before: Mapping[str, tuple[str, str]],
    after: Mapping[str, tuple[str, str]],
    chapters: Iterable[str] | None = None,
) -> list[Change]:
    """Every claim whose kind or verdict differs between two records, and the claims only one of
    them has, in ``after``'s order then ``before``'s; with ``chapters``, only their claims (a
    page that reads some chapters compares those)."""
    if chapters is not None:
        keep = set(chapters)
        before = {cid: kv for cid, kv in before.items() if cid.split(".", 1)[0] in keep}
    ids = [*after, *(cid for cid in before if cid not in after)]
    return [
        Change(cid, before.get(cid), after.get(cid))
        for cid in ids
        if before.get(cid) != after.get(cid)
    ]


def kept_label(kept: Mapping[str, Any]) -> str:
    """Where a kept record came from: its profile, commit(s), machine and date."""
    machine = kept["machine"]
    return (
        f"the {kept['profile']} build at {', '.join(c[:7] for c in kept['commits'])} on "
        f"{machine['cpu']} ({machine['cores']} cores), {kept['measured']}"
    )


def main(argv: list[str] | None = None) -> int:
    from ropebook import pipeline

    parser = argparse.ArgumentParser(
        prog="python -m ropebook verdicts",
        description="What changed against the kept verdicts of the executed chapters' profile; "
        "with --keep, keep theirs instead.",
    )
    parser.add_argument("--keep", action="store_true", help="write the executed verdicts")
    args = parser.parse_args(argv)
    names = pipeline.chapter_names()
    missing = [n for n in names if not (pipeline.EXECUTED_DIR / f"{n}.ipynb").exists()]
    if missing:
        parser.error(f"chapters not executed: {missing} (python -m ropebook run all)")
    records = [claims.read_chapter_record(pipeline.EXECUTED_DIR / f"{n}.ipynb") for n in names]
    profile = profile_of(records)
    if profile is None:
        parser.error("the executed chapters ran at different profiles")
    kept = load(profile)
    if kept is None:
        print(f"no kept {profile} verdicts ({path_of(profile)})")
    else:
        found = changes(kept["verdicts"], verdicts(records))
        print(f"{len(found)} change(s) against {kept_label(kept)}:")
        for change in found:
            row = change.row()
            print(f"  {row['claim']}: {row['before']} -> {row['after']}")
    if args.keep:
        print(f"kept: {write(records)}")
    return 0
