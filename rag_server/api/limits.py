"""Request limits: every string and repeated field of every request is bounded, so the work a request can
cause is bounded too. Validation (api/validation.py) enforces them with BadRequest field violations that
name the field and the limit and never echo an unbounded value; the README's limits table is generated
from LIMITS (scripts/settings_table.py) and a test keeps it in sync.
"""

from __future__ import annotations

from dataclasses import dataclass

QUERY_CHARS = 2000
CONVERSATION_ID_CHARS = 128
DRUG_ID_CHARS = 100
SECTION_KEY_CHARS = 64
INDICATION_CHARS = 200
PATIENT_ITEM_CHARS = 200
PATIENT_ITEMS = 20
FRAME_DRUG_IDS = 10
MISSING_FIELDS = 10
MISSING_FIELD_CHARS = 64
AGE_YEARS_MAX = 130
FILENAME_CHARS = 255
PATH_CHARS = 4096
PATH_PART_BYTES = 255  # one folder or file name
ECHO_CHARS = 40  # a value quoted back in an error message is cut to this


@dataclass(frozen=True)
class Limit:
    rpc: str
    field: str
    limit: str
    note: str = ""


LIMITS: tuple[Limit, ...] = (
    Limit("Understand, Retrieve, Ask", "query", f"1–{QUERY_CHARS} characters",
          "no control characters (tab and newline allowed); Retrieve may leave it empty"),
    Limit("Understand, Ask", "conversation_id", f"≤ {CONVERSATION_ID_CHARS} characters",
          "`^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$`"),
    Limit("Retrieve", "drug_id", f"≤ {DRUG_ID_CHARS} characters", "a slug: lower case, digits, `-`"),
    Limit("Retrieve", "section_key", f"≤ {SECTION_KEY_CHARS} characters", "a key of sections.toml"),
    Limit("Retrieve", "frame.drug_ids", f"≤ {FRAME_DRUG_IDS} items, each a drug_id", "no repeats"),
    Limit("Retrieve", "frame.query / frame.indication",
          f"≤ {QUERY_CHARS} / ≤ {INDICATION_CHARS} characters", ""),
    Limit("Retrieve", "frame.turn_type", "a TurnType value",
          "SECTION_QUESTION needs section_key and a drug; PATIENT_ASSESSMENT needs patient facts; "
          "INDICATION_LOOKUP needs indication; DRUG_OVERVIEW needs a drug"),
    Limit("Retrieve", "frame.missing_fields",
          f"≤ {MISSING_FIELDS} items of ≤ {MISSING_FIELD_CHARS} characters"),
    Limit("Retrieve, AssessPatient", "patient.current_medications / conditions / allergies",
          f"≤ {PATIENT_ITEMS} items each, each ≤ {PATIENT_ITEM_CHARS} characters",
          "a medication entry may list several medicines with doses (\"A 200 mg, B\")"),
    Limit("Retrieve, AssessPatient", "patient.age_years", f"0 (not stated) – {AGE_YEARS_MAX}", ""),
    Limit("LookupIndication", "indication", f"1–{INDICATION_CHARS} characters", "no control characters"),
    Limit("AssessPatient", "drug_ids", "1 – RAG_PATIENT_CANDIDATE_LIMIT items, each a drug_id", "no repeats"),
    Limit("Ingest", "path", f"≤ {PATH_CHARS} characters, each name ≤ {PATH_PART_BYTES} bytes",
          "no NUL; inside RAG_INGEST_ROOTS or the uploads"),
    Limit("UploadDocument", "metadata.filename", f"1–{FILENAME_CHARS} characters", "no control characters"),
    Limit("UploadDocument", "bytes", "≤ RAG_UPLOAD_MAX_MB MiB", "a PDF (`%PDF-` in the first KiB)"),
    Limit("every RPC", "message size", "≤ RAG_MAX_MESSAGE_MB MiB", "enforced by gRPC"),
)


def echo(value: str) -> str:
    """A caller's value as it may be quoted in an error message: cut, control characters escaped."""
    cut = value if len(value) <= ECHO_CHARS else value[: ECHO_CHARS - 1] + "…"
    return repr(cut)[1:-1]
