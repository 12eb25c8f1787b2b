r"""Logs of `rag-server serve`: text (default) or one JSON object per line (RAG_LOG_FORMAT=json), and
question text kept out of every line unless RAG_LOG_QUESTIONS=true.

A JSON line: {"time", "level", "logger", "message", "correlation_id"} (the call's x-correlation-id, "" outside
a call), "caller" (the authenticated key's name, when the auth gate admitted one: call_context.py),
"exception" (a traceback, when there is one).

Question text: no log call of the service writes a question on purpose, but an exception message can
echo one (a provider's error quoting the request, a database error quoting a value). The servicers note
each call's question text (`hooks.note_question`); `QuestionRedactor`, a filter on the handler, replaces
every run of three or more of its words (compared without case and diacritics, so a cut or a reworded copy
is found too) in the message and the traceback of every record of that call (its worker threads and
background tasks included) with `[question redacted]`.

In JSON mode every line the server writes is JSON: log records, the "rag-server listening on HOST:PORT"
line on stdout and a refusal to start (`say`: the same fields, the message unchanged, so a tool matching
`rag-server listening on (\S+):(\d+)` still finds it), library warnings (the `warnings` module, logger
"py.warnings"), uncaught exceptions of the main thread, other threads and unraisable ones (their
traceback in "exception") and what native code writes to fd 2 (grpc's C core; native_stderr.py).
"""

from __future__ import annotations

import json
import logging
import sys
import threading
from datetime import UTC, datetime
from typing import IO, Any

from rag_server.call_context import caller_name, current_correlation_id
from rag_server.config import Settings
from rag_server.observability.hooks import current_questions
from rag_server.text.match import folded_words, tokenize
from rag_server.text.match import words as words_of

TEXT_FORMAT = "%(asctime)s %(levelname)s %(name)s %(message)s"
REDACTED = "[question redacted]"
MIN_SCRUB_CHARS = 4  # a one-word question shorter than this ("ok") is not searched for
SHARED_WORDS = 3  # words in a row a log line must share with the question to be redacted

_json_lines = False  # RAG_LOG_FORMAT=json, set by configure_logging: `say` writes JSON too
_process = ""  # `serve --workers`: "parent" or "worker N", in every line (JSON field "process")




def _scrub(message: str, texts: tuple[str, ...]) -> str:
    """`message` with every run of words it shares with one of `texts` (at least SHARED_WORDS words in a
    row, or the whole text when it is shorter) replaced by REDACTED. Words are compared folded, so a cut, a
    rewording around the question's own words (a route dropping the drug name) or a folded copy is found."""
    for text in texts:
        words = folded_words(text)  # case and diacritics folded: a provider may see a folded question
        if not words or (len(words) == 1 and len(words[0]) < MIN_SCRUB_CHARS):
            continue
        n = min(SHARED_WORDS, len(words))
        grams = {tuple(words[i:i + n]) for i in range(len(words) - n + 1)}
        tokens = words_of(tokenize(message))
        folded = [t.folded for t in tokens]
        covered = [False] * len(tokens)
        for i in range(len(tokens) - n + 1):
            if tuple(folded[i:i + n]) in grams:
                covered[i:i + n] = [True] * n
        if not any(covered):
            continue
        out: list[str] = []
        last = 0
        i = 0
        while i < len(tokens):
            if not covered[i]:
                i += 1
                continue
            j = i
            while j + 1 < len(tokens) and covered[j + 1]:
                j += 1
            out += [message[last:tokens[i].start], REDACTED]
            last = tokens[j].end
            i = j + 1
        out.append(message[last:])
        message = "".join(out)
    return message


class QuestionRedactor(logging.Filter):
    """Removes the current call's question text from a record (message, traceback, stack)."""

    def __init__(self, allow: bool = False) -> None:
        super().__init__()
        self.allow = allow

    def filter(self, record: logging.LogRecord) -> bool:
        if self.allow:
            return True
        try:
            texts = current_questions()
            if not texts:
                return True
            message = record.getMessage()
            scrubbed = _scrub(message, texts)
            if scrubbed != message:
                record.msg, record.args = scrubbed, None
            if record.exc_info and not record.exc_text:
                record.exc_text = logging.Formatter().formatException(record.exc_info)
            if record.exc_text:
                record.exc_text = _scrub(record.exc_text, texts)
            if record.stack_info:
                record.stack_info = _scrub(record.stack_info, texts)
        except Exception:  # a log line is never lost to the filter
            pass
        return True


class JsonFormatter(logging.Formatter):
    """One JSON object per line."""

    def format(self, record: logging.LogRecord) -> str:
        out: dict[str, Any] = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
            "correlation_id": current_correlation_id(),
        }
        caller = caller_name()
        if caller:
            out["caller"] = caller
        if _process:
            out["process"] = _process
        if record.exc_info and not record.exc_text:
            record.exc_text = self.formatException(record.exc_info)
        if record.exc_text:
            out["exception"] = record.exc_text
        if record.stack_info:
            out["stack"] = self.formatStack(record.stack_info)
        return json.dumps(out, ensure_ascii=False, default=str)


def make_handler(settings: Settings, stream: IO[str] | None = None) -> logging.Handler:
    """A stream handler (stderr by default) with the configured format and the question filter."""
    handler = logging.StreamHandler(stream)
    text = TEXT_FORMAT.replace("%(message)s", f"[{_process}] %(message)s") if _process else TEXT_FORMAT
    handler.setFormatter(JsonFormatter() if settings.log_format == "json" else logging.Formatter(text))
    handler.addFilter(QuestionRedactor(allow=settings.log_questions))
    return handler


def configure_logging(settings: Settings, stream: IO[str] | None = None, *, process: str = "",
                      native: bool = True) -> logging.Handler:
    """The root logger of `rag-server serve`: RAG_LOG_LEVEL, RAG_LOG_FORMAT, RAG_LOG_QUESTIONS. In JSON
    mode, warnings and uncaught exceptions go through it too (one JSON line each), and (`native`) what
    native code writes to fd 2. `process`: which process of `serve --workers` writes ("parent",
    "worker 1"), in every line."""
    global _json_lines, _process
    _process = process
    handler = make_handler(settings, stream)
    logging.basicConfig(level=settings.log_level, handlers=[handler], force=True)
    _json_lines = settings.log_format == "json"
    if _json_lines:
        logging.captureWarnings(True)
        sys.excepthook = _log_uncaught
        threading.excepthook = _log_thread_exception
        sys.unraisablehook = _log_unraisable
        if stream is None and native:  # the process's stderr: what native code writes to fd 2 too
            from rag_server.observability import native_stderr

            native_stderr.capture()
    return handler


def say(message: str, stream: IO[str] | None = None, level: int = logging.INFO,
        logger: str = "rag_server") -> None:
    """One line written outside the log handler (stdout by default): `message` as it is, or in JSON mode a
    JSON object with the fields of a log line and `message` unchanged."""
    out = stream if stream is not None else sys.stdout
    if _json_lines:
        record = logging.LogRecord(logger, level, __file__, 0, message, None, None)
        message = JsonFormatter().format(record)
    print(message, file=out, flush=True)


_uncaught = logging.getLogger("rag_server.uncaught")


def _log_uncaught(kind: type[BaseException], exc: BaseException, tb: Any) -> None:
    if issubclass(kind, KeyboardInterrupt):
        sys.__excepthook__(kind, exc, tb)
        return
    _uncaught.critical("uncaught %s: %s", kind.__name__, exc, exc_info=(kind, exc, tb))


def _log_thread_exception(args: threading.ExceptHookArgs) -> None:
    if args.exc_type is SystemExit:
        return
    name = args.thread.name if args.thread is not None else "?"
    exc_info = (args.exc_type, args.exc_value, args.exc_traceback) if args.exc_value is not None else None
    _uncaught.error("uncaught %s in thread %s: %s", args.exc_type.__name__, name, args.exc_value,
                    exc_info=exc_info)


def _log_unraisable(args: Any) -> None:
    where = args.err_msg or "Exception ignored in"
    exc_info = (args.exc_type, args.exc_value, args.exc_traceback) if args.exc_value is not None else None
    _uncaught.warning("%s: %r", where, args.object, exc_info=exc_info)
