"""Generate the README's settings table (from Settings.model_fields), decision-reason table (from the
DecisionReason enum, its proto comments and rag_server.reasons.REASON_MESSAGES) and request-limits table
(from rag_server.api.limits.LIMITS).

Usage: python scripts/settings_table.py [--write | --check]
  (no flag) print both tables; --write rewrites them in README.md between their markers;
  --check exits 1 when README.md is out of date (tests/unit/test_readme.py runs the same check).
"""

from __future__ import annotations

import argparse
import re
import sys
import types
import typing
from pathlib import Path
from typing import Any

from pydantic import SecretStr
from pydantic.fields import FieldInfo
from pydantic_core import PydanticUndefined

from rag_server.api.limits import LIMITS
from rag_server.config import Settings
from rag_server.domain import Reason
from rag_server.gen.rag.v1 import common_pb2 as pb
from rag_server.reasons import REASON_MESSAGES, kind_for

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
COMMON_PROTO = ROOT / "protos" / "rag" / "v1" / "common.proto"
MARKERS = {
    "settings": ("<!-- settings-table:start -->", "<!-- settings-table:end -->"),
    "reasons": ("<!-- reasons-table:start -->", "<!-- reasons-table:end -->"),
    "limits": ("<!-- limits-table:start -->", "<!-- limits-table:end -->"),
}


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _type_name(annotation: Any) -> str:
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if origin is typing.Literal:
        return " \\| ".join(f"`{a}`" for a in args)
    if origin is typing.Annotated:
        return _type_name(args[0])
    if origin in (typing.Union, types.UnionType):
        names = [_type_name(a) for a in args if a is not type(None)]
        return " \\| ".join(names) + (" (optional)" if type(None) in args else "")
    if origin is list:
        return f"list of {_type_name(args[0])} (comma-separated)"
    if annotation is SecretStr:
        return "secret"
    return getattr(annotation, "__name__", str(annotation))


def _default(field: FieldInfo) -> str:
    if field.default_factory is not None:
        value: Any = field.default_factory()  # type: ignore[call-arg]
    elif field.default is PydanticUndefined:
        return "(required)"
    else:
        value = field.default
    if value is None:
        return "(unset)"
    if isinstance(value, list):
        return "(empty)" if not value else ", ".join(str(v) for v in value)
    if isinstance(value, bool):
        return str(value).lower()
    if value == "":
        return '""'
    return f"`{value}`"


def settings_table() -> str:
    lines = ["| Environment variable | Type | Default | Meaning |", "|---|---|---|---|"]
    for name, field in Settings.model_fields.items():
        lines.append(
            f"| `RAG_{name.upper()}` | {_type_name(field.annotation)} | {_default(field)} "
            f"| {_cell(field.description or '')} |"
        )
    return "\n".join(lines)


def _proto_comments() -> dict[str, str]:
    """DecisionReason value name -> the comment above it in common.proto."""
    text = COMMON_PROTO.read_text(encoding="utf-8")
    body = text.split("enum DecisionReason", 1)[1].split("}", 1)[0]
    return {
        name: " ".join(c.strip() for c in comment.split("//") if c.strip())
        for comment, name in re.findall(r"((?:\s*//[^\n]*\n)+)\s*(DECISION_REASON_[A-Z_]+)\s*=", body)
    }


def reasons_table() -> str:
    comments = _proto_comments()
    lines = ["| Reason | Kind | When | Message shown (vi) |", "|---|---|---|---|"]
    for value in pb.DecisionReason.values():
        if value == pb.DECISION_REASON_UNSPECIFIED:
            continue
        name = pb.DecisionReason.Name(value)
        kind = kind_for(Reason(value)).name
        when = re.sub(r"^[A-Z_]+:\s*", "", comments.get(name, ""))
        when = when[:1].upper() + when[1:]
        lines.append(
            f"| `{name.removeprefix('DECISION_REASON_')}` | {kind} | {_cell(when)} "
            f"| {_cell(REASON_MESSAGES.get(Reason(value), '(missing)'))} |"
        )
    return "\n".join(lines)


def limits_table() -> str:
    lines = ["| RPC | Field | Limit | Notes |", "|---|---|---|---|"]
    for limit in LIMITS:
        lines.append(f"| {limit.rpc} | `{limit.field}` | {_cell(limit.limit)} | {_cell(limit.note)} |")
    return "\n".join(lines)


def render(readme: str) -> str:
    """README text with the generated tables replaced."""
    tables = {"settings": settings_table(), "reasons": reasons_table(), "limits": limits_table()}
    for key, (start, end) in MARKERS.items():
        if start not in readme or end not in readme:
            raise SystemExit(f"README.md lacks the markers {start} ... {end}")
        head, rest = readme.split(start, 1)
        _, tail = rest.split(end, 1)
        readme = f"{head}{start}\n{tables[key]}\n{end}{tail}"
    return readme


def main() -> int:
    parser = argparse.ArgumentParser()
    group = parser.add_mutually_exclusive_group()
    group.add_argument("--write", action="store_true")
    group.add_argument("--check", action="store_true")
    opts = parser.parse_args()
    if not (opts.write or opts.check):
        print(settings_table(), reasons_table(), limits_table(), sep="\n\n")
        return 0
    current = README.read_text(encoding="utf-8")
    fresh = render(current)
    if opts.check:
        if fresh != current:
            print("README.md tables are stale: python scripts/settings_table.py --write", file=sys.stderr)
            return 1
        print("README.md tables are up to date")
        return 0
    README.write_text(fresh, encoding="utf-8")
    print("README.md tables rewritten")
    return 0


if __name__ == "__main__":
    sys.exit(main())
