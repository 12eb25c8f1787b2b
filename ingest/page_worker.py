"""A page-reading worker process: `python -m ingest.page_worker` (started by `ingest.page_pool`).

Says READY on stdout once its imports are done, then reads tasks from stdin and writes results to stdout,
each a length-prefixed pickle: a task is (PdfFile, first, last) page indexes, a result
`ingest.page_task.ReadResult`. It ends at the end of its input. Started as a module, not by
multiprocessing, so it never imports the caller's main script.
"""

from __future__ import annotations

import gc
import sys
from typing import TYPE_CHECKING, cast

if TYPE_CHECKING:
    from ingest.page_task import PdfFile


def main() -> int:
    # A worker keeps only the pages it returns; reference counting frees the rest, and the cyclic collector
    # would spend a third of the time scanning the many small objects a page's text is made of.
    gc.disable()
    # `import pymupdf` also loads its optional layout analyser (an ONNX model, half a second) and its
    # Markdown converter (numpy and onnxruntime, a tenth of a second); pages are read here without them
    # (they only serve `Page.get_layout()` and `pymupdf.to_markdown()`), so the worker starts 4x as fast.
    sys.modules.setdefault("pymupdf.layout", None)  # type: ignore[arg-type]
    sys.modules.setdefault("pymupdf4llm", None)  # type: ignore[arg-type]
    import pymupdf

    from ingest.page_task import READY, read_range, receive, send

    pymupdf.no_recommend_layout()  # (it would suggest installing what was just left out)

    source, sink = sys.stdin.buffer, sys.stdout.buffer
    sys.stdout = sys.stderr  # nothing but results on the pipe
    send(sink, READY)
    while (task := receive(source)) is not None:
        pdf, first, last = cast("tuple[PdfFile, int, int]", task)
        try:
            result: object = read_range(pdf, first, last)
        except Exception as exc:  # the file changed, or cannot be opened: the caller reads the pages itself
            result = f"{type(exc).__name__}: {exc}"
        send(sink, result)
    return 0


if __name__ == "__main__":
    sys.exit(main())
