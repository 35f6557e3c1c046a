"""Models a chapter adds, trained in the chapter's own process or on worker processes.

The recall chapter adds seeds to four task models after its first seeds (up to 20 models). In
its process they train one after another over both cores (one XLA device each, gradients
all-reduced); :func:`ropebook.zoo.train_on_workers` trains them on one worker process per core
instead. This script times both paths as the chapter takes them, each from an empty temporary
``ROPEBOOK_CACHE`` (compilation and the workers' start included), in two fresh processes, and
prints the wall times, their ratio and each model's validation perplexity under both.

    .venv/bin/python benchmarks/added_seeds.py [--names rope p-rope-0.75 rope-10k
        p-rope-0.75-10k] [--seeds 3 4] [--profile cpu]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile

# One path, run in a fresh process (so neither inherits the other's compiled programs).
CHILD = """
import json, sys, time
from ropebook import zoo
names, seeds, profile, path = json.loads(sys.argv[1])
jobs = [(n, s, "recall", "task") for n in names for s in seeds]
start = time.perf_counter()
if path == "workers":
    zoo.train_on_workers(jobs, profile=profile, quiet=True)
models = [zoo.load(n, seed=s, profile=profile, domain=d, regime=r, progress=False)
          for n, s, d, r in jobs]
wall = time.perf_counter() - start
print(json.dumps({"wall": wall, "ppl": [m.val_ppl for m in models], "jobs": jobs}))
"""


def run(names: list[str], seeds: list[int], profile: str, path: str) -> dict:
    with tempfile.TemporaryDirectory(prefix="added-seeds-") as cache:
        done = subprocess.run(
            [sys.executable, "-c", CHILD, json.dumps([names, seeds, profile, path])],
            env=os.environ | {"ROPEBOOK_CACHE": cache}, capture_output=True, text=True,
        )  # fmt: skip
    if done.returncode:
        raise SystemExit(f"the {path} run failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--names", nargs="+", default=["rope", "p-rope-0.75", "rope-10k",
                                                       "p-rope-0.75-10k"])  # fmt: skip
    parser.add_argument("--seeds", nargs="+", type=int, default=[3, 4])
    parser.add_argument("--profile", default="cpu")
    args = parser.parse_args()
    own = run(args.names, args.seeds, args.profile, "process")
    spread = run(args.names, args.seeds, args.profile, "workers")
    print(f"{'model':<22}{'ppl, own process':>18}{'ppl, workers':>14}{'diff':>9}")
    for (name, seed, _, _), a, b in zip(own["jobs"], own["ppl"], spread["ppl"], strict=True):
        print(f"{name + f' s{seed}':<22}{a:>18.3f}{b:>14.3f}{100 * (b / a - 1):>+8.2f}%")
    print(
        f"wall: own process {own['wall']:.0f} s, workers {spread['wall']:.0f} s "
        f"({own['wall'] / spread['wall']:.2f}x) for {len(own['jobs'])} models; "
        f"python {sys.version.split()[0]}"
    )


if __name__ == "__main__":
    main()
