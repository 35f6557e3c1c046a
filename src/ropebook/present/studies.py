"""Where a study kept in the repository (``ropebook.studies``) was measured, for its page."""

from __future__ import annotations

import json
from typing import Any

from ropebook import studies


def provenance_text(results: dict[str, Any], stale: list[str], seeds: str | None = None) -> str:
    """Where and when the results file was measured, the command that reproduces it, and
    whether the code still trains the same specs; ``seeds`` words the seeds where not every
    run has the same ones."""
    machine = results["machine"]
    jax = f"JAX {machine['versions'].get('jax', '?')}"
    if machine.get("matmul_precision", "default") != "default":  # float32 kept on a GPU
        jax += f", matrix products at {machine['matmul_precision']} precision"
    n = len(results["seeds"])
    text = (
        f"measured at commit `{results['commit']}` on {studies.measured_on(results)} ({jax}); "
        f"{f'seeds: {seeds}' if seeds else f'{n} seed' + ('s' if n != 1 else '')}; "
        f"reproduce with `{results['command']}`"
    )
    if stale:
        return text + f". **Stale**: the code now trains other specs for {', '.join(stale)}"
    return text + "; every run's spec hash matches what the code trains today"


def kept_table(folder=None) -> str:
    """Every results file kept in ``data/results`` as a Markdown table: the file (with its study
    where that is not the file's name), its regime and profile, seeds, devices, date and commit,
    as the file records them. A build's kept verdicts (:mod:`ropebook.verdict_record`: no runs,
    the scorecard's "before") are listed as such. One column names file and study, so the long
    names fit a page's width."""
    from pathlib import Path

    folder = Path(folder) if folder is not None else studies.RESULTS_DIR
    rows = ["| file (study) | regime (profile) | seeds | devices | measured | commit |",
            "|---|---|---|---|---|---|"]  # fmt: skip
    for path in sorted(folder.glob("*.json")):
        results = json.loads(path.read_text())
        machine = results.get("machine", {})
        devices = machine.get("devices") or f"{machine.get('cpu', '?')} (CPU)"
        if "verdicts" in results:  # a build's verdicts: what the scorecard's changes are against
            commits = ", ".join(f"`{c}`" for c in results.get("commits", [])) or "?"
            rows.append(
                f"| `{path.name}` (a build's verdicts: the scorecard lists what changed since) "
                f"| all chapters ({results.get('profile', '?')}) | — | {devices} | "
                f"{results.get('measured', '?')} | {commits} |"
            )
            continue
        study = results.get("study", "?")
        named = f"`{path.name}`" + ("" if study == path.stem else f" ({study})")
        rows.append(
            f"| {named} | {results.get('regime', '?')} "
            f"({results.get('profile', '?')}) | {len(results.get('seeds', []))} | {devices} | "
            f"{results.get('measured', '?')} | `{results.get('commit', '?')}` |"
        )
    return "\n".join(rows)
