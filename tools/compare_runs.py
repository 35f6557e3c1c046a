"""Compare two runs of the book: every glued value, every chart and every page's text.

A refactor that should change no number is checked by running the chapters before and after
(``executed/`` of each) and, optionally, building both sites::

    python tools/compare_runs.py BEFORE/executed AFTER/executed [--html BEFORE/_build/html AFTER/_build/html]

Glued values are compared by name (names only on one side are listed, not errors: a chapter may
glue new values for its prose); Vega-Lite specs are compared in order, with the random element ids
of the book's renderer removed (with ``--rtol``, numbers may differ by that relative amount and
Altair's content-hashed dataset names are compared by order); page text is the visible text of each built chapter page. Exit
status 1 if any glued value present in both, any chart, or (with ``--html``) any page differs.
"""

from __future__ import annotations

import argparse
import difflib
import json
import re
import sys
from html.parser import HTMLParser
from pathlib import Path

RECORD_PREFIX = "application/papermill.record/"
SPEC_PATTERN = re.compile(r"var spec = (\{.*?\});\n", re.S)


def notebook_artifacts(path: Path) -> tuple[dict[str, str], list[str]]:
    """``(glued values by name, chart specs in order)`` of one executed notebook."""
    notebook = json.loads(path.read_text())
    glued: dict[str, str] = {}
    charts: list[str] = []
    for cell in notebook["cells"]:
        for output in cell.get("outputs", []):
            data = output.get("data", {})
            scrap = output.get("metadata", {}).get("scrapbook")
            if scrap:
                glued[scrap["name"]] = json.dumps(
                    {k.removeprefix(RECORD_PREFIX): v for k, v in data.items()}, sort_keys=True
                )
            for match in SPEC_PATTERN.finditer("".join(data.get("text/html", ""))):
                charts.append(json.dumps(json.loads(match.group(1)), sort_keys=True))
    return glued, charts


class _TextOfPage(HTMLParser):
    """Visible text of a Jupyter Book page's article (scripts, styles and navigation dropped)."""

    SKIP = {"script", "style", "nav", "header", "footer"}

    def __init__(self) -> None:
        super().__init__()
        self.depth_in_article = 0
        self.skipping = 0
        self.chunks: list[str] = []

    def handle_starttag(self, tag, attrs):
        if tag == "article" or self.depth_in_article:
            self.depth_in_article += 1
        if tag in self.SKIP:
            self.skipping += 1

    def handle_endtag(self, tag):
        if self.depth_in_article:
            self.depth_in_article -= 1
        if tag in self.SKIP and self.skipping:
            self.skipping -= 1

    def handle_data(self, data):
        if self.depth_in_article and not self.skipping:
            self.chunks.append(data)


def page_text(path: Path) -> str:
    parser = _TextOfPage()
    parser.feed(path.read_text())
    # One split over the joined text: a glued number and its punctuation stay one word.
    return " ".join("".join(parser.chunks).split())


DATASET_NAME = re.compile(r"data-[0-9a-f]{32}")


def _numbers_close(a, b, rtol: float) -> bool:
    """JSON values equal, numbers within ``rtol`` of each other (relative to the larger)."""
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_numbers_close(a[k], b[k], rtol) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(
            _numbers_close(x, y, rtol) for x, y in zip(a, b, strict=True)
        )
    numbers = (int, float)
    if isinstance(a, numbers) and isinstance(b, numbers) and not isinstance(a, bool):
        return abs(a - b) <= rtol * max(abs(a), abs(b))
    return a == b


def same_chart(a: str, b: str, rtol: float = 0.0) -> bool:
    """Two Vega-Lite specs alike: Altair names each dataset by a hash of its rows, so the names
    are replaced by their order of appearance before the numbers are compared within ``rtol``."""
    if a == b:
        return True
    if not rtol:
        return False

    def plain(spec: str):
        parsed = json.loads(spec)
        datasets = parsed.pop("datasets", {})
        rest = json.dumps(parsed, sort_keys=True)  # names in the order the layers use them
        for i, name in enumerate(dict.fromkeys(DATASET_NAME.findall(rest))):
            rest = rest.replace(name, f"dataset-{i}")
            datasets[f"dataset-{i}"] = datasets.pop(name, None)
        return [json.loads(rest), datasets]

    return _numbers_close(plain(a), plain(b), rtol)


def same_glued(a: str, b: str, rtol: float = 0.0) -> bool:
    """Two glued values alike: the same, or (``rtol``) numbers within it in every format."""
    if a == b or not rtol:
        return a == b
    x, y = json.loads(a), json.loads(b)
    if x.keys() != y.keys():
        return False
    try:
        return all(_numbers_close(float(x[k]), float(y[k]), rtol) for k in x)
    except (TypeError, ValueError):
        return False


def _match_in_order(
    before: list[str], after: list[str], rtol: float = 0.0
) -> tuple[list[int], int]:
    """Indices of ``before`` charts missing from ``after`` as an ordered subsequence (charts a
    chapter added, e.g. a new figure, are skipped), and how many ``after`` charts were extra."""
    unmatched, position = [], 0
    for i, spec in enumerate(before):
        found = next(
            (j for j in range(position, len(after)) if same_chart(spec, after[j], rtol)), None
        )
        if found is None:
            unmatched.append(i)
        else:
            position = found + 1
    return unmatched, len(after) - (len(before) - len(unmatched))


def compare_executed(
    before: Path, after: Path, ignore: frozenset[str] = frozenset(), rtol: float = 0.0
) -> int:
    problems = 0
    for old in sorted(before.glob("*.ipynb")):
        new = after / old.name
        if not new.exists():
            print(f"{old.stem}: missing after")
            problems += 1
            continue
        old_glued, old_charts = notebook_artifacts(old)
        new_glued, new_charts = notebook_artifacts(new)
        changed = [
            n
            for n in old_glued
            if n in new_glued
            and n not in ignore
            and not same_glued(old_glued[n], new_glued[n], rtol)
        ]
        only_before = sorted(set(old_glued) - set(new_glued))
        only_after = sorted(set(new_glued) - set(old_glued))
        unmatched, new_charts_left = _match_in_order(old_charts, new_charts, rtol)
        same_charts = not unmatched
        print(
            f"{old.stem}: {len(old_glued)} glued before, {len(new_glued)} after, "
            f"{len(changed)} changed; charts {len(old_charts)} -> {len(new_charts)}, "
            f"{'all found, in order' if same_charts else 'DIFFERENT'}"
        )
        for name in changed:
            print(
                f"  changed {name}:\n    before {old_glued[name][:300]}\n    after  {new_glued[name][:300]}"
            )
        if only_before:
            print(f"  only before: {', '.join(only_before)}")
        if only_after:
            print(f"  only after: {', '.join(only_after)}")
        if unmatched:
            print(f"  charts before with no identical chart after, in order: {unmatched}")
        if new_charts_left:
            print(f"  {new_charts_left} new chart(s) after (not compared)")
        problems += len(changed) + (not same_charts)
    return problems


def compare_pages(before: Path, after: Path) -> int:
    problems = 0
    for old in sorted((before / "executed").glob("*.html")):
        new = after / "executed" / old.name
        if not new.exists():
            print(f"page {old.name}: missing after")
            problems += 1
            continue
        a, b = page_text(old).split(" "), page_text(new).split(" ")
        if a == b:
            print(f"page {old.name}: text identical ({len(a)} words)")
            continue
        problems += 1
        print(f"page {old.name}: text differs")
        for line in difflib.unified_diff(a, b, lineterm="", n=4):
            if not line.startswith(("---", "+++")):
                print(f"    {line}")
    return problems


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("before", type=Path)
    parser.add_argument("after", type=Path)
    parser.add_argument("--html", nargs=2, type=Path, metavar=("BEFORE", "AFTER"))
    parser.add_argument(
        "--ignore", action="append", default=["book.minutes"], metavar="NAME",
        help="glued names that may differ (default: book.minutes, the run's own duration)",
    )  # fmt: skip
    parser.add_argument(
        "--rtol", type=float, default=0.0,
        help="numbers in charts and glued values may differ by this relative amount (default 0: "
        "identical); for a change that moves float rounding, e.g. 1e-5 for float32",
    )  # fmt: skip
    args = parser.parse_args(argv)
    problems = compare_executed(args.before, args.after, frozenset(args.ignore), args.rtol)
    if args.html:
        problems += compare_pages(*args.html)
    print(f"{problems} difference(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
