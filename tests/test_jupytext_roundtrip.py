"""Editing a chapter in Jupyter must not change its source: ``.py`` → Jupyter → save → ``.py`` is
byte-identical for every chapter, whether Jupyter opened the ``.py`` itself or its paired
``.ipynb`` (written by ``make sync``), and an edit made in Jupyter lands in both files.

Jupyter saves through jupytext's contents manager, which applies the project's ``jupytext.toml``.
The manager is built here on jupyter_server's file manager when that is installed, else on a
minimal file manager with the few methods jupytext's manager calls (what it reads and writes is
then exactly what Jupyter would, without a server)."""

import datetime
import logging
import os
import pathlib
import shutil
import subprocess
import sys
import types

import nbformat
import pytest

jupytext = pytest.importorskip("jupytext")

REPO_ROOT = pathlib.Path(__file__).resolve().parents[1]
CHAPTERS = sorted((REPO_ROOT / "chapters").glob("*.py"))
JUPYTEXT_CLI = pathlib.Path(sys.executable).with_name("jupytext")


class Files:
    """The part of a Jupyter file contents manager that jupytext's manager uses."""

    allow_hidden = False

    def __init__(self, root_dir, **kwargs):
        super().__init__(**kwargs)
        self.root_dir = str(root_dir)
        self.log = logging.getLogger("contents")

    def _get_os_path(self, path):
        return os.path.join(self.root_dir, path.strip("/"))

    def file_exists(self, path=""):
        return os.path.isfile(self._get_os_path(path))

    def dir_exists(self, path=""):
        return os.path.isdir(self._get_os_path(path))

    def exists(self, path=""):
        return os.path.exists(self._get_os_path(path))

    def get(self, path, content=True, type=None, format=None, require_hash=False):
        from tornado.web import HTTPError

        os_path = pathlib.Path(self._get_os_path(path))
        if not os_path.exists():
            raise HTTPError(404, f"no such file: {path}")
        stamp = datetime.datetime.fromtimestamp(os_path.stat().st_mtime, datetime.UTC)
        model = {"path": path, "type": type or "file", "last_modified": stamp}
        if content:
            text = os_path.read_text()
            notebook = type == "notebook"
            model["content"] = nbformat.reads(text, as_version=4) if notebook else text
            model["format"] = "json" if notebook else "text"
        return model

    def save(self, model, path=""):
        os_path = pathlib.Path(self._get_os_path(path))
        if model["type"] == "directory":
            os_path.mkdir(parents=True, exist_ok=True)
        elif model["type"] == "notebook":
            notebook = nbformat.from_dict(model["content"])
            os_path.write_text(nbformat.writes(notebook, version=nbformat.NO_CONVERT) + "\n")
        else:
            os_path.write_text(model["content"])
        return self.get(path, content=False, type=model["type"])


def contents_manager_class():
    try:
        from jupyter_server.services.contents.largefilemanager import LargeFileManager
        from jupytext.sync_contentsmanager import build_sync_jupytext_contents_manager_class

        return build_sync_jupytext_contents_manager_class(LargeFileManager)
    except ImportError:
        pass
    # jupytext.sync_contentsmanager builds a default manager on import and fails without a
    # Jupyter server package; give it this module's file manager as notebook's for that import
    names = [
        "notebook", "notebook.services", "notebook.services.contents",
        "notebook.services.contents.filemanager",
    ]  # fmt: skip
    saved = {name: sys.modules.get(name) for name in names}
    try:
        for name in names:
            sys.modules[name] = types.ModuleType(name)
        sys.modules[names[-1]].FileContentsManager = Files
        from jupytext.sync_contentsmanager import build_sync_jupytext_contents_manager_class
    finally:
        for name, module in saved.items():
            if module is None:
                sys.modules.pop(name, None)
            else:
                sys.modules[name] = module
    return build_sync_jupytext_contents_manager_class(Files)


@pytest.fixture()
def project(tmp_path):
    """A copy of the chapters and jupytext.toml, as a reader's checkout has them."""
    (tmp_path / "chapters").mkdir()
    shutil.copy(REPO_ROOT / "jupytext.toml", tmp_path / "jupytext.toml")
    for path in CHAPTERS:
        shutil.copy(path, tmp_path / "chapters" / path.name)
    return tmp_path


def make_sync(root):
    subprocess.run(
        [str(JUPYTEXT_CLI), "--to", "ipynb", *(f"chapters/{p.name}" for p in CHAPTERS)],
        cwd=root, check=True, capture_output=True,
    )  # fmt: skip


def open_and_save(root, path: str, edit=None):
    manager = contents_manager_class()(root_dir=str(root))
    model = manager.get(path, content=True, type="notebook")
    if edit is not None:
        edit(model["content"])
    manager.save(model, path)
    return manager


def test_chapters_exist():
    assert len(CHAPTERS) >= 8


@pytest.mark.parametrize("opened", ["py", "ipynb"])
def test_open_and_save_in_jupyter_keeps_every_source_byte_identical(project, opened):
    if opened == "ipynb":
        make_sync(project)
    changed = []
    for source in CHAPTERS:
        open_and_save(project, f"chapters/{source.stem}.{opened}")
        if (project / "chapters" / source.name).read_bytes() != source.read_bytes():
            changed.append(source.name)
        assert (project / "chapters" / f"{source.stem}.ipynb").exists()  # still paired
    assert changed == []


def test_an_edit_in_jupyter_lands_in_both_files(project):
    """Jupyter adds its own metadata on the way (language_info, a cell's ``scrolled``); only the
    edited line changes in the source, and the .py read back equals the saved notebook."""
    make_sync(project)
    source = project / "chapters" / "rope_basics.py"
    before = source.read_text()

    def edit(notebook):
        notebook.metadata["language_info"] = {"name": "python", "version": "3.11.9"}
        cell = next(c for c in notebook.cells if c.cell_type == "markdown")
        cell.source = cell.source.replace("RoPE", "RoPE (edited in Jupyter)", 1)
        notebook.cells[-1].metadata["scrolled"] = True

    open_and_save(project, "chapters/rope_basics.ipynb", edit)
    after = source.read_text()
    changed = [
        (a, b) for a, b in zip(before.splitlines(), after.splitlines(), strict=True) if a != b
    ]
    assert len(changed) == 1 and "(edited in Jupyter)" in changed[0][1]
    paired = jupytext.read(project / "chapters" / "rope_basics.ipynb")
    again = jupytext.read(source)
    assert [c.source for c in paired.cells] == [c.source for c in again.cells]
    # and saving from the .py side again changes nothing more
    open_and_save(project, "chapters/rope_basics.py")
    assert source.read_text() == after


def test_jupytext_sync_keeps_sources(project):
    """``jupytext --sync`` (the pairing from the command line) also leaves sources unchanged."""
    make_sync(project)
    subprocess.run(
        [str(JUPYTEXT_CLI), "--sync", *(f"chapters/{p.name}" for p in CHAPTERS)],
        cwd=project, check=True, capture_output=True,
    )  # fmt: skip
    for source in CHAPTERS:
        assert (project / "chapters" / source.name).read_bytes() == source.read_bytes()
