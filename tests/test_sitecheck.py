"""The browser check finds what does not fit its column, on tiny hand-written pages served locally."""

import os
import shutil

import pytest

from ropebook import REPO_ROOT, sitecheck

PAGE = """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{title}</title>
<style>
  body {{ margin: 0; font: 16px/1.5 sans-serif; }}
  article.bd-article {{ width: 400px; padding: 0 20px; }}
  .scroller {{ overflow-x: auto; }}
  pre {{ font: 14px monospace; margin: 0; }}
</style></head>
<body><main><article class="bd-article">{body}</article></main></body></html>"""

LONG = "an_unbreakable_identifier_that_is_much_wider_than_four_hundred_pixels_of_column"

FITS = f"""
<p>Prose wraps at the column's edge however long it goes on, because browsers break lines
between words; this sentence is long enough to need three lines in four hundred pixels.</p>
<pre style="white-space: pre-wrap; overflow-wrap: anywhere">x = {LONG}</pre>
<table><tr><th>claim</th><th>verdict</th></tr>
<tr><td>a claim long enough to wrap inside its cell, several times over</td><td>held</td></tr>
</table>
<p>Inline math: <span style="display: inline-flex; overflow: hidden">x<span
  style="position: absolute; width: 900px; clip: rect(1px, 1px, 1px, 1px)">speech</span></span>.</p>
<div style="position: relative"><button style="position: absolute; left: 390px">copy</button></div>
<details><summary>Show code</summary><pre>{LONG} {LONG}</pre></details>
<svg width="100" height="20"><text x="0" y="15">an axis label longer than its drawing</text></svg>
"""

OVERFLOWS = f"""
<p>Three things that do not fit:</p>
<div class="chart"><svg width="600" height="20"><rect width="600" height="20"/></svg></div>
<div class="scroller"><table><tr><td>{LONG}</td></tr></table></div>
<div class="output" style="overflow-x: auto"><svg width="700" height="40">
  <g class="mark-text role-title-text"><text font-size="11px" x="0" y="15">facet one</text></g>
  <g class="mark-text role-title-text"><text font-size="13px" x="0" y="35">Perplexity vs
  position</text></g></svg></div>
<pre class="plain">y = {LONG}</pre>
"""


@pytest.fixture(scope="module")
def problems(tmp_path_factory):
    if not os.path.exists(sitecheck.CHROMIUM) and not shutil.which("chromium"):
        pytest.fail("chromium is not installed: `make browser` installs Debian's package")
    site = tmp_path_factory.mktemp("site")
    (site / "fits.html").write_text(PAGE.format(title="fits", body=FITS))
    (site / "overflows.html").write_text(PAGE.format(title="overflows", body=OVERFLOWS))
    return sitecheck.browser_problems(site, screenshots=site.parent / "shots")


def test_a_page_that_fits_has_no_problems(problems):
    assert [p for p in problems if p.startswith("fits.html")] == []


def test_every_overflow_is_named_with_page_element_and_amount(problems):
    found = [p for p in problems if p.startswith("overflows.html: ")]
    assert len(found) == 4, problems
    svg, table, chart, pre = found
    # the drawing is 600 px in a 400 px column: it ends 200 px past its container
    assert svg == ('overflows.html: <svg> "" ends 200 px past its container <div.chart> ""'), svg
    assert table.startswith('overflows.html: <div.scroller> "an_unbreakable_identifier')
    assert "clips or scrolls" in table and "in 400 px" in table
    # a chart is named by its title, the largest title text in it, not by a facet header
    assert chart.startswith(
        'overflows.html: <div.output> chart "Perplexity vs position" clips or scrolls 300 px'
    ), chart
    assert pre.startswith('overflows.html: <pre.plain> "y = an_unbreakable_identifier')
    assert "has text running" in pre and "past its right edge" in pre


def test_screenshots_are_taken(problems, tmp_path_factory):
    shots = sorted(p.name for p in tmp_path_factory.getbasetemp().rglob("shots/*.png"))
    assert shots == ["fits.png", "overflows.png"]


def test_column_width_is_the_article_content_box(tmp_path):
    (tmp_path / "fits.html").write_text(PAGE.format(title="fits", body=FITS))
    # article.bd-article: width 400 px (content box) plus 20 px padding each side
    assert sitecheck.column_width(tmp_path, "fits.html") == 400.0


# ------------------------------------------------- sliders, the Contents button, missing glyphs
CONTENTS = """<div class="bd-header-article"><button class="secondary-toggle">Contents</button></div>
<nav id="pst-page-toc-nav" style="position: fixed; left: {left}; top: 100px">
<a href="#one">One</a></nav><h2 id="one">One</h2>
<script>
document.querySelector('.secondary-toggle').addEventListener('click', () => {{
  document.querySelector('#pst-page-toc-nav').style.left = '{opened}';
}});
</script>"""


def chart_page(chart) -> str:
    """A page holding ``chart`` as the book's renderer writes it (ropebook.plots), loading the
    vendored vega libraries from the site."""
    from ropebook import plots

    scripts = "".join(
        f'<script src="vendor/{name}"></script>'
        for name in ("vega.min.js", "vega-lite.min.js", "vega-embed.min.js")
    )
    html = plots._book_renderer(chart.to_dict())["text/html"]
    return PAGE.format(title="chart", body=html).replace("</head>", scripts + "</head>")


@pytest.fixture(scope="module")
def interactive(tmp_path_factory):
    """Problems found on pages with a slider that moves its chart, one that moves nothing, a
    Contents button that shows the contents and one that does not, and undrawable text."""
    import altair as alt

    if not os.path.exists(sitecheck.CHROMIUM):
        pytest.fail("chromium is not installed: `make browser` installs Debian's package")
    site = tmp_path_factory.mktemp("interactive")
    shutil.copytree(REPO_ROOT / "assets" / "vendor", site / "vendor")
    scale = alt.param(name="scale", value=1.0, bind=alt.binding_range(min=0.5, max=2, step=0.5))
    bars = alt.Chart(alt.InlineData(values=[{"v": 1}, {"v": 2}])).mark_bar()
    moving = (
        bars.transform_calculate(w="datum.v * scale")
        .encode(x=alt.X("w:Q", scale=alt.Scale(domain=[0, 4])), y="v:N")
        .add_params(scale)
        .properties(width=200, title="moves")
    )
    dead = bars.encode(x="v:Q", y="v:N").add_params(scale).properties(width=200, title="dead")
    pages = {
        "moving.html": chart_page(moving),
        "dead.html": chart_page(dead),
        "contents_opens.html": PAGE.format(
            title="c", body=CONTENTS.format(left="2000px", opened="10px")
        ),
        "contents_dead.html": PAGE.format(
            title="c", body=CONTENTS.format(left="2000px", opened="2000px")
        ),
        "tangut.html": PAGE.format(title="t", body="<p>Tangut: \U00017000\U00017001.</p>"),
    }
    for name, html in pages.items():
        (site / name).write_text(html)
    return sitecheck.browser_problems(site, screenshots=site.parent / "interactive-shots")


def test_a_slider_that_moves_its_chart_passes(interactive):
    assert [p for p in interactive if p.startswith("moving.html")] == []


def test_a_slider_that_moves_nothing_is_named(interactive):
    found = [p for p in interactive if p.startswith("dead.html")]
    assert found == ['dead.html: chart 1 "dead": moving the slider "scale" changed nothing'], found


def test_a_contents_button_must_show_the_contents_at_1000_px(interactive):
    assert [p for p in interactive if p.startswith("contents_opens.html")] == []
    found = [p for p in interactive if p.startswith("contents_dead.html")]
    assert found == [
        "contents_dead.html: the Contents button at 1000 px does not show the page's contents"
    ], found


def test_text_no_font_draws_is_named(interactive):
    # No Debian font draws Tangut (U+17000...); if one is ever installed, pick another script.
    found = [p for p in interactive if p.startswith("tangut.html")]
    assert found == ["tangut.html: no installed font draws 2 characters: \U00017000\U00017001"]


def test_the_chinese_prompt_of_the_frequency_chapter_is_drawable():
    """`make browser` installs a CJK font: the Daodejing that the frequency chapter prints is
    drawn, not shown as boxes (as it was before the font)."""
    from ropebook.analysis.frequencies import DAODEJING

    assert sitecheck.undrawable(DAODEJING) == ""


def test_the_landing_pages_answers_must_end_within_one_screen(tmp_path):
    from playwright.sync_api import sync_playwright

    from ropebook.findings import TALLY_LEAD

    tally = f"<p>{TALLY_LEAD} 3 findings: 2 held, 1 not held.</p>"
    pages = {
        "short.html": "<ul><li>one answer</li></ul>" + tally,
        "tall.html": '<div style="height: 900px"></div>' + tally,  # ends 900 + a line down
        "none.html": "<p>no tally here</p>",
    }
    for name, body in pages.items():
        (tmp_path / name).write_text(PAGE.format(title=name, body=body))
    found = {}
    with sitecheck._serve(tmp_path) as root, sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=sitecheck.CHROMIUM, args=sitecheck.CHROMIUM_ARGS
        )
        for name in pages:
            page = browser.new_page(viewport=sitecheck.VIEWPORT)
            page.goto(f"{root}/{name}")
            found[name] = sitecheck.first_screen_problem(page)
            assert page.viewport_size == sitecheck.VIEWPORT  # put back for the other checks
        browser.close()
    assert found["short.html"] is None
    assert found["tall.html"].startswith("the findings end ") and "1280×800" in found["tall.html"]
    assert found["none.html"] == f"no findings tally ({TALLY_LEAD!r}) on the landing page"
