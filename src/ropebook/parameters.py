"""A chapter's parameters: the ``parameters`` cell papermill fills, read and checked.

Each ``name = literal  # domain: description`` line of a chapter's cell tagged ``parameters``
declares one :class:`Parameter`: its default, the values it accepts (the comment's domain) and
what it means. :func:`validate_parameters` coerces what a caller gives (``-p name value``, a
papermill parameter) to the declared types and refuses, in one error naming every valid
parameter, anything unknown or out of its domain, before a cell runs. The chapter runner
(:mod:`ropebook.pipeline`) calls it; the *Rerun this chapter* box lists the same declarations.
"""

from __future__ import annotations

import ast
import io
import re
import tokenize
from dataclasses import dataclass
from typing import Any

PROFILE_NAMES = ("smoke", "cpu", "gpu")


class ChapterError(RuntimeError):
    """A chapter could not be run: bad name, bad parameters or a failing cell."""


@dataclass(frozen=True)
class Parameter:
    """One ``name = literal  # domain: description`` line of a chapter's parameters cell.

    The comment may open with the values the parameter accepts (lists: every element):

    - ``in [lo, hi]`` with ``[``/``]`` closed and ``(``/``)`` open ends, ``inf`` for no bound;
    - ``a | b | c``: a fixed set of choices;
    - ``in zoo.SPECS``: the keys (or items) of a ``ropebook`` module attribute.
    """

    name: str
    default: Any
    domain: str | None = None  # the declaration as written, e.g. "in (0, 1)"
    description: str = ""  # the rest of the comment

    @property
    def type_name(self) -> str:
        return "any" if self.default is None else type(self.default).__name__

    def describe(self) -> str:
        text = f"{self.name}: {self.type_name} = {self.default!r}"
        return f"{text} ({self.domain})" if self.domain else text

    def coerce(self, value: Any) -> Any:
        """Return ``value`` converted to this parameter's type and checked against its domain,
        or raise ``ValueError`` naming the valid values."""
        if isinstance(value, str) and not isinstance(self.default, str):
            value = _literal(value)
        value = self._coerce_type(value)
        if self.domain:
            elements = value if isinstance(value, list) else [value]
            bad = [v for v in elements if not _in_domain(v, self.domain)]
            if bad:
                what = "every element of " + self.name if isinstance(value, list) else self.name
                raise ValueError(f"{what} must be {self.domain}, got {bad[0]!r}")
        return value

    def _coerce_type(self, value: Any) -> Any:
        expected = type(self.default)
        if (
            self.default is None
            or isinstance(value, expected)
            and not _is_bool_mismatch(value, self.default)
        ):
            return value
        if expected is float and isinstance(value, int) and not isinstance(value, bool):
            return float(value)
        raise ValueError(f"{self.name} must be {self.type_name}, got {value!r}")


_INTERVAL = re.compile(r"in\s*([\[(])\s*([^,\s]+)\s*,\s*([^\])\s]+)\s*([\])])")
_CHOICES = re.compile(r"[\w.+-]+(?:\s*\|\s*[\w.+-]+)+")
_REFERENCE = re.compile(r"in\s+([a-z_]+)\.([A-Z][A-Z0-9_]*)\b")


def _parse_domain(comment: str) -> str | None:
    """The domain that opens a parameter's comment (see :class:`Parameter`), or ``None``."""
    text = comment.strip()
    for pattern in (_INTERVAL, _REFERENCE, _CHOICES):
        if match := pattern.match(text):
            return match.group(0)
    return None


def _description(comment: str, domain: str | None) -> str:
    """What a parameter's comment says after its domain (``"in [1, inf): seeds"`` → ``"seeds"``)."""
    text = comment.strip()
    if domain:
        text = text.removeprefix(domain)
    return text.strip().removeprefix(":").strip()


def _bound(text: str) -> float:
    return float(text.replace("_", ""))  # "inf", "-inf", "1e-3", "10_000"


def _in_domain(value: Any, domain: str) -> bool:
    if match := _INTERVAL.fullmatch(domain):
        left, low, high, right = match.groups()
        if isinstance(value, bool) or not isinstance(value, int | float):
            return False
        low_ok = value >= _bound(low) if left == "[" else value > _bound(low)
        high_ok = value <= _bound(high) if right == "]" else value < _bound(high)
        return low_ok and high_ok
    if match := _REFERENCE.fullmatch(domain):
        from importlib import import_module

        return value in getattr(import_module(f"ropebook.{match[1]}"), match[2])
    return str(value) in [c.strip() for c in domain.split("|")]


def _is_bool_mismatch(value: Any, default: Any) -> bool:
    return isinstance(value, bool) != isinstance(default, bool)


def _literal(text: str) -> Any:
    lowered = text.strip().lower()
    if lowered in ("true", "false"):
        return lowered == "true"
    if lowered in ("none", "null"):
        return None
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return text


def chapter_parameters(notebook) -> dict[str, Parameter]:
    """Parse the single ``parameters``-tagged cell into ``{name: Parameter}``."""
    cells = [c for c in notebook.cells if "parameters" in c.get("metadata", {}).get("tags", [])]
    if len(cells) != 1:
        raise ChapterError(
            f"a chapter needs exactly one cell tagged 'parameters', found {len(cells)}"
        )
    params = {}
    comments = _comments_by_line(cells[0].source)
    for node in ast.parse(cells[0].source).body:
        target = node.targets[0] if isinstance(node, ast.Assign) else getattr(node, "target", None)
        if isinstance(target, ast.Name) and getattr(node, "value", None) is not None:
            # ruff format may wrap a long line as `x = (\n value  # comment\n)`: any line counts
            lines = range(node.lineno, node.end_lineno + 1)
            comment = next((comments[n] for n in lines if n in comments), "")
            default = ast.literal_eval(node.value)
            domain = _parse_domain(comment)
            params[target.id] = Parameter(target.id, default, domain, _description(comment, domain))
            try:
                params[target.id].coerce(default)
            except ValueError as error:
                raise ChapterError(f"the declared default does not fit: {error}") from None
    return params


def _comments_by_line(source: str) -> dict[int, str]:
    """``{line number: comment text}`` of a cell, from Python's own tokenizer."""
    tokens = tokenize.generate_tokens(io.StringIO(source).readline)
    return {t.start[0]: t.string[1:] for t in tokens if t.type == tokenize.COMMENT}


def validate_parameters(name: str, declared: dict[str, Parameter], given: dict[str, Any]) -> dict:
    """Coerce ``given`` to the declared types; raise one error listing every problem."""
    listing = ", ".join(p.describe() for p in declared.values())
    problems, values = [], {}
    for key, value in given.items():
        if key not in declared:
            problems.append(f"unknown parameter {key!r}")
            continue
        try:
            values[key] = declared[key].coerce(value)
        except ValueError as error:
            problems.append(str(error))
    if "profile" in values and values["profile"] not in PROFILE_NAMES:
        problems.append(f"profile must be one of {', '.join(PROFILE_NAMES)}")
    if problems:
        raise ChapterError(
            f"chapter {name!r}: " + "; ".join(problems) + f".\nValid parameters: {listing}"
        )
    return values
