"""The README stays true: generated tables are fresh, two set-up commands on top, every RPC shown."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path
from types import ModuleType

import pytest

from rag_server.gen.rag.v1 import answer_pb2, ingestion_pb2, retrieval_pb2, understanding_pb2

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"


@pytest.fixture(scope="module")
def readme() -> str:
    return README.read_text(encoding="utf-8")


@pytest.fixture(scope="module")
def settings_table() -> ModuleType:
    spec = importlib.util.spec_from_file_location("settings_table", ROOT / "scripts" / "settings_table.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_generated_tables_are_up_to_date(readme: str, settings_table: ModuleType) -> None:
    assert settings_table.render(readme) == readme, "run: python scripts/settings_table.py --write"


def test_settings_table_lists_every_field(readme: str) -> None:
    from rag_server.config import Settings

    for name in Settings.model_fields:
        assert f"`RAG_{name.upper()}`" in readme


def test_two_setup_commands_at_the_very_top(readme: str) -> None:
    first_block = re.search(r"```\w*\n(.*?)```", readme, re.DOTALL)
    assert first_block is not None
    before = readme[: first_block.start()]
    assert before.startswith("# ") and before.count("\n#") == 0, "only the title and one paragraph come first"
    commands = [line.split("#")[0].strip() for line in first_block.group(1).splitlines() if line.strip()]
    assert commands == ["bash scripts/run.sh", "bash scripts/test.sh"]
    for script in ("run.sh", "test.sh"):
        assert (ROOT / "scripts" / script).is_file()


def test_every_rpc_has_an_example(readme: str) -> None:
    for module in (understanding_pb2, retrieval_pb2, answer_pb2, ingestion_pb2):
        for service in module.DESCRIPTOR.services_by_name.values():
            for method in service.methods:
                if method.client_streaming:  # grpcurl cannot stream a file: the README shows the client
                    assert f"client.{_snake(method.name)}(" in readme
                else:
                    rpc = f"{service.full_name}/{method.name}"
                    assert rpc in readme, rpc


def test_no_placeholders_left(readme: str) -> None:
    assert "@@" not in readme
    assert "TODO" not in readme


def _snake(name: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()
