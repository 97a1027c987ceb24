"""F-2: every bus contract round-trips through JSON, refuses what it does not know, and still
decodes payloads written before `schema_version` existed. Extends tests/contracts.

Instances are generated from each model's own JSON Schema (the one exported to
libs/contracts/schemas/) by schemathesis's generator, so new fields are covered without
editing this test.
"""

from __future__ import annotations

import json

import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from pydantic import ValidationError

from zocrates_contracts import ALL_MESSAGES

pytestmark = pytest.mark.fuzz


def openapi_of(models) -> dict:
    """A tiny OpenAPI document with one operation per model, whose request body is the model."""
    components, paths = {}, {}
    for model in models:
        schema = json.loads(json.dumps(model.model_json_schema(ref_template="#/components/schemas/{model}")))
        components.update(schema.pop("$defs", {}))
        components[model.__name__] = schema
        paths[f"/{model.__name__}"] = {
            "post": {
                "requestBody": {
                    "required": True,
                    "content": {"application/json": {"schema": {"$ref": f"#/components/schemas/{model.__name__}"}}},
                },
                "responses": {"200": {"description": "ok"}},
            }
        }
    return {
        "openapi": "3.0.3",
        "info": {"title": "contracts", "version": "1"},
        "paths": paths,
        "components": {"schemas": components},
    }


def test_every_contract_round_trips_refuses_unknowns_and_decodes_old_payloads(report):
    schema = schemathesis.openapi.from_dict(openapi_of(ALL_MESSAGES))
    by_name = {m.__name__: m for m in ALL_MESSAGES}
    figures = {
        "models": len(ALL_MESSAGES),
        "examples": 0,
        "round_trips": 0,
        "refused_by_model": 0,
        "unknown_field_refused": 0,
        "newer_version_refused": 0,
        "unversioned_decoded": 0,
    }
    failures = []
    for result in schema.get_all_operations():
        operation = result.ok()
        model = by_name[operation.path.strip("/")]

        @settings(max_examples=40, deadline=None, database=None, suppress_health_check=list(HealthCheck))
        @given(case=operation.as_strategy())
        def round_trip(case):
            figures["examples"] += 1
            try:
                message = model.model_validate(case.body)
            except ValidationError:
                figures["refused_by_model"] += 1  # stricter than its JSON Schema (e.g. a newer version)
                return
            wire = message.model_dump_json()
            assert model.model_validate_json(wire) == message
            figures["round_trips"] += 1
            payload = json.loads(wire)
            with pytest.raises(ValidationError):
                model.model_validate(payload | {"surprise": 1})
            figures["unknown_field_refused"] += 1
            with pytest.raises(ValidationError, match="not readable by this build"):
                model.model_validate(payload | {"schema_version": model.SCHEMA_VERSION + 1})
            figures["newer_version_refused"] += 1
            payload.pop("schema_version")  # no version: read at the reader's own (fields get defaults)
            assert model.model_validate(payload).schema_version == model.SCHEMA_VERSION
            figures["unversioned_decoded"] += 1

        try:
            round_trip()
        except Exception as exc:  # noqa: BLE001 - collected per model, asserted below
            failures.append(f"{model.__name__}: {str(exc)[:300]}")
    report("F-2", **figures, failures=len(failures))
    assert not failures, "\n".join(failures)
    assert figures["round_trips"] >= 10 * len(ALL_MESSAGES), "most generated payloads are valid messages"
