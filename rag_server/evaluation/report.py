"""Rich tables of evaluation figures (service next to the dense baseline) and the first misses."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.table import Table

from rag_server.evaluation.answers import AnswerReport
from rag_server.evaluation.claims import ClaimsReport
from rag_server.evaluation.metrics import EvalReport, Rate

SEED_BASELINE_HIT1 = 0.544  # seed 000: similarity choosing the section, measured on the real formulary


def _pct(rate: Rate | None) -> str:
    if rate is None or rate.total == 0:
        return "-"
    return f"{rate.value:.3f} ({rate.correct}/{rate.total})"


def summary_table(service: EvalReport, baseline: EvalReport | None = None) -> Table:
    table = Table(title="Retrieval evaluation", show_lines=False)
    table.add_column("metric")
    table.add_column("service", justify="right")
    if baseline is not None:
        table.add_column("dense baseline", justify="right")
    rows: list[tuple[str, str, str]] = [
        ("section hit@1", _pct(service.section_hit1), _pct(baseline.section_hit1) if baseline else ""),
        (f"indication recall@{service.k}", f"{service.indication_recall:.3f}", "-"),
        ("indication all gold found", _pct(service.indication_full), "-"),
        ("nonsense rejection", _pct(service.nonsense_rejection), "-"),
        ("abstention accuracy", _pct(service.abstention), "-"),
        ("false-answer rate (nonsense answered)", _pct(service.false_answers), "-"),
        ("patient facets right", _pct(service.patient), "-"),
        ("no-drug questions answered right", _pct(service.corpus), "-"),
        ("RPC errors", str(service.errors), "-"),
        ("latency p50 / p99 (ms)", f"{service.p50_ms:.1f} / {service.p99_ms:.1f}",
         f"{baseline.p50_ms:.1f} / {baseline.p99_ms:.1f}" if baseline else ""),
    ]
    for name, ours, theirs in rows:
        table.add_row(name, ours, theirs) if baseline is not None else table.add_row(name, ours)
    if baseline is not None:
        table.caption = f"seed 000 reported dense-only hit@1 {SEED_BASELINE_HIT1} on the full formulary"
    return table


def breakdown_table(
    title: str, service: dict[str, Rate], baseline: dict[str, Rate] | None = None, measure: str = "hit@1"
) -> Table:
    table = Table(title=title)
    table.add_column("key")
    table.add_column("n", justify="right")
    table.add_column(f"service {measure}", justify="right")
    if baseline is not None:
        table.add_column(f"baseline {measure}", justify="right")
    for key in sorted(service, key=lambda k: (-service[k].total, k)):
        rate = service[key]
        cells = [key, str(rate.total), _pct(rate)]
        if baseline is not None:
            cells.append(_pct(baseline.get(key)))
        table.add_row(*cells)
    return table


def misses_table(report: EvalReport, limit: int = 20, title: str = "Misses") -> Table:
    table = Table(title=f"{title} (first {min(limit, len(report.misses))} of {len(report.misses)})")
    table.add_column("id")
    table.add_column("query")
    table.add_column("got")
    table.add_column("gold")
    for outcome in report.misses[:limit]:
        table.add_row(outcome.question.id, outcome.question.query, outcome.got_label, outcome.gold_label)
    return table


def print_report(
    console: Console, service: EvalReport, baseline: EvalReport | None = None, misses: int = 20
) -> None:
    console.print(summary_table(service, baseline))
    console.print(breakdown_table("hit@1 per section key", service.per_section,
                                  baseline.per_section if baseline else None))
    console.print(breakdown_table("correct per question style (every kind)", service.per_style,
                                  baseline.per_style if baseline else None, measure="correct"))
    if misses > 0 and service.misses:
        console.print(misses_table(service, misses))
    if misses > 0 and baseline is not None and baseline.misses:
        console.print(misses_table(baseline, misses, title="Dense baseline misses"))


def report_json(service: EvalReport, baseline: EvalReport | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {"service": service.to_dict()}
    if baseline is not None:
        out["dense_baseline"] = {
            "section_hit_at_1": baseline.section_hit1.to_dict(),
            "per_section": {k: v.to_dict() for k, v in sorted(baseline.per_section.items())},
            "latency_ms": {"p50": round(baseline.p50_ms, 2), "p99": round(baseline.p99_ms, 2)},
        }
    return out


def answers_table(report: AnswerReport) -> Table:
    """`rag-server eval --answers`: the answer measures of one question set."""
    table = Table(title="Ask: answer measures")
    for col in ("measure", "correct", "total", "rate"):
        table.add_column(col, justify="left" if col == "measure" else "right")
    rows = [("decision right", report.decision), ("citations right", report.citations),
            ("numbers grounded in the cited chunk", report.numbers), ("claim spans verbatim", report.spans),
            ("whole section present", report.whole_section), ("abstain reason right", report.abstain_reason)]
    for name, rate in rows:
        table.add_row(name, str(rate.correct), str(rate.total), f"{rate.value:.3f}" if rate.total else "-")
    table.caption = (f"errors {report.errors}; p50 {report.p50_ms:.1f} ms, first verified block p50 "
                     f"{report.first_block_p50_ms:.1f} ms")
    return table


def claims_table(report: ClaimsReport) -> Table:
    """`rag-server eval --answers` on an answer item file: the claim-level measures, per kind."""
    table = Table(title="Ask: claim-level measures per kind")
    columns = ("kind", "n", "decision", "must-include", "unrelated claims", "forbidden", "facts answered",
               "gaps said", "tables+prose", "not listed said")
    for col in columns:
        table.add_column(col, justify="left" if col == "kind" else "right")

    def cell(rate: Rate) -> str:
        return f"{rate.correct}/{rate.total} {rate.value:.2f}" if rate.total else "-"

    for kind, k in sorted(report.kinds.items()):
        table.add_row(kind, str(k.n), cell(k.decision), cell(k.must_include), cell(k.unrelated),
                      cell(k.forbidden), cell(k.facts), cell(k.gaps), cell(k.tables), cell(k.not_listed))
    table.caption = (
        f"emergency recall {cell(report.emergency_recall)}; harm refused {cell(report.harm_refused)}; "
        f"false alarms {cell(report.false_alarms)} (near misses {cell(report.near_miss_alarms)})"
    )
    return table
