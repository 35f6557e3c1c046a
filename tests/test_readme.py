"""The README is a newcomer's page: short, with the two commands that do everything, and CI runs
exactly the test command it gives."""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
README = (REPO / "README.md").read_text()
SECTIONS = (
    "Two commands",
    "Re-running one chapter",
    "Analysing your own checkpoint",
    "GPU",
    "Training the zoo on several processes or a cluster",
    "Editing a chapter",
    "Layout",
    "Read online",
    "Contributing",
)


def commands() -> list[str]:
    """The commands of the README's first code block (comments dropped)."""
    block = re.search(r"```bash\n(.*?)```", README, re.S)
    assert block, "the README has no bash code block"
    return [line.split("#")[0].strip() for line in block[1].splitlines() if line.strip()]


def test_readme_is_short_and_has_every_section():
    assert len(README.splitlines()) <= 150
    headings = re.findall(r"^## (.+)$", README, re.M)
    assert [h for h in SECTIONS if h not in headings] == []


def test_two_commands_and_ci_runs_the_test_command():
    found = [c for c in commands() if c.startswith("make")]
    assert found == ["make book", "make test"]
    ci = [
        line.strip()
        for line in (REPO / ".ci" / "run").read_text().splitlines()
        if line.strip() and not line.startswith(("#", "set ", "cd "))
    ]
    assert ci == ["make test"]


def test_every_chapter_is_named_in_the_readme():
    """One line per chapter, in book order: as many bullets before the first section as pages."""
    toc = re.findall(r"file: executed/(\w+)", (REPO / "_toc.yml").read_text())
    intro = README.split("\n## ")[0]
    bullets = re.findall(r"^- \*\*(.+?)\*\*", intro, re.M)
    assert len(toc) > 10 and len(bullets) == len(toc)  # the landing page is the toc's root
