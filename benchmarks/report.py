"""One command for the benchmark report: runs the ingestion, Retrieve and Ask benchmarks (each prints its
own tables as it goes), then writes `report.json` and PNG charts into OUT (default docs/benchmarks/):

* throughput.png  every route's throughput as a share of the bare grpc.aio echo service measured in the
                  same run (Retrieve and Ask workloads, 32 concurrent clients), with the targets;
* latency.png     the latency distribution of each workload under that load (log scale);
* ingest.png      the ingestion stages of the scale corpus, when the ingest benchmark wrote its figures.

    .venv/bin/python benchmarks/report.py                  # the ~15k-chunk scale corpus (cached)
    .venv/bin/python benchmarks/report.py --quick          # 40 monographs, fewer requests
    .venv/bin/python benchmarks/report.py --from OUT       # redraw the charts from OUT/*.json only

Nothing here is asserted anywhere: the machine is shared and noisy, so compare the ratios of one run.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
DEFAULT_OUT = HERE.parent / "docs" / "benchmarks"


def run(out: Path, quick: bool) -> None:
    monographs = ["--monographs", "40"] if quick else []
    requests = ["--requests", "400"] if quick else []
    steps = [
        ("ingest", [str(HERE / "bench_ingest.py"), *([] if quick else ["--scale", "680", "--repeat", "3",
                    "--embed-texts", "32"]), "--json", str(out / "ingest.json")]),
        ("retrieve", [str(HERE / "bench_retrieve.py"), *monographs, *requests, "--json",
                      str(out / "retrieve.json")]),
        ("ask", [str(HERE / "bench_ask.py"), *monographs, *requests, "--json", str(out / "ask.json")]),
    ]
    for name, argv in steps:
        print(f"\n===== {name} benchmark", flush=True)
        done = subprocess.run([sys.executable, *argv], check=False)
        if done.returncode != 0:
            print(f"{name} benchmark exited {done.returncode}: its charts are left out", flush=True)


def _load(path: Path) -> dict[str, Any] | None:
    return json.loads(path.read_text(encoding="utf-8")) if path.exists() else None


def draw(out: Path) -> dict[str, Any]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    retrieve, ask, ingest = _load(out / "retrieve.json"), _load(out / "ask.json"), _load(out / "ingest.json")
    report: dict[str, Any] = {"retrieve": retrieve, "ask": ask, "ingest": ingest, "charts": []}
    rows: list[tuple[str, float, float | None, list[float]]] = []
    for source, prefix in ((retrieve, "Retrieve "), (ask, "")):
        for w in (source or {}).get("workloads", []):
            if w.get("ratio_to_echo") is not None and not w["name"].startswith("echo"):
                latencies = w.get("latencies_ms", [])
                rows.append((prefix + w["name"], w["ratio_to_echo"], w.get("target"), latencies))
    if rows:
        fig, ax = plt.subplots(figsize=(10, 0.55 * len(rows) + 1.5))
        names = [r[0] for r in rows]
        ax.barh(names, [r[1] for r in rows], color="#4c72b0")
        for i, (_, _, target, _) in enumerate(rows):
            if target:
                ax.plot([target, target], [i - 0.4, i + 0.4], color="#c44e52", linewidth=2)
        ax.axvline(1.0, color="grey", linestyle=":")
        ax.set_xlabel("throughput / bare grpc.aio echo (same run, same concurrency); red: target")
        ax.invert_yaxis()
        fig.tight_layout()
        fig.savefig(out / "throughput.png", dpi=110)
        plt.close(fig)
        report["charts"].append("throughput.png")
        echo = (retrieve or {}).get("workloads", [{}])[0].get("latencies_ms") or (
            (ask or {}).get("echo", {}).get("latencies_ms", [])
        )
        series = [("echo", echo)] + [(r[0], r[3]) for r in rows if r[3]]
        fig, ax = plt.subplots(figsize=(10, 0.5 * len(series) + 1.5))
        ax.boxplot([s[1] for s in series], orientation="horizontal", showfliers=False)
        ax.set_yticks(range(1, len(series) + 1), [s[0] for s in series])
        ax.set_xscale("log")
        ax.set_xlabel("latency under load, ms (log scale; whiskers 1.5 IQR)")
        ax.invert_yaxis()
        fig.tight_layout()
        fig.savefig(out / "latency.png", dpi=110)
        plt.close(fig)
        report["charts"].append("latency.png")
    stages = (ingest or {}).get("stages_s") or {}
    if stages:
        fig, ax = plt.subplots(figsize=(9, 0.45 * len(stages) + 1.5))
        ax.barh(list(stages), list(stages.values()), color="#55a868")
        ax.set_xlabel("seconds (ingestion of the scale corpus, by stage)")
        ax.invert_yaxis()
        fig.tight_layout()
        fig.savefig(out / "ingest.png", dpi=110)
        plt.close(fig)
        report["charts"].append("ingest.png")
    slim: dict[str, Any] = json.loads(json.dumps(report))
    for part in (slim.get("retrieve"), slim.get("ask")):  # the raw latencies stay in their own files
        for w in (part or {}).get("workloads", []):
            w.pop("latencies_ms", None)
        if part and "echo" in part:
            part["echo"].pop("latencies_ms", None)
    (out / "report.json").write_text(json.dumps(slim, ensure_ascii=False, indent=1), encoding="utf-8")
    return slim


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    parser.add_argument("--quick", action="store_true", help="40 monographs and fewer requests")
    parser.add_argument("--from", dest="redraw", action="store_true", help="only redraw from OUT/*.json")
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    if not args.redraw:
        run(args.out, args.quick)
    report = draw(args.out)
    print(f"\nwrote {args.out / 'report.json'} and {', '.join(report['charts']) or 'no chart'} in {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
