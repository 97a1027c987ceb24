"""Write docs/configuration.md from the settings classes (`make docs`); a test keeps it true."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

from pydantic import SecretStr
from pydantic_core import PydanticUndefined

from tools import generated
from zocrates_runtime.settings import env_names

OUT = Path(__file__).resolve().parent.parent / "docs" / "configuration.md"

#: (title, "module:Class"); a field two classes inherit is listed once, in the first section
SECTIONS = [
    ("Shared by every service", "zocrates_runtime.settings:ZocratesSettings"),
    ("Gateway", "zocrates_gateway.config:GatewaySettings"),
    ("The launcher (`make run`)", "zocrates_runtime.stack:StackSettings"),
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


def defined_by(cls, name: str) -> tuple[type, str]:
    """The class that declares field `name` (`cls` or a base it inherits it from), and the name."""
    return next(c for c in reversed(cls.__mro__) if name in c.__dict__.get("__annotations__", {})), name


def render() -> str:
    parts = [HEADER]
    listed: set[tuple[type, str]] = set()
    for title, spec in SECTIONS:
        cls = load(spec)
        if cls is None:
            continue
        parts.append(f"\n## {title}\n\n| variable | default | meaning |\n| --- | --- | --- |")
        for name, field in cls.model_fields.items():
            if (owner := defined_by(cls, name)) in listed:
                continue
            listed.add(owner)
            first, *older = env_names(cls, name)
            description = (field.description or "").replace("\n", " ").replace("|", "\\|")
            if older:
                also = ", ".join(f"`{n}`" for n in older)
                description = f"{description.rstrip('.')}. Also read: {also}." if description else f"Also read: {also}."
            parts.append(f"| `{first}` | {default_of(field)} | {description} |")
    return "\n".join(parts) + "\n"


def main() -> int:
    return generated.write(OUT, render())


if __name__ == "__main__":
    sys.exit(main())
