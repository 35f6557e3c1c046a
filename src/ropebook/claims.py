"""Claim records: what each chapter tested, what it measured and the verdict.

Every chapter ends with ``claims.record([...])``: the claims are shown as a table and glued
(``myst_nb.glue``) under ``claims`` as JSON, plus ``<id>.verdict`` and ``<id>.measured`` for prose.
The scorecard chapter reads them back from the executed notebooks with :func:`read_claims`.
"""

from __future__ import annotations

import ast
import json
from dataclasses import asdict, dataclass
from pathlib import Path

VERDICTS = ("held", "partly", "not held", "not testable here")


@dataclass(frozen=True)
class Claim:
    id: str
    source: str
    statement: str
    measured: str
    verdict: str
    interval: str | None = None
    seeds: int | None = None

    def __post_init__(self) -> None:
        if self.verdict not in VERDICTS:
            raise ValueError(f"claim {self.id!r}: verdict {self.verdict!r} not in {VERDICTS}")
        if not self.id or not self.source or not self.statement or not self.measured:
            raise ValueError(f"claim {self.id!r}: id, source, statement and measured are required")


def verdict_from_interval(low: float, high: float, *, threshold: float, above: bool = True) -> str:
    """``held`` if the whole interval is on the claimed side of ``threshold``, ``not held`` if it
    is wholly on the other side, ``partly`` if it straddles it."""
    if above:
        return "held" if low > threshold else "not held" if high < threshold else "partly"
    return "held" if high < threshold else "not held" if low > threshold else "partly"


def markdown_table(claims: list[Claim]) -> str:
    rows = ["| claim | source | measured | seeds | verdict |", "|---|---|---|---|---|"]
    for c in claims:
        measured = c.measured + (f" ({c.interval})" if c.interval else "")
        rows.append(f"| {c.statement} | {c.source} | {measured} | {c.seeds or '—'} | **{c.verdict}** |")
    return "\n".join(rows)


def record(claims: list[Claim]) -> None:
    """Show the chapter's claims and glue them for the scorecard."""
    from IPython.display import Markdown, display
    from myst_nb import glue

    ids = [c.id for c in claims]
    if len(set(ids)) != len(ids):
        raise ValueError(f"duplicate claim ids: {ids}")
    display(Markdown(markdown_table(claims)))
    glue("claims", json.dumps([asdict(c) for c in claims]), display=False)
    for c in claims:
        glue(f"{c.id}.verdict", c.verdict, display=False)
        glue(f"{c.id}.measured", c.measured, display=False)


def read_claims(notebook_path: Path | str) -> list[Claim]:
    """The claims glued in an executed notebook (empty list if it glued none)."""
    notebook = json.loads(Path(notebook_path).read_text())
    for cell in notebook["cells"]:
        for output in cell.get("outputs", []):
            if output.get("metadata", {}).get("scrapbook", {}).get("name") == "claims":
                # glue(display=False) stores "application/papermill.record/text/plain"
                text = next(v for k, v in output["data"].items() if k.endswith("text/plain"))
                text = "".join(text) if isinstance(text, list) else text
                return [Claim(**c) for c in json.loads(ast.literal_eval(text))]
    return []
