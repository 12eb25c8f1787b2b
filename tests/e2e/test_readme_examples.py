"""Every grpcurl command in README.md runs against a real server and does what the README says."""

from __future__ import annotations

import json
import re
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parents[2]
GRPCURL = Path(sys.executable).parent / "grpcurl"
README_TARGET = "127.0.0.1:50051"


def readme_grpcurl_commands() -> list[str]:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    commands: list[str] = []
    for block in re.findall(r"```bash\n(.*?)```", text, re.DOTALL):
        joined = re.sub(r"\\\n\s*", " ", block)
        for line in joined.splitlines():
            line = line.strip()
            if line.startswith("grpcurl "):
                commands.append(line.split("  #", 1)[0].strip())
    return commands


COMMANDS = readme_grpcurl_commands()


def test_readme_has_grpcurl_examples() -> None:
    assert len(COMMANDS) >= 15


@pytest.mark.parametrize("command", COMMANDS)
def test_readme_grpcurl_example(command: str, shared_server: Any) -> None:
    assert README_TARGET in command
    argv = shlex.split(command.replace(README_TARGET, shared_server.target))
    argv[0] = str(GRPCURL)
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL)
    if "AnswerService/Ask" in command:
        assert proc.returncode != 0 and "Code: Unimplemented" in proc.stderr, proc.stderr
        return
    if "Not A Slug" in command:
        assert proc.returncode != 0 and "Code: InvalidArgument" in proc.stderr, proc.stderr
        assert "google.rpc.BadRequest" in proc.stderr
        return
    assert proc.returncode == 0, f"{command}\n{proc.stderr}"
    if " -d " in command and " -v " not in command:
        for doc in _json_documents(proc.stdout):
            assert isinstance(doc, dict)
    if "x-correlation-id: ward-7.req-0042" in command:
        assert "x-correlation-id: ward-7.req-0042" in proc.stdout
    if "IngestionService/Ingest" in command:
        docs = _json_documents(proc.stdout)
        assert "summary" in docs[-1], docs[-1]
        assert not docs[-1]["summary"].get("switched", False)


def _json_documents(text: str) -> list[Any]:
    decoder = json.JSONDecoder()
    docs, pos = [], 0
    text = text.strip()
    while pos < len(text):
        doc, end = decoder.raw_decode(text, pos)
        docs.append(doc)
        pos = end
        while pos < len(text) and text[pos].isspace():
            pos += 1
    return docs
