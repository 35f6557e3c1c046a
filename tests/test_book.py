"""Smoke build of the whole book: every chapter through the runner, then Jupyter Book with -W,
then the offline-assets check and every page opened in headless Chromium."""

import html
import os
import re
import shutil
import subprocess
import sys

import pytest

from ropebook import REPO_ROOT, pipeline
from ropebook.claims import VERDICTS, read_claims

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def smoke_book(tmp_path_factory):
    book = tmp_path_factory.mktemp("book")
    for name in ("_config.yml", "_toc.yml", "references.bib", "references.md"):
        shutil.copy(REPO_ROOT / name, book / name)
    if not (REPO_ROOT / "assets" / "vendor").exists():
        pytest.fail("vendored web assets missing: run `make assets` (make test does)")
    shutil.copytree(REPO_ROOT / "assets", book / "assets")
    env = {**os.environ, "ROPEBOOK_EXECUTED": str(book / "executed")}
    machine = subprocess.run(  # make book's machine stage, for the build page
        [sys.executable, "-m", "ropebook", "machine", "--profile", "smoke"],
        cwd=REPO_ROOT, env=env, capture_output=True, text=True,
    )  # fmt: skip
    assert machine.returncode == 0, machine.stderr[-5000:]
    run = subprocess.run(
        [sys.executable, "-m", "ropebook", "run", "all", "--profile", "smoke", "--jobs", "auto"],
        cwd=REPO_ROOT, env=env, capture_output=True, text=True,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr[-5000:]
    # what a run killed mid-chapter leaves (an interrupted build, resumed): its temporary
    # notebook beside the pages; the site must leave it out, not fail on it
    executed = book / "executed"
    shutil.copy(executed / "decay.ipynb", executed / ".decay.ipynb.k1lled.ipynb")
    build = subprocess.run(
        [str(REPO_ROOT / ".venv/bin/jupyter-book") if (REPO_ROOT / ".venv/bin/jupyter-book").exists()
         else "jupyter-book", "build", str(book), "-W", "-n", "--keep-going"],
        capture_output=True, text=True,
    )  # fmt: skip
    assert build.returncode == 0, build.stdout[-5000:] + build.stderr[-5000:]
    return book


def test_every_chapter_executed_with_claims(smoke_book):
    for name in pipeline.chapter_names():
        notebook = smoke_book / "executed" / f"{name}.ipynb"
        assert notebook.exists(), name
        if name in ("index", "build"):  # they show the others' claims and the build's records
            continue
        claims = read_claims(notebook)
        assert claims, f"{name} glued no claims"
        assert all(c.verdict in VERDICTS for c in claims)


def test_every_chapter_page_offers_its_notebook_source_and_rerun_box(smoke_book):
    """The rerun box's download links reach the executed notebook and the .py that produced it
    (copied into the site by Sphinx, so they work offline), and the page states its command."""
    site = smoke_book / "_build" / "html"
    for name in pipeline.chapter_names():
        page = (site / "executed" / f"{name}.html").read_text()
        text = re.sub(r"<[^>]+>", "", page)  # the command is syntax-highlighted
        assert "Rerun this chapter" in text and f"make run CHAPTER={name} PROFILE=smoke" in text
        for suffix in (".ipynb", ".py"):
            links = re.findall(rf'href="(\.\./_downloads/[0-9a-f]+/{name}\{suffix})"', page)
            assert links, f"{name}: no download link to {name}{suffix}"
            copied = (site / "executed" / links[0]).resolve()
            assert copied.read_bytes() == (smoke_book / "executed" / f"{name}{suffix}").read_bytes()


def test_pages_show_parameters_once(smoke_book):
    """Papermill's injected-parameters cell stays in the notebook, off the page: the parameters
    cell shows the values the run used (profile smoke, not the chapters' default cpu)."""
    for name in pipeline.chapter_names():
        page = (smoke_book / "_build" / "html" / "executed" / f"{name}.html").read_text()
        assert "tag_injected-parameters" not in page, name
    rope_basics = (smoke_book / "_build" / "html" / "executed" / "rope_basics.html").read_text()
    assert 'profile = "smoke"' in html.unescape(re.sub(r"<[^>]+>", "", rope_basics))


def test_build_page_shows_this_builds_records(smoke_book):
    from ropebook import buildrecord

    page = (smoke_book / "_build" / "html" / "executed" / "build.html").read_text()
    text = re.sub(r"<[^>]+>", "", page)
    assert buildrecord.cpu_model() in text and "tokens/s training the rope, smoke profile" in text
    assert "rope_basics" in text and "built without the Makefile" in text
    assert re.search(r"decay\s*now\s*\d+ (s|min)", text)  # each chapter's time, run now


def test_bibliography_page_lists_the_cited_works(smoke_book):
    page = (smoke_book / "_build" / "html" / "references.html").read_text()
    for title in ("Round and Round We Go", "Context-aware Biases for Length Extrapolation"):
        assert title in page
    rope_basics = (smoke_book / "_build" / "html" / "executed" / "rope_basics.html").read_text()
    assert 'href="../references.html#' in rope_basics  # its citations link to their entries


def test_site_loads_nothing_external_and_has_no_errors(smoke_book):
    result = subprocess.run(
        [sys.executable, "-m", "ropebook", "check-site", str(smoke_book / "_build" / "html")],
        capture_output=True, text=True,
    )  # fmt: skip
    assert result.returncode == 0, result.stdout


def test_every_page_renders_in_chromium(smoke_book):
    if not shutil.which("chromium") and not os.path.exists("/usr/bin/chromium"):
        pytest.fail("chromium is not installed: `make browser` installs Debian's package")
    from ropebook.sitecheck import browser_problems

    site = smoke_book / "_build" / "html"
    assert browser_problems(site) == []
    shots = list((smoke_book / "_build" / "screenshots").glob("*.png"))
    assert len(shots) >= len(pipeline.chapter_names()) + 1


def test_article_column_is_wide_at_1200px(smoke_book):
    """assets/custom.css folds the in-page contents into a menu from 1200 to 1439 px, so the
    article takes the whole main column: 896 px of content, not the theme's 624 px."""
    from ropebook.sitecheck import column_width

    site = smoke_book / "_build" / "html"
    assert column_width(site, "executed/rope_basics.html") >= 880


def test_math_and_chart_actually_drawn(smoke_book):
    """The first chapter has display math and one Altair chart: both must reach the page."""
    html = (smoke_book / "_build" / "html" / "executed" / "rope_basics.html").read_text()
    assert "ropebook-vega" in html and "vegaEmbed" in html
    assert "\\theta^{-2k/d}" in html
