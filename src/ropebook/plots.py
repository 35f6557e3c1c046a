"""Figure helpers shared by chapters: matplotlib defaults and an offline Altair renderer.

In the book, Altair charts are drawn by vega-embed loaded from the site's own ``_static/vendor``
(see ``_config.yml``), never from a CDN: :func:`setup` registers a renderer whose HTML only calls
the global ``vegaEmbed``. Outside the runner (plain Jupyter) the default renderer is kept.
"""

from __future__ import annotations

import json
import os
import uuid

import altair as alt
import matplotlib.pyplot as plt

BOOK_RENDERER = "ropebook"


def _book_renderer(spec: dict, **_: object) -> dict[str, str]:
    element = f"vega-{uuid.uuid4().hex[:12]}"
    html = f"""<div id="{element}" class="ropebook-vega"></div>
<script type="text/javascript">
(function() {{
  var spec = {json.dumps(spec)};
  function draw() {{
    vegaEmbed("#{element}", spec, {{"actions": false}}).catch(function(error) {{ console.error(error); }});
  }}
  if (window.vegaEmbed) {{ draw(); }} else {{ window.addEventListener("load", draw); }}
}})();
</script>"""
    return {"text/html": html, "text/plain": f"<Altair chart {element}>"}


alt.renderers.register(BOOK_RENDERER, _book_renderer)


def setup() -> None:
    """Call once at the top of a chapter."""
    from ropebook.pipeline import PROVENANCE_ENV

    if os.environ.get(PROVENANCE_ENV):
        alt.renderers.enable(BOOK_RENDERER)
    alt.data_transformers.disable_max_rows()
    plt.rcParams.update(
        {
            "figure.dpi": 110,
            "figure.figsize": (7.0, 3.6),
            "axes.grid": True,
            "grid.alpha": 0.3,
            "axes.spines.top": False,
            "axes.spines.right": False,
        }
    )


def table(rows: list[dict], *, digits: int = 3):
    """Show a list of records as a Markdown table (numbers to ``digits`` significant figures)."""
    from IPython.display import Markdown

    def cell(value: object) -> str:
        if isinstance(value, float):
            return f"{value:.{digits}g}"
        return str(value).replace("|", "\\|")

    columns = list(rows[0])
    lines = ["| " + " | ".join(cell(c) for c in columns) + " |", "|" + "---|" * len(columns)]
    lines += ["| " + " | ".join(cell(row[c]) for c in columns) + " |" for row in rows]
    return Markdown("\n".join(lines))


# ------------------------------------------------------------------ summary pages (scorecard)
# held, partly, bounded, not held, cannot decide, uninformative here, not testable here
# (claims.VERDICTS)
VERDICT_COLOURS = ("#2a9d8f", "#e9c46a", "#90be6d", "#e76f51", "#8ecae6", "#cdb4db", "#adb5bd")


def _claim_rows(claims: list) -> list[dict]:
    from ropebook.citations import cite_roles
    from ropebook.claims import evidence_text, verdict_label

    return [
        {
            "claim (source)": f"{c.statement} — *{cite_roles(c.source)}*",
            "measured": c.measured + (f" ({c.interval})" if c.interval else ""),
            "evidence": evidence_text(c),
            "verdict": f"**{verdict_label(c)}**",
        }
        for c in claims
    ]


def claims_by_chapter(records: list):
    """Every claim of every chapter (:class:`ropebook.claims.ChapterRecord`): per chapter a line
    linking to it with its tally (findings by verdict, proofs and checks apart), then a
    four-column table of its claims, findings first."""
    from IPython.display import Markdown

    from ropebook.claims import tally_text

    parts = []
    for record in records:
        parts.append(f"**[{record.title}]({record.name}.ipynb)**: {tally_text(record.claims)}")
        ordered = sorted(record.claims, key=lambda c: not c.finding)
        parts.append(table(_claim_rows(ordered)).data)
    return Markdown("\n\n".join(parts))


def wrap_label(text: str, width: int = 28) -> list[str]:
    """``text`` cut at spaces into lines of at most ``width`` characters (a longer word keeps its
    own line), for chart labels that Vega draws one line per list element."""
    lines: list[str] = []
    for word in text.split():
        if lines and len(lines[-1]) + 1 + len(word) <= width:
            lines[-1] += " " + word
        else:
            lines.append(word)
    return lines or [""]


def wrapped_labels(labels: list[str], width: int = 28) -> str:
    """A Vega ``labelExpr`` drawing each of ``labels`` on lines of at most ``width`` characters
    (:func:`wrap_label`); other labels are drawn as they are."""
    table_ = {label: wrap_label(label, width) for label in labels}
    return f"{json.dumps(table_, ensure_ascii=False)}[datum.label] || datum.label"


def verdict_chart(records: list, *, width: int = 360, label_width: int = 28):
    """Stacked bars: how many findings of each chapter got each verdict (chapter titles
    wrapped); proofs and checks are not scored, so not drawn."""
    from ropebook.claims import VERDICTS

    counts = [
        {
            "chapter": r.title,
            "verdict": v,
            "findings": sum(c.finding and c.verdict == v for c in r.claims),
        }
        for r in records
        for v in VERDICTS
    ]
    titles = [r.title for r in records]
    lines = max(len(wrap_label(t, label_width)) for t in titles)
    return (
        alt.Chart(alt.InlineData(values=counts), title="Verdicts by chapter")
        .mark_bar()
        .encode(
            y=alt.Y(
                "chapter:N",
                title=None,
                sort=titles,
                axis=alt.Axis(labelExpr=wrapped_labels(titles, label_width), labelLimit=0),
            ),
            x=alt.X("findings:Q", title="number of findings"),
            color=alt.Color(
                "verdict:N",
                scale=alt.Scale(domain=list(VERDICTS), range=list(VERDICT_COLOURS)),
            ),
            tooltip=["chapter:N", "verdict:N", "findings:Q"],
        )
        .properties(width=width, height=alt.Step(max(20, 13 * lines + 8)))
    )


def coverage_table(covered: dict):
    """One row per paper item of :func:`ropebook.claims.coverage`: how many claims test it, their
    verdicts (or kinds, for proofs and checks) and the chapters that hold them (linked)."""
    from ropebook.claims import verdict_label

    rows = [
        {
            "item": item,
            "claims": len(found),
            "verdicts": ", ".join(sorted({verdict_label(c) for _, c in found})) or "—",
            "where": ", ".join(sorted({f"[{name}]({name}.ipynb)" for name, _ in found})) or "—",
        }
        for item, found in covered.items()
    ]
    return table(rows)


# ------------------------------------------------------------------ summary pages (landing page)
def build_provenance(records: list) -> dict:
    """What the chapters' provenance says about this build: sorted ``commits``, ``profiles`` and
    ``devices``, the total execution ``seconds`` and the number of ``chapters``."""
    provenance = [r.provenance for r in records if r.provenance]
    return {
        "commits": sorted({p.get("git_commit", "unknown") for p in provenance}),
        "profiles": sorted({str(p.get("profile")) for p in provenance}),
        "devices": sorted({d for p in provenance for d in p.get("jax_devices", [])}),
        "seconds": sum(p.get("seconds", 0) for p in provenance),
        "chapters": len(records),
    }


def build_line(build: dict):
    """One sentence on the build (:func:`build_provenance`): commit, profile, devices, time."""
    from IPython.display import Markdown

    def code(values: list[str]) -> str:
        return ", ".join(f"`{v}`" for v in values)

    return Markdown(
        f"Built from commit {code(build['commits'])} with profile {code(build['profiles'])} on "
        f"{', '.join(build['devices']) or 'unknown devices'}; {build['chapters']} chapters took "
        f"{build['seconds'] / 60:.1f} minutes of execution "
        "(models come from the zoo's cache; training time is reported in each chapter)."
    )
