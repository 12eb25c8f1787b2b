"""Automatic garbage collection paused while a document is parsed.

Parsing a book makes millions of small objects (characters, spans, lines, words) that live until it is
done and hold no reference cycles. The cyclic collector would scan them again and again as they pile up,
a third of the parse time; reference counting frees them all the same. Collection is paused for the
duration (re-entrant and thread-safe: it resumes when the last parse ends, if it was on before) and one
collection runs at the end.
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from contextlib import contextmanager

_lock = threading.Lock()
_depth = 0
_was_enabled = False


@contextmanager
def gc_paused() -> Iterator[None]:
    global _depth, _was_enabled
    with _lock:
        if _depth == 0:
            _was_enabled = gc.isenabled()
            gc.disable()
        _depth += 1
    try:
        yield
    finally:
        with _lock:
            _depth -= 1
            resume = _depth == 0 and _was_enabled
            if resume:
                gc.enable()
        if resume:
            gc.collect(1)
