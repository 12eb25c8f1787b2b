"""Lifecycle types every layer may raise or read: the start-up refusal (one line, exit 2)."""

from __future__ import annotations


class StartupError(RuntimeError):
    """The server must not start (e.g. the served corpus does not match the configured embedder, a port is
    in use, a TLS file cannot be read): the CLI prints it as one line."""
