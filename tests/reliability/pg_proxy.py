"""A TCP proxy on 127.0.0.1 in front of the test PostgreSQL (unix socket or TCP), to take the database
away from a running server and give it back: `cut()` drops every connection and refuses new ones,
`restore()` accepts again."""

from __future__ import annotations

import asyncio
import contextlib
from urllib.parse import parse_qs, urlsplit, urlunsplit


class PgProxy:
    def __init__(self, dsn: str) -> None:
        parts = urlsplit(dsn)
        host = parse_qs(parts.query).get("host", [parts.hostname or "127.0.0.1"])[0]
        port = parts.port or 5432
        self._unix = f"{host}/.s.PGSQL.{port}" if host.startswith("/") else ""
        self._tcp = (host, port)
        self._dsn = parts
        self._server: asyncio.Server | None = None
        self._writers: set[asyncio.StreamWriter] = set()
        self.port = 0

    async def start(self) -> None:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", self.port)
        self.port = self._server.sockets[0].getsockname()[1]

    def dsn(self, database: str) -> str:
        """The DSN of `database` through this proxy."""
        user = self._dsn.username or "postgres"
        secret = f":{self._dsn.password}" if self._dsn.password else ""
        return urlunsplit(("postgresql", f"{user}{secret}@127.0.0.1:{self.port}", f"/{database}", "", ""))

    async def cut(self) -> None:
        assert self._server is not None
        self._server.close()
        await self._server.wait_closed()
        for writer in list(self._writers):
            writer.close()
        self._writers.clear()

    async def restore(self) -> None:
        await self.start()

    async def close(self) -> None:
        if self._server is not None:
            await self.cut()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if self._unix:
            up_reader, up_writer = await asyncio.open_unix_connection(self._unix)
        else:
            up_reader, up_writer = await asyncio.open_connection(*self._tcp)
        self._writers |= {writer, up_writer}

        async def pump(src: asyncio.StreamReader, dst: asyncio.StreamWriter) -> None:
            with contextlib.suppress(ConnectionError, OSError):
                while data := await src.read(65536):
                    dst.write(data)
                    await dst.drain()
            dst.close()

        await asyncio.gather(pump(reader, up_writer), pump(up_reader, writer))
        self._writers -= {writer, up_writer}
