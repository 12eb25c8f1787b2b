"""Every setting is read by non-test code: a field nothing reads is a knob that does nothing."""

from __future__ import annotations

import ast
from pathlib import Path

from rag_server.config import Settings

ROOT = Path(__file__).resolve().parents[2]
RUNTIME = ("rag_server", "ingest")
SETTINGS_NAMES = {"settings", "cfg"}  # what runtime code calls a Settings instance


def _attributes_read() -> set[str]:
    names: set[str] = set()
    for package in RUNTIME:
        for path in (ROOT / package).rglob("*.py"):
            if path.name == "config.py" or "gen" in path.relative_to(ROOT).parts:
                continue
            for node in ast.walk(ast.parse(path.read_text("utf-8"))):
                if isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Load):
                    owner = ast.unparse(node.value)
                    if owner.split(".")[-1] in SETTINGS_NAMES:
                        names.add(node.attr)
    return names


def test_every_setting_is_read_by_runtime_code() -> None:
    read = _attributes_read()
    unread = sorted(name for name in Settings.model_fields if name not in read)
    assert unread == [], f"settings nothing outside config.py reads: {unread}"
