"""Check a built site: no external scripts or styles, no error outputs, no broken links,
vendored assets present; with ``--browser`` every page is also opened in headless Chromium at
1200 px and fails on anything drawn wider than the column that holds it, on a chart's slider that
moves nothing, or on a "Contents" button that shows nothing at 1000 px.

``python -m ropebook check-site [_build/html]`` exits non-zero listing every problem.
"""

from __future__ import annotations

import argparse
import functools
import os
import re
import shutil
import subprocess
import threading
import unicodedata
from collections.abc import Iterator
from contextlib import contextmanager
from functools import partial
from html.parser import HTMLParser
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import unquote, urlsplit

from ropebook import REPO_ROOT
from ropebook.pipeline import LANDING

EXTERNAL = re.compile(
    r"<(?:script|link|img|iframe)\b[^>]*\b(?:src|href)=[\"']((?:https?:)?//[^\"']+)[\"'][^>]*>",
    re.IGNORECASE,
)
ERROR_MARKERS = (
    "Traceback (most recent call last)",
    'class="output traceback',
    'class="output error',
)
REQUIRED_ASSETS = (
    "_static/vendor/vega.min.js",
    "_static/vendor/vega-lite.min.js",
    "_static/vendor/vega-embed.min.js",
    "_static/vendor/mathjax/tex-chtml.js",
)


def _pages(site: Path) -> list[Path]:
    """The site's pages (the theme's HTML templates under ``_static`` are not pages)."""
    return sorted(p for p in site.rglob("*.html") if "_static" not in p.relative_to(site).parts)


class _Links(HTMLParser):
    """Collect ``href``/``src`` targets and element ids of one page."""

    def __init__(self) -> None:
        super().__init__()
        self.links: list[str] = []
        self.ids: set[str] = set()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        for name, value in attrs:
            if name in ("href", "src") and value and tag != "base":
                self.links.append(value)
            elif name in ("id", "name") and value:
                self.ids.add(value)


def broken_links(site: Path) -> list[str]:
    """Offline link check: every relative link must reach a file, and its #anchor an element."""
    parsed: dict[Path, _Links] = {}

    def parse(page: Path) -> _Links:
        if page not in parsed:
            parsed[page] = _Links()
            parsed[page].feed(page.read_text(errors="replace"))
        return parsed[page]

    found = []
    for page in _pages(site):
        for link in parse(page).links:
            parts = urlsplit(link)
            if parts.scheme or parts.netloc or link.startswith(("#", "javascript:")):
                continue
            target = (page.parent / unquote(parts.path)).resolve() if parts.path else page
            if target.is_dir():
                target = target / "index.html"
            name = page.relative_to(site)
            if not target.exists():
                found.append(f"{name}: broken link {link}")
            elif (
                parts.fragment
                and target.suffix == ".html"
                and parts.fragment not in parse(target).ids
            ):
                found.append(f"{name}: link {link} names a missing anchor")
    return found


def problems(site: Path) -> list[str]:
    found = [f"missing vendored asset {a}" for a in REQUIRED_ASSETS if not (site / a).exists()]
    pages = _pages(site)
    if not pages:
        found.append(f"no HTML pages under {site}")
    for page in pages:
        text = page.read_text(errors="replace")
        name = page.relative_to(site)
        for match in EXTERNAL.finditer(text):
            tag = match.group(0)
            if tag.lower().startswith("<link") and "stylesheet" not in tag and "preload" not in tag:
                continue  # plain hyperlinks in <link rel=canonical> etc. load nothing
            found.append(f"{name}: loads external {match.group(1)}")
        found += [f"{name}: contains an error output ({m})" for m in ERROR_MARKERS if m in text]
    return found + broken_links(site)


CHROMIUM = os.environ.get("ROPEBOOK_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
]  # fmt: skip
PAGE_PROBE = """() => {
  const mathSource = document.querySelectorAll('.math, .MathJax_Preview, script[type^="math/tex"]').length;
  return {
    math: mathSource,
    rendered: document.querySelectorAll('mjx-container').length,
    mathErrors: document.querySelectorAll('mjx-merror, [data-mjx-error]').length,
    charts: document.querySelectorAll('.ropebook-vega').length,
    drawn: Array.from(document.querySelectorAll('.ropebook-vega')).filter(
      (el) => el.querySelector('svg, canvas')).length,
    brokenImages: Array.from(document.images).filter(
      (img) => !img.complete || img.naturalWidth === 0).map((img) => img.src),
  };
}"""


VIEWPORT = {"width": 1200, "height": 900}
LANDING_PAGE = f"executed/{LANDING}.html"  # the book's root, which opens on its answers
LOAD_TIMEOUT_MS = 180_000
IDLE_TIMEOUT_MS = 20_000  # how long to wait for network idle before checking the page anyway
# Everything inside the article that does not fit the column holding it, one line each: an
# element whose right edge passes its parent's; one that clips or scrolls its content sideways
# (``overflow-x`` not visible, content past its inner right edge); or a block whose own text runs
# past its right edge. Reported once, at the outermost offender (what it holds is not listed
# again); a Vega chart is named by its title. Absolutely positioned elements are left out: they
# are decorations (copy buttons, MathJax's visually hidden speech MathML) outside the column's
# flow; so is the layout inside an equation (MathJax) or a drawing (SVG): the equation or the
# drawing itself is checked.
OVERFLOW_PROBE = r"""() => {
  const root = document.querySelector('article.bd-article') || document.querySelector('main')
    || document.body;
  const words = (el) => (el.textContent || '').trim().replace(/\s+/g, ' ').split(' ')
    .slice(0, 6).join(' ').slice(0, 60);
  const size = (title) => {  // Vega: <g class="role-title-text"><text font-size="13px">
    const text = title.tagName.toLowerCase() === 'text' ? title : title.querySelector('text');
    return text ? parseFloat(text.getAttribute('font-size') || getComputedStyle(text).fontSize) : 0;
  };
  const describe = (el) => {
    const classes = (el.getAttribute('class') || '').trim().split(/\s+/).filter(Boolean)
      .slice(0, 3).map((c) => '.' + c).join('');
    // A Vega chart: its title is the largest title text in it (facet headers are smaller).
    const title = Array.from(el.querySelectorAll('.role-title-text'))
      .reduce((best, t) => (!best || size(t) > size(best) ? t : best), null);
    const what = title ? `chart "${words(title)}"` : `"${words(el)}"`;
    return `<${el.tagName.toLowerCase()}${classes}> ${what}`;
  };
  const floating = (el, upTo) => {
    for (let e = el; e && e !== upTo; e = e.parentElement) {
      const position = getComputedStyle(e).position;
      if (position === 'absolute' || position === 'fixed') return true;
    }
    return false;
  };
  // Drawn at all: not display:none, not hidden, not inside a closed <details> (hide-input).
  const shown = (el) => (el.checkVisibility
    ? el.checkVisibility({ visibilityProperty: true, contentVisibilityAuto: false })
    : el.getClientRects().length > 0 && getComputedStyle(el).visibility !== 'hidden');
  const inline = (style) => style.display === 'inline' || style.display === 'contents';
  const textRight = (node) => {
    const range = document.createRange();
    range.selectNodeContents(node);
    return Math.max(-Infinity, ...Array.from(range.getClientRects())
      .filter((r) => r.width > 0).map((r) => r.right));
  };
  // How far the content of `el` reaches past its inner right edge: its own text, and with
  // `deep` everything inside it.
  const overhang = (el, deep) => {
    const inner = el.getBoundingClientRect().left + el.clientLeft + el.clientWidth;
    let right = -Infinity;
    const texts = [];
    if (deep) {
      const walker = document.createTreeWalker(el, NodeFilter.SHOW_TEXT);
      while (walker.nextNode()) texts.push(walker.currentNode);
      for (const child of el.querySelectorAll('*')) {
        if (shown(child) && !floating(child, el)) {
          right = Math.max(right, child.getBoundingClientRect().right);
        }
      }
    } else {
      texts.push(...Array.from(el.childNodes).filter((n) => n.nodeType === Node.TEXT_NODE));
    }
    for (const text of texts) {
      const parent = text.parentElement;
      if (!text.textContent.trim() || !shown(parent) || floating(parent, el)) continue;
      right = Math.max(right, textRight(text));
    }
    return Math.round(right - inner);
  };
  const found = [];
  const reported = [];
  for (const el of root.querySelectorAll('*')) {
    if (reported.some((r) => r.contains(el))) continue;
    const math = el.parentElement.closest('mjx-container');
    if ((math && root.contains(math)) || el.ownerSVGElement) continue;  // their own layout
    if (!shown(el) || floating(el, root)) continue;
    const rect = el.getBoundingClientRect();
    const past = Math.round(rect.right - el.parentElement.getBoundingClientRect().right);
    if (past > 1 && rect.width > 0) {
      found.push(`${describe(el)} ends ${past} px past its container ${describe(el.parentElement)}`);
      reported.push(el);
      continue;
    }
    const style = getComputedStyle(el);
    if (inline(style) || el.scrollWidth <= el.clientWidth + 1) continue;
    if (style.overflowX !== 'visible') {
      const hidden = overhang(el, true);
      if (hidden > 1) {
        found.push(`${describe(el)} clips or scrolls ${hidden} px of its content sideways`
          + ` (${el.scrollWidth} px wide in ${el.clientWidth} px)`);
        reported.push(el);
      }
    } else {
      const over = overhang(el, false);
      if (over > 1) {
        found.push(`${describe(el)} has text running ${over} px past its right edge`);
        reported.push(el);
      }
    }
  }
  const page = document.documentElement;
  if (page.scrollWidth > page.clientWidth + 1) {
    found.push(`the page scrolls sideways (${page.scrollWidth} px wide in ${page.clientWidth} px)`);
  }
  return found;
}"""


# Every slider of every chart must move it: each range input is set to its far end (its maximum,
# or its minimum when already there), the chart's drawing (SVG markup or canvas pixels) must then
# change within the given milliseconds (:data:`SLIDER_WAIT_MS`; a chart recomputing a hundred
# thousand rows on a loaded machine takes seconds), and the slider is put back.
SLIDER_WAIT_MS = 20_000
SLIDER_PROBE = r"""async (wait) => {
  const drawing = (chart) => {
    const svg = chart.querySelector('svg');
    if (svg) return svg.outerHTML;
    const canvas = chart.querySelector('canvas');
    return canvas ? canvas.toDataURL() : '';
  };
  const redrawn = async (chart, before) => {
    for (let waited = 0; waited < wait; waited += 50) {
      await new Promise((resolve) => setTimeout(resolve, 50));
      const now = drawing(chart);
      if (now !== before) return now;
    }
    return null;
  };
  const move = (input, value) => {
    input.value = value;
    input.dispatchEvent(new Event('input', { bubbles: true }));
  };
  const found = [];
  const charts = Array.from(document.querySelectorAll('.ropebook-vega'));
  for (const [i, chart] of charts.entries()) {
    const title = chart.querySelector('.role-title-text');
    const name = `chart ${i + 1}` + (title ? ` "${title.textContent.trim()}"` : '');
    for (const input of chart.querySelectorAll('input[type=range]')) {
      const named = input.parentElement.querySelector('.vega-bind-name');
      const label = (named ? named.textContent : input.name).trim().replace(/\s+/g, ' ');
      const start = input.value;
      const before = drawing(chart);
      move(input, parseFloat(start) >= parseFloat(input.max) ? input.min : input.max);
      const after = await redrawn(chart, before);
      if (after === null) found.push(`${name}: moving the slider "${label}" changed nothing`);
      move(input, start);
      await redrawn(chart, after === null ? before : after);
    }
  }
  return found;
}"""

# The characters of a page's shown text beyond ASCII (math typeset by MathJax, which brings its own
# fonts, left out): :func:`undrawable` asks fontconfig, which Chromium on Linux falls back through,
# whether some installed font has each of them.
PAGE_CHARACTERS = """() => {
  const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  const chars = new Set();
  while (walker.nextNode()) {
    const parent = walker.currentNode.parentElement;
    if (!parent || parent.closest('mjx-container, script, style') || !parent.checkVisibility()) {
      continue;
    }
    for (const c of walker.currentNode.textContent) if (c.codePointAt(0) > 0x7f) chars.add(c);
  }
  return Array.from(chars).join('');
}"""


@functools.cache
def _has_font(char: str) -> bool:
    listed = subprocess.run(
        ["fc-list", f":charset={ord(char):x}", "family"], capture_output=True, text=True, check=True
    )
    return bool(listed.stdout.strip())


def undrawable(text: str) -> str:
    """The characters of ``text`` that no installed font has (a browser draws them as boxes),
    in order of first appearance; whitespace, marks and format characters are not drawn alone and
    are left out. Empty where fontconfig's ``fc-list`` is missing (nothing to ask)."""
    if not shutil.which("fc-list"):
        return ""
    drawn_alone = (c for c in dict.fromkeys(text) if unicodedata.category(c)[0] not in "CZM")
    return "".join(c for c in drawn_alone if not _has_font(c))


# Below 1200 px the in-page contents fold behind the theme's "Contents" button; at NARROW a click
# on it must put the contents' first link on top of the page.
NARROW = {"width": 1000, "height": 900}
CONTENTS_SHOWN = """() => {
  const link = document.querySelector('#pst-page-toc-nav a');
  if (!link || !link.checkVisibility()) return false;
  const box = link.getBoundingClientRect();
  const x = box.left + Math.min(box.width / 2, 10), y = box.top + box.height / 2;
  const top = x >= 0 && y >= 0 && x < innerWidth && y < innerHeight && document.elementFromPoint(x, y);
  return Boolean(top && link.contains(top));
}"""


# The landing page's answers must fit one laptop screen: from the top down to the findings'
# tally (ropebook.findings.TALLY_LEAD), at this window size.
FIRST_SCREEN = {"width": 1280, "height": 800}
TALLY_BOTTOM = """(lead) => {
  const tally = Array.from(document.querySelectorAll('article p'))
    .find((p) => p.textContent.trim().startsWith(lead));
  return tally ? tally.getBoundingClientRect().bottom + window.scrollY : null;
}"""


def first_screen_problem(page) -> str | None:
    """Whether the landing page's answers, down to their tally, fit :data:`FIRST_SCREEN`
    (``None`` if they do); the viewport is put back to :data:`VIEWPORT`."""
    from ropebook.findings import TALLY_LEAD

    page.set_viewport_size(FIRST_SCREEN)
    try:
        bottom = page.evaluate(TALLY_BOTTOM, TALLY_LEAD)
    finally:
        page.set_viewport_size(VIEWPORT)
    size = f"{FIRST_SCREEN['width']}×{FIRST_SCREEN['height']}"
    if bottom is None:
        return f"no findings tally ({TALLY_LEAD!r}) on the landing page"
    if bottom > FIRST_SCREEN["height"]:
        return f"the findings end {bottom - FIRST_SCREEN['height']:.0f} px below one {size} screen"
    return None


def contents_problem(page) -> str | None:
    """Whether the theme's "Contents" button shows a page's contents at :data:`NARROW` (``None``
    for a page without in-page contents); the viewport is put back to :data:`VIEWPORT`."""
    if not page.query_selector("#pst-page-toc-nav a"):
        return None
    page.set_viewport_size(NARROW)
    try:
        buttons = [b for b in page.query_selector_all(".secondary-toggle") if b.is_visible()]
        if not buttons:
            return f"no visible Contents button at {NARROW['width']} px"
        buttons[0].click()
        try:
            page.wait_for_function(CONTENTS_SHOWN, timeout=5_000)
        except Exception:  # noqa: BLE001 - playwright's TimeoutError: the check failed
            return f"the Contents button at {NARROW['width']} px does not show the page's contents"
        page.keyboard.press("Escape")
        return None
    finally:
        page.set_viewport_size(VIEWPORT)


class _QuietHandler(SimpleHTTPRequestHandler):
    def log_message(self, *args: object) -> None:
        pass


@contextmanager
def _serve(site: Path) -> Iterator[str]:
    handler = partial(_QuietHandler, directory=str(site))
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()


def browser_problems(site: Path, screenshots: Path | None = None) -> list[str]:
    """Open every page in headless Chromium with the network cut off but for the site itself.

    A page fails on any console error, failed or external request, broken image, math that
    MathJax did not typeset, an Altair chart that did not draw, an element wider than its
    container (:data:`OVERFLOW_PROBE`, at :data:`VIEWPORT`'s 1200 px), text that no installed font
    draws (:func:`undrawable`), a chart's slider that does
    not change the chart (:data:`SLIDER_PROBE`, after the screenshot, so that it shows the
    charts as the page opens), or a "Contents" button that does not show the page's contents at
    :data:`NARROW`'s 1000 px (:func:`contents_problem`). Screenshots go to
    ``screenshots`` (default: ``<site>/../screenshots``).
    """
    from playwright.sync_api import TimeoutError as PlaywrightTimeout
    from playwright.sync_api import sync_playwright

    screenshots = screenshots or site.parent / "screenshots"
    screenshots.mkdir(parents=True, exist_ok=True)
    found: list[str] = []
    pages = _pages(site)
    with _serve(site) as root, sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        for path in pages:
            name = path.relative_to(site).as_posix()
            page = browser.new_page(viewport=VIEWPORT)
            errors: list[str] = []

            def route(request_route, name=name, errors=errors):
                url = request_route.request.url
                if url.startswith(root) or url.startswith("data:"):
                    return request_route.continue_()
                errors.append(f"{name}: external request {url}")
                return request_route.abort()

            page.route("**/*", route)
            page.on("console", lambda m, n=name, e=errors: m.type == "error" and e.append(f"{n}: console error: {m.text}"))  # fmt: skip
            page.on("pageerror", lambda exc, n=name, e=errors: e.append(f"{n}: page error: {exc}"))
            page.on("requestfailed", lambda r, n=name, e=errors: e.append(f"{n}: request failed: {r.url}"))  # fmt: skip
            # Pages of several MB of chart specs load in tens of seconds on a loaded 2-core
            # machine: allow minutes rather than playwright's 30 s before calling it a failure.
            page.goto(f"{root}/{name}", wait_until="load", timeout=LOAD_TIMEOUT_MS)
            try:  # Chromium's "network idle" never comes on some pages (plane_map, about one
                # load in two, with no request pending): what the page must show is checked below
                page.wait_for_load_state("networkidle", timeout=IDLE_TIMEOUT_MS)
            except PlaywrightTimeout:
                pass
            try:  # MathJax and vega-embed render asynchronously after load
                page.wait_for_function(
                    "() => Array.from(document.querySelectorAll('.ropebook-vega')).every("
                    "(el) => el.querySelector('svg, canvas')) && (!window.MathJax || "
                    "!MathJax.startup || !MathJax.startup.promise || MathJax.typesetPromise)",
                    timeout=LOAD_TIMEOUT_MS,  # only a page whose charts never draw waits it out
                )
                page.evaluate("() => window.MathJax && MathJax.startup && MathJax.startup.promise")
            except Exception:  # noqa: BLE001 - reported below through the probe
                pass
            probe = page.evaluate(PAGE_PROBE)
            if probe["math"] and probe["rendered"] == 0:
                errors.append(f"{name}: {probe['math']} math elements but none typeset by MathJax")
            if probe["mathErrors"]:
                errors.append(f"{name}: {probe['mathErrors']} MathJax errors")
            if probe["drawn"] < probe["charts"]:
                errors.append(f"{name}: {probe['charts'] - probe['drawn']} Altair charts not drawn")
            errors += [f"{name}: broken image {src}" for src in probe["brokenImages"]]
            errors += [f"{name}: {wide}" for wide in page.evaluate(OVERFLOW_PROBE)]
            shot = screenshots / (name.replace("/", "__").removesuffix(".html") + ".png")
            page.screenshot(path=str(shot), full_page=True)
            boxes = undrawable(page.evaluate(PAGE_CHARACTERS))
            if boxes:
                errors.append(
                    f"{name}: no installed font draws {len(boxes)} characters: {boxes[:20]}"
                )
            errors += [
                f"{name}: {problem}" for problem in page.evaluate(SLIDER_PROBE, SLIDER_WAIT_MS)
            ]
            contents = contents_problem(page)
            errors += [f"{name}: {contents}"] if contents else []
            if name == LANDING_PAGE:
                first = first_screen_problem(page)
                errors += [f"{name}: {first}"] if first else []
            found += errors
            page.close()
        browser.close()
    return found


COLUMN_PROBE = """() => {
  const article = document.querySelector('article.bd-article') || document.body;
  const style = getComputedStyle(article);
  return article.clientWidth - parseFloat(style.paddingLeft) - parseFloat(style.paddingRight);
}"""


def column_width(site: Path, page: str) -> float:
    """The width in px of the article's content on ``page`` of ``site`` at :data:`VIEWPORT`: the
    room a table, a code cell or a chart has before the overflow check reports it."""
    from playwright.sync_api import sync_playwright

    with _serve(site) as root, sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            tab = browser.new_page(viewport=VIEWPORT)
            tab.route(
                "**/*", lambda r: r.continue_() if r.request.url.startswith(root) else r.abort()
            )
            tab.goto(f"{root}/{page}", wait_until="load")
            return float(tab.evaluate(COLUMN_PROBE))
        finally:
            browser.close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m ropebook check-site", description=__doc__)
    parser.add_argument("site", nargs="?", default=str(REPO_ROOT / "_build" / "html"))
    parser.add_argument("--browser", action="store_true", help="also open every page in Chromium")
    args = parser.parse_args(argv)
    site = Path(args.site)
    issues = problems(site)
    if args.browser and not issues:
        issues += browser_problems(site)
    for issue in issues:
        print(f"site check: {issue}")
    pages = len(_pages(site))
    print(f"site check: {pages} pages, {len(issues)} problems")
    return 1 if issues else 0
