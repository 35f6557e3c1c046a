"""The publishing workflow (``.github/workflows/book.yml``): actionlint finds nothing in it, it
calls only targets the Makefile has, and the zoo's cache key it uses follows the models' specs.
It cannot run here; these are the checks that can."""

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from ropebook import REPO_ROOT, zoo_command

WORKFLOW = REPO_ROOT / ".github" / "workflows" / "book.yml"


def actionlint(path: Path) -> subprocess.CompletedProcess:
    found = shutil.which("actionlint", path=str(Path(sys.executable).parent)) or shutil.which(
        "actionlint"
    )
    if found is None:
        pytest.fail("actionlint is not installed: `make setup` installs it (requirements.txt)")
    return subprocess.run([found, "-no-color", str(path)], capture_output=True, text=True)


def test_workflow_passes_actionlint():
    result = actionlint(WORKFLOW)
    assert result.returncode == 0, result.stdout + result.stderr


def test_actionlint_finds_a_broken_workflow(tmp_path):
    """The check above can fail: an unknown step and an unknown input are findings."""
    broken = WORKFLOW.read_text().replace("steps.zoo.outputs.key }}", "steps.zooo.outputs.key }}")
    broken = broken.replace("inputs.runner ||", "inputs.runners ||")
    (tmp_path / "book.yml").write_text(broken)
    result = actionlint(tmp_path / "book.yml")
    assert result.returncode != 0 and "zooo" in result.stdout and "runners" in result.stdout


def test_workflow_builds_with_make_and_publishes_the_site():
    workflow = yaml.safe_load(WORKFLOW.read_text())
    steps = workflow["jobs"]["build"]["steps"]
    runs = "\n".join(step.get("run", "") for step in steps)
    targets = set(re.findall(r"\bmake (\w+)", runs))
    assert "book" in targets
    for target in targets:  # every target it calls exists (make -n fails on an unknown one)
        subprocess.run(["make", "-n", target], cwd=REPO_ROOT, check=True, capture_output=True)
    uses = [step.get("uses", "").split("@")[0] for step in steps]
    assert uses.index("actions/cache/restore") < uses.index("actions/cache/save")
    assert "actions/upload-pages-artifact" in uses
    upload = next(s for s in steps if s.get("uses", "").startswith("actions/upload-pages"))
    assert upload["with"]["path"] == "_build/html"
    deploy = workflow["jobs"]["deploy"]
    assert deploy["permissions"] == {"pages": "write", "id-token": "write"}
    assert deploy["steps"][-1]["uses"].startswith("actions/deploy-pages@")


def test_zoo_key_follows_the_models_specs(capsys):
    def key(*args: str) -> str:
        assert zoo_command.main(["--profile", "smoke", "--key", *args]) == 0
        return capsys.readouterr().out.strip()

    first = key()
    assert re.fullmatch(r"[0-9a-f]{16}", first)
    assert key() == first  # the same specs, the same key: a push that changes no model hits
    assert key("--steps", "400") != first  # another spec for every model, another key
    assert key("--regimes", "lesson") != first  # fewer models, another key


def test_workflow_publishes_the_zoo_it_used_as_a_release_asset_named_by_its_key():
    from ropebook import zoo_archive

    workflow = yaml.safe_load(WORKFLOW.read_text())
    build = workflow["jobs"]["build"]
    steps = build["steps"]
    names = [step.get("name") for step in steps]
    publish = steps[names.index("Publish the zoo")]
    assert names.index("Build the book") < names.index("Publish the zoo")
    assert build["permissions"] == {"contents": "write"}  # release assets
    run = publish["run"]
    assert '--profile "$PROFILE" --publish dist' in run
    assert 'gh release upload zoo "dist/$archive" "dist/$ZOO_KEY.json"' in run
    assert publish["env"]["ZOO_KEY"] == "${{ steps.zoo.outputs.key }}"
    # the key step writes zoo-$PROFILE-<key>: the name `zoo --publish` gives the archive
    key_step = steps[names.index("Key the zoo by its models' spec hashes")]["run"]
    assert "key=zoo-$PROFILE-$(" in key_step
    assert zoo_archive.archive_name("cpu", "0123456789abcdef") == "zoo-cpu-0123456789abcdef.tar"
    assert zoo_archive.RELEASE_TAG == "zoo" and "gh release create zoo" in run
