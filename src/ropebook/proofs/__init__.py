"""Symbolic statements, checked with sympy.

Each statement is a function decorated with :func:`statement`; it builds the claim with sympy,
*asserts* it (so a failed proof raises :class:`ProofError` and fails the chapter or the build) and
returns a :class:`Proof` whose ``steps`` are the equations a reader sees. Statements live in one
submodule per chapter (``proofs.rope_basics``, ``proofs.decay``, ...) and register themselves.

``python -m ropebook proofs`` imports every submodule, checks every statement and prints a table.
"""

from __future__ import annotations

import argparse
import importlib
import pkgutil
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import sympy as sp


class ProofError(AssertionError):
    """A symbolic statement did not hold."""


@dataclass
class Proof:
    """What a statement showed: its name, source, claim and the equations along the way."""

    name: str
    source: str
    claim: str
    steps: list[tuple[str, sp.Basic]] = field(default_factory=list)

    def show(self, label: str, expression: sp.Basic) -> sp.Basic:
        """Record a step: ``label`` (Markdown, may hold $math$) and what sympy reduced it to."""
        self.steps.append((label, expression))
        return expression

    def _repr_markdown_(self) -> str:
        from ropebook.citations import cite_roles

        source = cite_roles(self.source)  # typed citations link to the bibliography
        lines = [f"**{self.name}** — {self.claim}. Source: {source}. Checked with sympy:", ""]
        lines += [
            f"- {label} $\\;\\longrightarrow\\; {sp.latex(expr)}$" for label, expr in self.steps
        ]
        return "\n".join(lines)


REGISTRY: dict[str, Callable[[], Proof]] = {}


def statement(name: str, *, source: str, claim: str) -> Callable:
    """Register ``function(proof) -> None``; calling the result runs the check and returns a Proof."""

    def register(function: Callable[[Proof], None]) -> Callable[[], Proof]:
        def run() -> Proof:
            proof = Proof(name=name, source=source, claim=claim)
            function(proof)
            return proof

        run.__name__ = function.__name__
        run.__doc__ = function.__doc__
        if name in REGISTRY:
            raise ValueError(f"proof {name!r} registered twice")
        REGISTRY[name] = run
        return run

    return register


def require_zero(proof: Proof, label: str, expression: sp.Basic) -> None:
    """Simplify ``expression``; raise ProofError naming the step unless it is identically 0."""
    simplified = sp.simplify(sp.expand_trig(sp.expand(expression)))
    proof.show(label, simplified)
    if simplified != 0:
        raise ProofError(f"{proof.name}: {label} does not vanish, it simplifies to {simplified}")


def require(
    proof: Proof, label: str, condition: bool | sp.Basic, shown: sp.Basic | None = None
) -> None:
    """Record ``shown`` (or the condition) and raise ProofError naming the step if it is not True."""
    proof.show(label, shown if shown is not None else condition)
    if condition is not sp.true and condition is not True:
        raise ProofError(f"{proof.name}: {label} failed ({condition})")


def load_all() -> dict[str, Callable[[], Proof]]:
    for module in pkgutil.iter_modules(__path__):
        importlib.import_module(f"{__name__}.{module.name}")
    return REGISTRY


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m ropebook proofs", description=__doc__)
    parser.add_argument("names", nargs="*", help="check only these statements")
    args = parser.parse_args(argv)
    registry = load_all()
    unknown = sorted(set(args.names) - set(registry))
    if unknown:
        parser.error(f"unknown statements {unknown}; known: {', '.join(sorted(registry))}")
    failures = 0
    print(f"{'statement':40} {'source':45} {'result':>8} {'seconds':>8}")
    for name in args.names or sorted(registry):
        started = time.perf_counter()
        try:
            proof = registry[name]()
            result = "proved"
        except ProofError as error:
            result, failures = "FAILED", failures + 1
            print(f"  {error}", file=sys.stderr)
            proof = None
        source = proof.source if proof else ""
        print(f"{name:40} {source:45} {result:>8} {time.perf_counter() - started:8.2f}")
    print(f"{len(args.names or registry) - failures} proved, {failures} failed")
    return 1 if failures else 0
