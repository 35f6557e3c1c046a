"""The chapters stage one chapter at a time against N at a time (``run all --jobs N``).

Runs ``python -m ropebook run all --force --profile P`` into a temporary executed folder, first
with ``--jobs 1`` and then with ``--jobs N`` (or takes the first from ``--baseline``, an executed
folder that a one-at-a-time run such as ``make book`` left), against the same ``ROPEBOOK_CACHE``:
its zoo models should be cached, or the first run trains them. Prints the wall time of each, their
ratio, each chapter's seconds under both, the lesson model's training tokens/s measured right
before (``python -m ropebook machine``), and whether every glued value and chart of the two runs
agree (``tools/compare_runs.py``; with ``--baseline`` the summary pages differ by their folder's
name).

    .venv/bin/python benchmarks/chapter_jobs.py [--profile smoke] [--jobs 2]
        [--baseline executed] [--rtol 1e-5] [--keep DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def seconds_by_chapter(executed: Path) -> dict[str, float]:
    """Each executed notebook's own run time (``metadata.ropebook.seconds``)."""
    found = {}
    for path in sorted(executed.glob("*.ipynb")):
        meta = json.loads(path.read_text()).get("metadata", {}).get("ropebook", {})
        if "seconds" in meta:
            found[path.stem] = float(meta["seconds"])
    return found


def run_all(profile: str, jobs: int, executed: Path) -> float:
    """Wall seconds of one ``run all --force`` into ``executed``, through the same temporary path
    for every run (the summary pages print their records' folder)."""
    shared = executed.parent / "run" / "executed"
    env = os.environ | {"ROPEBOOK_EXECUTED": str(shared)}
    command = [sys.executable, "-m", "ropebook", "run", "all", "--force", "--profile", profile]
    start = time.perf_counter()
    done = subprocess.run([*command, "--jobs", str(jobs)], cwd=ROOT, env=env, capture_output=True,
                          text=True)  # fmt: skip
    wall = time.perf_counter() - start
    if done.returncode:
        raise SystemExit(f"run all --jobs {jobs} failed:\n{done.stderr[-3000:]}")
    shared.rename(executed)
    return wall


def tokens_per_second(folder: Path) -> float:
    """The cpu lesson model's training tokens/s now (the book's reference benchmark)."""
    env = os.environ | {"ROPEBOOK_EXECUTED": str(folder)}
    subprocess.run([sys.executable, "-m", "ropebook", "machine", "--profile", "cpu"], cwd=ROOT,
                   env=env, check=True, capture_output=True)  # fmt: skip
    record = json.loads((folder / "records" / "machine.json").read_text())
    return float(record["benchmark"]["tokens_per_second"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--profile", default="smoke")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--baseline", type=Path, help="an executed folder of a one-at-a-time run")
    parser.add_argument("--rtol", default="0", help="compare_runs.py --rtol (default 0: identical)")
    parser.add_argument("--keep", type=Path, help="copy both runs' executed folders here")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="chapter-jobs-") as tmp:
        tmp = Path(tmp)
        rate = tokens_per_second(tmp / "machine")
        if args.baseline:
            one, one_wall = args.baseline, sum(seconds_by_chapter(args.baseline).values())
        else:
            one = tmp / "one"
            one_wall = run_all(args.profile, 1, one)
        many = tmp / "many"
        many_wall = run_all(args.profile, args.jobs, many)
        first, second = seconds_by_chapter(one), seconds_by_chapter(many)
        print(f"{'chapter':<20}{'1 at a time, s':>16}{f'{args.jobs} at a time, s':>16}")
        for name in first:
            print(f"{name:<20}{first[name]:>16.0f}{second.get(name, float('nan')):>16.0f}")
        source = "summed from --baseline" if args.baseline else "wall"
        print(
            f"run all, {args.profile}: 1 at a time {one_wall:.0f} s ({source}), {args.jobs} at a "
            f"time {many_wall:.0f} s wall: {one_wall / many_wall:.2f}x; cpu lesson model "
            f"{rate:,.0f} tokens/s measured before"
        )
        same = subprocess.run([sys.executable, str(ROOT / "tools" / "compare_runs.py"), str(one),
                               str(many), "--rtol", args.rtol], capture_output=True, text=True)  # fmt: skip
        print(same.stdout[-3000:])
        alike = f"alike within rtol {args.rtol}" if float(args.rtol) else "identical"
        print("glued values and charts:", alike if same.returncode == 0 else "DIFFER")
        if args.keep:
            for run in (one, many):
                shutil.copytree(run, args.keep / run.name, dirs_exist_ok=True)


if __name__ == "__main__":
    main()
