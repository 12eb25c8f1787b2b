"""JSON mode of `rag-server serve`: what native code writes straight to file descriptor 2 (grpc's C core: a
failed TLS handshake, a refused connection, ...) becomes JSON log lines too.

fd 2 is replaced by a pipe; a daemon thread reads it line by line and logs each line through the root
logger (logger "grpc" for a grpc/absl line such as `I1202 02:17:13.208979 29224 file.cc:12] text`, with its
level; "stderr" for anything else); a line that is already a JSON object passes unchanged. Python's own
output (sys.stderr, hence the log handler) is moved to a duplicate of the original fd 2, so it never takes
the detour. `restore()` (at exit) puts fd 2 back and lets the thread drain what is left; if the thread ever
fails, fd 2 is put back first, so a native writer never blocks on a full pipe.
"""

from __future__ import annotations

import atexit
import contextlib
import io
import json
import logging
import os
import re
import sys
import threading

_NATIVE = re.compile(r"^([IWEF])\d{4} [\d:.]+\s+\d+ ([^\]]+)\] ?(.*)$")
_LEVELS = {"I": logging.INFO, "W": logging.WARNING, "E": logging.ERROR, "F": logging.CRITICAL}

_state: dict[str, object] = {}


def _emit(line: str) -> None:
    text = line.rstrip("\r\n")
    if not text.strip():
        return
    if text.startswith("{"):
        with contextlib.suppress(ValueError):
            if isinstance(json.loads(text), dict):
                real_fd = _state.get("real_fd")
                if isinstance(real_fd, int):
                    os.write(real_fd, (text + "\n").encode("utf-8", "backslashreplace"))
                    return
    native = _NATIVE.match(text)
    if native:
        level, source, message = native.groups()
        logging.getLogger("grpc").log(_LEVELS[level], "%s %s", source, message)
    else:
        logging.getLogger("stderr").warning("%s", text)


def _pump(read_fd: int, real_fd: int) -> None:
    try:
        with open(read_fd, encoding="utf-8", errors="backslashreplace", closefd=True) as pipe:
            for line in pipe:
                with contextlib.suppress(Exception):  # a line may be dropped, never the pump
                    _emit(line)
    finally:
        with contextlib.suppress(OSError):
            os.dup2(real_fd, 2)  # nothing reads the pipe any more: native writes go to the real stderr


def capture() -> None:
    """Route fd 2 through the pump (once per process)."""
    if _state:
        return
    sys.stderr.flush()
    real_fd = os.dup(2)
    read_fd, write_fd = os.pipe()
    os.dup2(write_fd, 2)
    os.close(write_fd)
    real = io.TextIOWrapper(io.FileIO(real_fd, "w", closefd=False), encoding="utf-8",
                            errors="backslashreplace", line_buffering=True)
    sys.stderr = real
    for handler in logging.getLogger().handlers:  # the handler made for sys.stderr before the move
        if isinstance(handler, logging.StreamHandler) and handler.stream is sys.__stderr__:
            handler.setStream(real)
    thread = threading.Thread(target=_pump, args=(read_fd, real_fd), name="rag-stderr", daemon=True)
    thread.start()
    _state.update(real_fd=real_fd, thread=thread)
    atexit.register(restore)


def restore(timeout: float = 1.0) -> None:
    """Put the real stderr back on fd 2 and let the pump log what is still in the pipe."""
    real_fd = _state.get("real_fd")
    thread = _state.get("thread")
    if not isinstance(real_fd, int) or not isinstance(thread, threading.Thread):
        return
    with contextlib.suppress(OSError, ValueError, AttributeError):
        sys.__stderr__.flush()  # type: ignore[union-attr]
    with contextlib.suppress(OSError):
        os.dup2(real_fd, 2)  # the pipe's last write end closes: the pump reads to its end and stops
    thread.join(timeout)
