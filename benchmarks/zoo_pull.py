"""A chapter rerun on a fresh clone: training its models against pulling them as a published zoo.

A reader's first ``make run CHAPTER=layouts`` trains every model the chapter needs; with a
published zoo (``ropebook.zoo_archive``) it downloads them instead. This script times both from
empty ``ROPEBOOK_CACHE`` folders (no trained model, no compiled program: a fresh clone), each
step in a fresh process: (1) the chapter, training its models; (2) those models published as an
archive from that cache and served by the standard library's HTTP server on this machine; (3)
``ropebook zoo --pull`` of it into another empty cache, then the chapter again. It prints each
wall time, how many models each path trained, the archive's size, the ratio, and the lesson
model's training tokens/s measured first (the book's reference benchmark), so that the times
scale to another machine.

    .venv/bin/python benchmarks/zoo_pull.py [--profile cpu] [--chapter layouts]
"""

from __future__ import annotations

import argparse
import functools
import http.server
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

# the book's reference benchmark, measured the way the chapters-stage benchmark measures it
from chapter_jobs import tokens_per_second

ROOT = Path(__file__).resolve().parents[1]
PUBLISH = """
import json, sys
from pathlib import Path
from ropebook import zoo_archive
profile, out = sys.argv[1], Path(sys.argv[2])
jobs = list(zoo_archive.cached_jobs(profile).values())
done = zoo_archive.publish(profile, out, jobs=jobs)
print(json.dumps({"archive": done.archive.name, "size": done.size, "models": done.models}))
"""


def timed(command: list[str], env: dict[str, str]) -> tuple[float, str]:
    start = time.perf_counter()
    done = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - start
    if done.returncode:
        raise SystemExit(f"{' '.join(command)} failed:\n{done.stdout[-2000:]}{done.stderr[-3000:]}")
    return wall, done.stdout


def models_in(cache: Path) -> int:
    return sum(1 for p in (cache / "zoo").glob("*/checkpoint.json"))


class Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args: object) -> None:  # a line per request would bury the results
        pass


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--profile", default="cpu", choices=("smoke", "cpu", "gpu"))
    parser.add_argument("--chapter", default="layouts")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="zoo-pull-") as folder:
        tmp = Path(folder)
        rate = tokens_per_second(tmp / "machine")
        run = [sys.executable, "-m", "ropebook", "run", args.chapter, "--profile", args.profile]

        def env(cache: str) -> dict[str, str]:
            return os.environ | {"ROPEBOOK_CACHE": str(tmp / cache),
                                 "ROPEBOOK_EXECUTED": str(tmp / f"executed-{cache}")}  # fmt: skip

        trained_wall, _ = timed(run, env("trained"))
        trained = models_in(tmp / "trained")
        _, out = timed([sys.executable, "-c", PUBLISH, args.profile, str(tmp / "site")],
                       env("trained"))  # fmt: skip
        published = json.loads(out.strip().splitlines()[-1])
        handler = functools.partial(Quiet, directory=tmp / "site")
        httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
        threading.Thread(target=httpd.serve_forever, daemon=True).start()
        url = f"http://127.0.0.1:{httpd.server_port}/{published['archive']}"
        pull = [sys.executable, "-m", "ropebook", "zoo", "--profile", args.profile, "--pull", url]
        pull_wall, _ = timed(pull, env("pulled"))
        installed = models_in(tmp / "pulled")
        rerun_wall, _ = timed(run, env("pulled"))
        httpd.shutdown()
        trained_on_pull = models_in(tmp / "pulled") - installed
    pulled_wall = pull_wall + rerun_wall
    print(f"{args.chapter} chapter, {args.profile} profile, fresh cache each; lesson benchmark "
          f"{rate:,.0f} tokens/s (cpu profile, measured first)")  # fmt: skip
    print(f"  training its models:  {trained_wall:7.1f} s  ({trained} models trained)")
    print(f"  pulling them:         {pulled_wall:7.1f} s  (pull {pull_wall:.1f} s: "
          f"{published['models']} models, {published['size'] / 1024**2:,.1f} MiB from "
          f"{published['archive']}; chapter {rerun_wall:.1f} s; {trained_on_pull} models "
          "trained)")  # fmt: skip
    print(f"  ratio (training / pulling): {trained_wall / pulled_wall:.2f}x")


if __name__ == "__main__":
    main()
