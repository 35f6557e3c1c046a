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
