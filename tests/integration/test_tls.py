"""TLS and mutual TLS on a real grpc.aio server (127.0.0.1), with a CA made in the test by the `openssl`
binary (the `cryptography` package is not installed): a TLS call succeeds (raw grpc, the async and the
blocking client), a plaintext call to the TLS port fails; with mTLS a client without a certificate, or with
one from another CA, is refused and one with a certificate signed by the configured CA is served; the
command-line tools (`ask`, `eval`, `ingest` handing its work to the server) take --tls-ca / --tls-cert /
--tls-key (or $RAG_CLIENT_TLS_*) and talk to the mTLS server."""

from __future__ import annotations

import asyncio
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import grpc
import pytest
from formulary_rag_client import AsyncFormularyClient, FormularyClient, RagError

from rag_server.config import Settings
from rag_server.gen.rag.v1 import ingestion_pb2, ingestion_pb2_grpc
from rag_server.security.tls import credentials, tls_files
from rag_server.server import RunningServer, start_server, write_address_file
from rag_server.startup import SAMPLE_PDF, StartupError

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[2]
OPENSSL = shutil.which("openssl")
if OPENSSL is None:  # pragma: no cover - the image has it
    pytest.skip("the openssl binary is needed to make test certificates", allow_module_level=True)

EC = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]


def _openssl(*args: str, cwd: Path) -> None:
    assert OPENSSL is not None
    subprocess.run([OPENSSL, *args], cwd=cwd, check=True, capture_output=True, timeout=60)


def make_ca(folder: Path, name: str) -> tuple[Path, Path]:
    folder.mkdir(parents=True, exist_ok=True)
    _openssl("req", "-x509", *EC, "-keyout", f"{name}.key", "-out", f"{name}.pem", "-days", "2",
             "-subj", f"/CN={name}", "-addext", "basicConstraints=critical,CA:TRUE",
             "-addext", "keyUsage=critical,keyCertSign,cRLSign", cwd=folder)
    return folder / f"{name}.pem", folder / f"{name}.key"


def make_cert(folder: Path, name: str, ca: tuple[Path, Path], usage: str) -> tuple[Path, Path]:
    """A certificate for `name` signed by `ca`; `usage`: serverAuth (127.0.0.1, localhost) or clientAuth."""
    ext = folder / f"{name}.ext"
    ext.write_text("basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature\n"
                   f"extendedKeyUsage={usage}\nsubjectAltName=IP:127.0.0.1,DNS:localhost\n", "utf-8")
    _openssl("req", *EC, "-keyout", f"{name}.key", "-out", f"{name}.csr", "-subj", f"/CN={name}", cwd=folder)
    _openssl("x509", "-req", "-in", f"{name}.csr", "-CA", str(ca[0]), "-CAkey", str(ca[1]),
             "-set_serial", str(int.from_bytes(os.urandom(8), "big")), "-days", "2", "-extfile", ext.name,
             "-out", f"{name}.pem", cwd=folder)
    return folder / f"{name}.pem", folder / f"{name}.key"


@dataclass
class Pki:
    ca: Path
    server: tuple[Path, Path]
    client: tuple[Path, Path]
    stranger: tuple[Path, Path]  # a client certificate from another CA


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Pki:
    folder = tmp_path_factory.mktemp("pki")
    ca = make_ca(folder, "test-ca")
    other = make_ca(folder, "other-ca")
    server = make_cert(folder, "server", ca, "serverAuth")
    client = make_cert(folder, "client", ca, "clientAuth")
    return Pki(ca[0], server, client, make_cert(folder, "stranger", other, "clientAuth"))


async def _serve(tmp: Path, pki: Pki, mutual: bool) -> RunningServer:
    settings = Settings(  # type: ignore[call-arg]
        port=0, data_dir=tmp, load_sample_on_start=False, grace_period_s=5,
        tls_cert=pki.server[0], tls_key=pki.server[1], tls_client_ca=pki.ca if mutual else None,
    )
    return await start_server(settings)


@pytest.fixture(scope="module")
async def tls_server(tmp_path_factory: pytest.TempPathFactory, pki: Pki) -> AsyncIterator[RunningServer]:
    server = await _serve(tmp_path_factory.mktemp("tls"), pki, mutual=False)
    yield server
    await server.stop(0)


@pytest.fixture(scope="module")
async def mtls_server(tmp_path_factory: pytest.TempPathFactory, pki: Pki) -> AsyncIterator[RunningServer]:
    server = await _serve(tmp_path_factory.mktemp("mtls"), pki, mutual=True)
    yield server
    await server.stop(0)


async def _get_corpus(channel: grpc.aio.Channel) -> ingestion_pb2.GetCorpusResponse:
    stub = ingestion_pb2_grpc.IngestionServiceStub(channel)
    return await stub.GetCorpus(ingestion_pb2.GetCorpusRequest(), timeout=10)


def _credentials(pki: Pki, client: tuple[Path, Path] | None = None) -> grpc.ChannelCredentials:
    return grpc.ssl_channel_credentials(
        root_certificates=pki.ca.read_bytes(),
        private_key=client[1].read_bytes() if client else None,
        certificate_chain=client[0].read_bytes() if client else None,
    )


async def test_a_tls_call_succeeds(tls_server: RunningServer, pki: Pki) -> None:
    async with grpc.aio.secure_channel(f"127.0.0.1:{tls_server.port}", _credentials(pki)) as channel:
        assert (await _get_corpus(channel)).loaded is False
    async with AsyncFormularyClient(f"127.0.0.1:{tls_server.port}", ca_file=pki.ca) as client:
        assert await client.health() == "SERVING"
        assert (await client.get_corpus()).loaded is False

    def blocking() -> str:
        with FormularyClient(f"localhost:{tls_server.port}", ca_file=pki.ca, timeout=10) as client:
            client.get_corpus()
            return client.health()

    assert await asyncio.to_thread(blocking) == "SERVING"


async def test_a_plaintext_call_to_the_tls_port_fails(tls_server: RunningServer) -> None:
    async with grpc.aio.insecure_channel(f"127.0.0.1:{tls_server.port}") as channel:
        with pytest.raises(grpc.aio.AioRpcError) as info:
            await _get_corpus(channel)
    assert info.value.code() == grpc.StatusCode.UNAVAILABLE


async def test_a_client_not_trusting_the_ca_fails(tls_server: RunningServer, pki: Pki) -> None:
    other_ca = pki.stranger[0].parent / "other-ca.pem"
    creds = grpc.ssl_channel_credentials(root_certificates=other_ca.read_bytes())
    async with grpc.aio.secure_channel(f"127.0.0.1:{tls_server.port}", creds) as channel:
        with pytest.raises(grpc.aio.AioRpcError) as info:
            await _get_corpus(channel)
    assert info.value.code() == grpc.StatusCode.UNAVAILABLE


async def test_mutual_tls_needs_a_certificate_signed_by_the_ca(mtls_server: RunningServer, pki: Pki) -> None:
    target = f"127.0.0.1:{mtls_server.port}"
    for who in (None, pki.stranger):
        async with grpc.aio.secure_channel(target, _credentials(pki, who)) as channel:
            with pytest.raises(grpc.aio.AioRpcError) as info:
                await _get_corpus(channel)
        assert info.value.code() == grpc.StatusCode.UNAVAILABLE, who
    async with grpc.aio.secure_channel(target, _credentials(pki, pki.client)) as channel:
        assert (await _get_corpus(channel)).loaded is False
    async with AsyncFormularyClient(target, ca_file=pki.ca, client_cert=pki.client[0],
                                    client_key=pki.client[1]) as client:
        assert (await client.get_corpus()).loaded is False
    async with AsyncFormularyClient(target, ca_file=pki.ca) as client:
        with pytest.raises(RagError) as refused:
            await client.get_corpus()
    assert refused.value.code == grpc.StatusCode.UNAVAILABLE


def test_half_a_tls_configuration_refuses_to_start(tmp_path: Path) -> None:
    pem = tmp_path / "x.pem"
    pem.write_text("-----BEGIN CERTIFICATE-----\n", "utf-8")
    for kwargs in ({"tls_cert": pem}, {"tls_key": pem}, {"tls_client_ca": pem}):
        with pytest.raises(StartupError):
            tls_files(Settings(data_dir=tmp_path, **kwargs))  # type: ignore[arg-type]
    assert tls_files(Settings(data_dir=tmp_path)) is None  # type: ignore[call-arg]
    assert credentials(Settings(data_dir=tmp_path)) is None  # type: ignore[call-arg]
    missing = Settings(data_dir=tmp_path, tls_cert=tmp_path / "nope.pem", tls_key=pem)  # type: ignore[call-arg]
    with pytest.raises(StartupError, match=r"nope\.pem"):
        credentials(missing)
    not_pem = tmp_path / "key.der"
    not_pem.write_bytes(b"\x30\x82")
    with pytest.raises(StartupError, match="not PEM"):
        credentials(Settings(data_dir=tmp_path, tls_cert=pem, tls_key=not_pem))  # type: ignore[call-arg]


async def _cli(*argv: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """`rag-server ARGV` in a subprocess, off the event loop (the server under test runs on it)."""
    script = Path(sys.executable).parent / "rag-server"
    cmd = [str(script)] if script.exists() else [sys.executable, "-m", "rag_server.cli"]
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("RAG_CLIENT_", "RAG_API_KEY"))}
    return await asyncio.to_thread(subprocess.run, [*cmd, *argv], capture_output=True, text=True,
                                   timeout=300, stdin=subprocess.DEVNULL, env={**clean, **(env or {})})


async def test_the_command_line_tools_speak_mutual_tls(
    mtls_server: RunningServer, pki: Pki, tmp_path: Path
) -> None:
    target = f"127.0.0.1:{mtls_server.port}"
    question = "chống chỉ định của zelvorin"
    flags = ["--tls-ca", str(pki.ca), "--tls-cert", str(pki.client[0]), "--tls-key", str(pki.client[1])]
    asked = await _cli("ask", question, "--target", target, *flags)
    # Answered over mutual TLS (the store is empty: an honest abstention, exit 1, not a transport error)
    assert asked.returncode == 1, asked.stderr
    assert "Decision: ABSTAIN (corpus_not_loaded)" in asked.stdout and "trace_id" in asked.stdout
    by_env = await _cli("ask", question, "--target", target, env={
        "RAG_CLIENT_TLS_CA": str(pki.ca), "RAG_CLIENT_TLS_CERT": str(pki.client[0]),
        "RAG_CLIENT_TLS_KEY": str(pki.client[1])})
    assert by_env.returncode == 1 and "Decision: ABSTAIN" in by_env.stdout, by_env.stderr
    for refused_flags in (["--tls-ca", str(pki.ca)],  # no client certificate
                          ["--tls-ca", str(pki.ca), "--tls-cert", str(pki.stranger[0]),
                           "--tls-key", str(pki.stranger[1])]):  # one from another CA
        refused = await _cli("ask", question, "--target", target, "--timeout", "10", *refused_flags)
        assert refused.returncode == 2 and "UNAVAILABLE" in refused.stderr, refused.stderr

    half = await _cli("ask", question, "--target", target, "--tls-ca", str(pki.ca),
                      "--tls-cert", str(pki.client[0]))
    assert half.returncode == 2 and half.stderr.count("\n") == 1 and "--tls-key" in half.stderr, half.stderr
    missing = await _cli("ask", question, "--target", target, "--tls-ca", str(tmp_path / "nope.pem"))
    assert missing.returncode == 2 and "nope.pem" in missing.stderr and "Traceback" not in missing.stderr

    questions = tmp_path / "questions.jsonl"
    sample_set = (REPO / "eval" / "heldout_sample_questions.jsonl").read_text("utf-8")
    lines = [line for line in sample_set.splitlines() if line.startswith("{")][:2]
    questions.write_text("\n".join(lines) + "\n", "utf-8")
    report = tmp_path / "eval.json"
    evaluated = await _cli("eval", str(questions), "--target", target, "--no-warmup", "--misses", "0",
                           "--json", str(report), *flags)
    assert evaluated.returncode == 0, evaluated.stdout[-2000:]
    split = next(iter(json.loads(report.read_text("utf-8"))["splits"].values()))
    assert split["service"]["errors"] == 0  # every question was asked over mutual TLS

    # `ingest` on the data dir the server owns hands the PDF to it (its address file), over mutual TLS.
    data_dir = mtls_server.app.settings.data_dir
    address = write_address_file(mtls_server.app.settings, mtls_server.port)
    try:
        ingested = await _cli("ingest", str(SAMPLE_PDF), "--data-dir", str(data_dir), "--check", *flags)
    finally:
        address.unlink(missing_ok=True)
    assert ingested.returncode == 0, ingested.stderr[-2000:]
    assert "ingesting through it" in ingested.stderr


def test_json_mode_keeps_a_failed_handshake_json(pki: Pki, tmp_path: Path) -> None:
    """grpc's C core logs a refused TLS handshake straight to fd 2; in JSON mode that line is JSON too."""
    script = Path(sys.executable).parent / "rag-server"
    env = {**os.environ, "PYTHONUNBUFFERED": "1", "RAG_LOG_FORMAT": "json",
           "RAG_LOAD_SAMPLE_ON_START": "false", "RAG_TLS_CERT": str(pki.server[0]),
           "RAG_TLS_KEY": str(pki.server[1]),
           "RAG_TLS_CLIENT_CA": str(pki.ca)}
    proc = subprocess.Popen([str(script), "serve", "--port", "0", "--data-dir", str(tmp_path / "data")],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env,
                            stdin=subprocess.DEVNULL)
    killer = threading.Timer(120, proc.kill)
    killer.start()
    try:
        assert proc.stdout is not None
        lines: list[str] = []
        port = 0
        for line in proc.stdout:
            lines.append(line)
            found = re.search(r"rag-server listening on (\S+):(\d+)", line)
            if found:
                port = int(found.group(2))
                break
        assert port, "".join(lines)
        no_cert = grpc.ssl_channel_credentials(root_certificates=pki.ca.read_bytes())
        with grpc.secure_channel(f"127.0.0.1:{port}", no_cert) as channel:
            stub = ingestion_pb2_grpc.IngestionServiceStub(channel)
            with pytest.raises(grpc.RpcError) as refused:
                stub.GetCorpus(ingestion_pb2.GetCorpusRequest(), timeout=10)
        assert refused.value.code() == grpc.StatusCode.UNAVAILABLE  # type: ignore[attr-defined]
        proc.send_signal(signal.SIGTERM)
        rest, _ = proc.communicate(timeout=60)
    finally:
        killer.cancel()
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)
    assert proc.returncode == 0, "".join(lines) + rest
    for line in [*lines, *rest.splitlines()]:
        if line.strip():
            assert isinstance(json.loads(line), dict), line
