"""Write docs/configuration.md from the settings classes (`make docs`); a test keeps it true."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

from pydantic import AliasChoices, SecretStr
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

Every service reads its settings the same way (pydantic-settings, one class per service, each
derived from `ZocratesSettings` in `libs/runtime/src/zocrates_runtime/settings.py`), highest
priority first: environment variables, a `.env` file in the working directory, then a TOML file
(`ZOCRATES_CONFIG`, default `zocrates.toml` in the working directory). `make run` needs none of
them. This page is generated from the code by `make docs`.

The settings shared by every service are defined once and read by every service under one
name, `ZOCRATES_<NAME>`. A name listed under "also read" is another name of the same setting
(an older one, such as `ZOCRATES_RETRIEVAL_ZOTERO_DIR`, or a conventional one), still honoured;
when several are set, the first one listed wins. A service's own settings carry its prefix, e.g. `ZOCRATES_RETRIEVAL_CHUNK_TOKENS`. In the TOML file a key is the variable's name
without `ZOCRATES_`, in lower case; a service prefix becomes a table:

```toml
data_dir = "/srv/zocrates"   # ZOCRATES_DATA_DIR, every service
local_user_id = "alice"      # ZOCRATES_LOCAL_USER_ID, every service
top_k = 8                    # ZOCRATES_TOP_K (the gateway's prefix is ZOCRATES_)

[retrieval]
chunk_tokens = 160           # ZOCRATES_RETRIEVAL_CHUNK_TOKENS
```
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


def env_names(cls, name: str) -> list[str]:
    """The environment variables a field is read from, the one that wins first."""
    alias = cls.model_fields[name].validation_alias
    if isinstance(alias, AliasChoices):
        return [c for c in alias.choices if isinstance(c, str)]
    if isinstance(alias, str):
        return [alias]
    return [f"{cls.model_config.get('env_prefix', '')}{name}".upper()]


def render() -> str:
    parts = [HEADER]
    base_fields = set(load(SECTIONS[0][1]).model_fields)
    for title, spec in SECTIONS:
        cls = load(spec)
        if cls is None:
            continue
        fields = [n for n in cls.model_fields if spec == SECTIONS[0][1] or n not in base_fields]
        parts.append(f"\n## {title}\n\n| variable | default | meaning |\n| --- | --- | --- |")
        for name in fields:
            field = cls.model_fields[name]
            description = (field.description or "").replace("\n", " ").replace("|", "\\|")
            first, *older = env_names(cls, name)
            if older:
                also = ", ".join(f"`{n}`" for n in older)
                description = f"{description.rstrip('.')}. Also read: {also}." if description else f"Also read: {also}."
            parts.append(f"| `{first}` | {default_of(field)} | {description} |")
    return "\n".join(parts) + "\n"


def main() -> int:
    OUT.write_text(render())
    print(f"wrote {OUT}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
