"""Export every contract's JSON Schema to `libs/contracts/schemas/`, and the bus's AsyncAPI
document to `libs/contracts/asyncapi.json` (`make schemas`).

The exported files are checked in; tests/contracts fails when code and files drift, so a
contract change is always a visible diff. Each schema carries its subject (bus messages) and
its version (messages, and records that are versioned themselves, such as `TurnRecord`).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from pydantic import BaseModel

from zocrates_contracts.asyncapi import document
from zocrates_contracts.evidence import EvidenceChunk
from zocrates_contracts.messages import ALL_MESSAGES, Candidate
from zocrates_contracts.turns import TurnRecord

SCHEMA_DIR = Path(__file__).resolve().parents[2] / "schemas"
ASYNCAPI = SCHEMA_DIR.parent / "asyncapi.json"
RECORDS: tuple[type[BaseModel], ...] = (TurnRecord, EvidenceChunk, Candidate)


def schemas() -> dict[str, dict]:
    out: dict[str, dict] = {}
    for model in (*ALL_MESSAGES, *RECORDS):
        schema = model.model_json_schema(mode="serialization")
        subject = getattr(model, "SUBJECT", "")
        version = getattr(model, "SCHEMA_VERSION", None)
        if subject:
            schema = {"x-subject": subject, "x-schema-version": version, **schema}
        elif version is not None:
            schema = {"x-schema-version": version, **schema}
        out[f"{model.__name__}.json"] = schema
    return out


def render(schema: dict) -> str:
    return json.dumps(schema, indent=2, sort_keys=True) + "\n"


def main() -> int:
    SCHEMA_DIR.mkdir(exist_ok=True)
    wanted = schemas()
    for stale in set(p.name for p in SCHEMA_DIR.glob("*.json")) - set(wanted):
        (SCHEMA_DIR / stale).unlink()
    for name, schema in wanted.items():
        (SCHEMA_DIR / name).write_text(render(schema))
    ASYNCAPI.write_text(render(document()))
    print(f"wrote {len(wanted)} schemas to {SCHEMA_DIR} and the bus's AsyncAPI document to {ASYNCAPI}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
