"""Write docs/configuration.md from the settings classes (`make docs`); a test keeps it true."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

from pydantic import SecretStr
from pydantic_core import PydanticUndefined

OUT = Path(__file__).resolve().parent.parent / "docs" / "configuration.md"

#: (title, "module:Class", fields inherited from the shared base are listed only once)
SECTIONS = [
    ("Shared by every service", "zocrates_runtime.settings:ZocratesSettings"),
    ("Gateway", "zocrates_gateway.config:GatewaySettings"),
    ("Retrieval", "zocrates_retrieval.config:RetrievalSettings"),
    ("Verifier", "zocrates_verifier.config:VerifierSettings"),
    ("Discovery", "zocrates_discovery.config:DiscoverySettings"),
    ("Staging", "zocrates_staging.config:StagingSettings"),
]

HEADER = """# Configuration

Every setting is read by pydantic-settings, highest priority first: environment variables,
a `.env` file in the working directory, then a TOML file (`ZOCRATES_CONFIG`, default
`zocrates.toml`; keys are the field names in lower case, without the prefix). `make run`
needs none of them. This page is generated from the code by `make docs`.
"""


def load(spec: str):
    module, name = spec.split(":")
    try:
        return getattr(importlib.import_module(module), name)
    except (ImportError, AttributeError):
        return None


def default_of(field) -> str:
    if field.default_factory is not None:
        return "(computed)"
    value = field.default
    if value is PydanticUndefined:
        return "(required)"
    if isinstance(value, SecretStr):
        return "(secret)"
    return f"`{value}`" if value not in (None, "") else "unset"


def render() -> str:
    parts = [HEADER]
    base_fields = set(load(SECTIONS[0][1]).model_fields)
    for title, spec in SECTIONS:
        cls = load(spec)
        if cls is None:
            continue
        prefix = cls.model_config.get("env_prefix", "")
        fields = [n for n in cls.model_fields if spec == SECTIONS[0][1] or n not in base_fields]
        parts.append(f"\n## {title}\n\n| variable | default | meaning |\n| --- | --- | --- |")
        for name in fields:
            field = cls.model_fields[name]
            description = (field.description or "").replace("\n", " ").replace("|", "\\|")
            parts.append(f"| `{prefix}{name.upper()}` | {default_of(field)} | {description} |")
    return "\n".join(parts) + "\n"


def main() -> int:
    OUT.write_text(render())
    print(f"wrote {OUT}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
