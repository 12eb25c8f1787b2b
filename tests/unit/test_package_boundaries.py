"""The architecture: which package of the service may import which, and no import circle anywhere.

The import graph is read from the source (ast), every import counted: module level, inside functions
(lazy imports) and under `if TYPE_CHECKING:` alike, since each is a dependency someone has to keep working.
Nodes are modules; a module belongs to a component: `rag_server.<first part>` (a subpackage such as
`rag_server.api`, or a module of the top level such as `rag_server.app`), `ingest`, the Python client
`formulary_rag_client`, the test-only renderers `formulary_fixtures`. `ALLOWED` states, for every
component, the components it may import; the test fails on any import it does not allow, on a component it
does not know (a new package states its rules here) and on any circle between modules. The rules
themselves form layers: `ALLOWED` has no circle either.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
# package name -> the folder holding it
PACKAGES = {
    "rag_server": ROOT / "rag_server",
    "ingest": ROOT / "ingest",
    "formulary_rag_client": ROOT / "clients" / "python" / "formulary_rag_client",
    "formulary_fixtures": ROOT / "formulary_fixtures",
}
GENERATED = ("rag_server.gen", "formulary_rag_client.gen")  # protoc output: one node each, not read

# Foundation: what every layer may know (start-up and request errors, the call context, settings).
BASE = {"rag_server", "rag_server.config", "rag_server.lifecycle", "rag_server.call_context",
        "rag_server.request_errors", "rag_server.extras"}
# The domain core: plain Python over the formulary, no transport.
CORE = {"rag_server.domain", "rag_server.reasons", "rag_server.text", "rag_server.vocabulary",
        "rag_server.store", "rag_server.providers"}

ALLOWED: dict[str, set[str]] = {
    # --- foundation ---
    "rag_server": set(),
    "rag_server.config": set(),
    "rag_server.lifecycle": {"rag_server.config"},  # write_address_file: where the settings say (server.json)
    "rag_server.call_context": set(),
    "rag_server.request_errors": set(),
    "rag_server.extras": {"rag_server.config"},
    "rag_server.listen": {"rag_server.lifecycle"},
    # which process of `serve --workers` this is (plain values): the app, the server and the workers read it
    "rag_server.role": set(),
    "rag_server.client_channel": set(),  # the gRPC channel of the CLI tools and the evaluation client
    "rag_server.gen": set(),  # generated rag.v1 code
    # --- domain core ---
    "rag_server.domain": set(),
    "rag_server.reasons": {"rag_server.domain", "rag_server.vocabulary"},
    "rag_server.text": {"rag_server.domain", "rag_server.store"},  # bm25: the store's SparseVector
    "rag_server.vocabulary": {"rag_server.text"},
    "rag_server.store": {"rag_server.config", "rag_server.domain", "rag_server.extras"},
    "rag_server.providers": {"rag_server.config", "rag_server.extras", "rag_server.domain", "rag_server.text",
                             "rag_server.vocabulary"},
    # --- reading, retrieval, answers ---
    "rag_server.understanding": BASE | CORE,
    "rag_server.retrieval": BASE | CORE | {"rag_server.understanding"},
    # traces are rows of domain values (the api converts the replies: api/traces.py)
    "rag_server.persistence": BASE | {"rag_server.domain", "rag_server.text"},
    "rag_server.answer": BASE | CORE | {"rag_server.understanding", "rag_server.retrieval",
                                        "rag_server.persistence"},
    # --- cross-cutting: never the api, the app or the server (they are handed what they wrap) ---
    "rag_server.observability": BASE | {"rag_server.listen", "rag_server.providers", "rag_server.store",
                                        "rag_server.domain", "rag_server.text"},
    "rag_server.security": BASE | {"rag_server.persistence"},  # conversations: who owns an anonymous one
    # --- ingestion (the remote mode is a client of the Ingestion service: rag_server.gen) ---
    "ingest": BASE | CORE | {"rag_server.client_channel", "rag_server.gen"},
    # --- composition: the app composes stores, providers, observability; the server the transport ---
    "rag_server.startup": BASE | CORE | {"ingest"},
    "rag_server.app": BASE | CORE | {"rag_server.startup", "rag_server.retrieval", "rag_server.answer",
                                     "rag_server.persistence", "rag_server.observability", "rag_server.role"},
    "rag_server.api": BASE | CORE | {"rag_server.gen", "rag_server.app", "rag_server.understanding",
                                     "rag_server.retrieval", "rag_server.answer", "rag_server.persistence",
                                     "rag_server.observability", "rag_server.security", "ingest"},
    "rag_server.server": BASE | {"rag_server.listen", "rag_server.api", "rag_server.app",
                                 "rag_server.observability", "rag_server.security", "rag_server.role"},
    # `serve --workers`: composition above the server (the parent reserves the port and serves the
    # aggregated metrics, each worker runs the whole server with its role); the parent never imports grpc
    "rag_server.workers": BASE | {"rag_server.listen", "rag_server.role", "rag_server.server",
                                  "rag_server.observability", "rag_server.store"},
    # --- clients and command-line tools (they speak rag.v1) ---
    "rag_server.evaluation": BASE | CORE | {"rag_server.gen", "rag_server.client_channel"},
    "rag_server.ask_cli": BASE | {"rag_server.gen", "rag_server.client_channel", "rag_server.server",
                                  "ingest"},
    "rag_server.cli": BASE | {"rag_server.listen", "rag_server.client_channel", "rag_server.server",
                              "rag_server.workers",
                              "rag_server.ask_cli", "rag_server.evaluation", "rag_server.observability",
                              "rag_server.persistence", "rag_server.security", "rag_server.store", "ingest"},
    "formulary_rag_client": {"formulary_rag_client.gen"},  # stands alone: nothing of the server
    "formulary_rag_client.gen": set(),
    # test-only PDF renderers (not in the wheel): nothing shipped imports them
    "formulary_fixtures": BASE | CORE | {"ingest"},
}

# The generated rag.v1 code is imported only where the contract is spoken: the servicers (api), the
# clients (the Python client, the evaluation client, the remote mode of `rag-server ingest`) and the
# command-line tools (the api converts replies to domain trace rows: api/traces.py).
GEN_USERS = ("rag_server.api", "rag_server.evaluation", "rag_server.ask_cli", "rag_server.cli",
             "ingest.remote", "formulary_rag_client")
# Plain Python below the transport: no grpc, no protobuf.
NO_TRANSPORT = CORE | {"rag_server.understanding", "rag_server.retrieval", "rag_server.answer",
                       "rag_server.persistence", "rag_server.startup", "rag_server.app",
                       "rag_server.config", "rag_server.lifecycle", "rag_server.extras", "rag_server.role"}
TRANSPORT = ("grpc", "grpc_health", "grpc_status", "grpc_reflection", "google.protobuf", "google.rpc")


@dataclass(frozen=True)
class Module:
    name: str
    path: Path | None  # None: a folder without __init__.py (a namespace package) or generated code
    is_package: bool


def _modules() -> dict[str, Module]:
    out: dict[str, Module] = {name: Module(name, None, True) for name in GENERATED}
    for package, folder in PACKAGES.items():
        for directory in [folder, *(d for d in folder.rglob("*") if d.is_dir())]:
            if "__pycache__" in directory.parts or not any(directory.rglob("*.py")):
                continue  # a data folder (rag_server/sample)
            name = ".".join((package, *directory.relative_to(folder).parts))
            if _generated(name):
                continue
            init = directory / "__init__.py"
            out[name] = Module(name, init if init.exists() else None, True)
        for path in folder.rglob("*.py"):
            if path.name == "__init__.py" or "__pycache__" in path.parts:
                continue
            name = ".".join((package, *path.relative_to(folder).with_suffix("").parts))
            if not _generated(name):
                out[name] = Module(name, path, False)
    return out


def _generated(name: str) -> bool:
    return any(name == g or name.startswith(f"{g}.") for g in GENERATED)


def imported_names(source: str, module: str, is_package: bool) -> list[str]:
    """Every name `source` imports (absolute), anywhere in the file: `from a import b` gives a.b, which is
    the module a.b when there is one, else (a name defined in a) the module a. The packages above an
    imported module are not counted (as grimp counts them): `from pkg import sub` is an import of pkg.sub,
    not of pkg's __init__."""
    out: list[str] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            out += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = module.split(".") if is_package else module.split(".")[:-1]
                base = base[: len(base) - (node.level - 1)]
                target = ".".join([*base, *([node.module] if node.module else [])])
            else:
                target = node.module or ""
            out += [f"{target}.{alias.name}" if alias.name != "*" else target for alias in node.names]
    return out


def _resolve(name: str, modules: dict[str, Module]) -> str | None:
    """The module of ours that `name` is (or is in), None for the standard library and third parties."""
    for generated in GENERATED:
        if name == generated or name.startswith(f"{generated}."):
            return generated
    parts = name.split(".")
    for end in range(len(parts), 0, -1):
        candidate = ".".join(parts[:end])
        if candidate in modules:
            return candidate
    return None


def _graph() -> dict[str, set[str]]:
    modules = _modules()
    graph: dict[str, set[str]] = {name: set() for name in modules}
    for name, module in modules.items():
        if module.path is None:
            continue
        for imported in imported_names(module.path.read_text("utf-8"), name, module.is_package):
            target = _resolve(imported, modules)
            # `from pkg import sub` names the package too: an edge to pkg only when pkg itself has code
            if target is not None and target != name and not _is_parent_only(imported, target, modules):
                graph[name].add(target)
    return graph


def _is_parent_only(imported: str, target: str, modules: dict[str, Module]) -> bool:
    module = modules.get(target)
    return module is not None and module.is_package and module.path is None and imported == target


def component(module: str) -> str:
    parts = module.split(".")
    if parts[0] == "rag_server":
        return ".".join(parts[:2])
    if parts[0] == "formulary_rag_client":
        return "formulary_rag_client.gen" if module.startswith("formulary_rag_client.gen") else parts[0]
    return parts[0]


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one node (or a node importing itself)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = 0
    for root in sorted(graph):
        if root in index:
            continue
        work: list[tuple[str, Iterable[str]]] = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(iter(children), None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                members: list[str] = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    members.append(member)
                    if member == node:
                        break
                if len(members) > 1 or node in graph.get(node, ()):
                    found.append(sorted(members))
    return found


GRAPH = _graph()


def _edges() -> list[tuple[str, str]]:
    return sorted((a, b) for a, targets in GRAPH.items() for b in targets)


# --- the tests -----------------------------------------------------------------------------------------


def test_the_graph_is_read() -> None:
    assert len(GRAPH) > 150
    assert {"rag_server.api.calls", "rag_server.app"} <= GRAPH["rag_server.server"]
    assert "ingest.pipeline" in GRAPH["rag_server.startup"]  # a lazy import, inside a function


def test_the_walker_sees_lazy_type_checking_and_relative_imports() -> None:
    source = (
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    from rag_server.app import App\n"
        "def f():\n    import ingest.pipeline\n    from . import sibling\n    from .. import uncle\n"
    )
    names = imported_names(source, "rag_server.observability.logs", is_package=False)
    assert {"rag_server.app.App", "ingest.pipeline", "rag_server.observability.sibling",
            "rag_server.uncle"} <= set(names)
    modules = _modules()
    assert _resolve("rag_server.app.App", modules) == "rag_server.app"  # a name: its module
    assert _resolve("rag_server.retrieval.indication", modules) == "rag_server.retrieval.indication"


def test_the_cycle_finder_finds_circles() -> None:
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"a"}}) == [["a"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_no_import_circle_anywhere() -> None:
    assert cycles(GRAPH) == []


def test_every_component_states_its_rules() -> None:
    unknown = sorted({component(m) for m in GRAPH} - set(ALLOWED))
    assert unknown == [], f"add the allowed dependencies of {unknown} to ALLOWED"
    assert sorted(set(ALLOWED) - {component(m) for m in GRAPH}) == []  # no rule for what is gone


def test_the_rules_are_layers() -> None:
    rules = {name: {t for t in targets if t != name} for name, targets in ALLOWED.items()}
    assert cycles(rules) == []


def test_every_import_is_allowed() -> None:
    offenders = [
        f"{a} imports {b}" for a, b in _edges()
        if component(a) != component(b) and component(b) not in ALLOWED[component(a)]
    ]
    assert offenders == []


def test_observability_and_security_never_import_the_api_the_app_or_the_server() -> None:
    below = ("rag_server.observability", "rag_server.security")
    above = ("rag_server.api", "rag_server.app", "rag_server.server", "rag_server.cli")
    assert [f"{a} imports {b}" for a, b in _edges()
            if component(a) in below and component(b) in above] == []


def test_the_generated_contract_only_where_it_is_spoken() -> None:
    users = sorted({a for a, b in _edges() if b == "rag_server.gen"
                    and not any(a == u or a.startswith(f"{u}.") for u in GEN_USERS)})
    assert users == []
    # the client has its own copy: the server's generated code is never the client's, nor the reverse
    assert [(a, b) for a, b in _edges()
            if a.startswith("formulary_rag_client") and b == "rag_server.gen"] == []
    assert [(a, b) for a, b in _edges()
            if a.startswith("rag_server") and b.startswith("formulary_rag_client")] == []


def test_the_core_never_sees_the_transport() -> None:
    offenders: list[str] = []
    modules = _modules()
    for name, module in modules.items():
        if module.path is None or component(name) not in NO_TRANSPORT:
            continue
        for imported in imported_names(module.path.read_text("utf-8"), name, module.is_package):
            if any(imported == t or imported.startswith(f"{t}.") for t in TRANSPORT):
                offenders.append(f"{name} imports {imported}")
    assert offenders == []
