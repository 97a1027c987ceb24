"""Which Zotero data directory holds the local library when none is configured.

Retrieval (which indexes the local library) and discovery (which filters candidates against
it) both read the shared `zotero_dir` setting (`ZOCRATES_ZOTERO_DIR`, zocrates_runtime.settings);
unset, it defaults to `default_zotero_dir(mode)`:

1. Zotero's own default data directory, `~/Zotero`, when it holds a `zotero.sqlite`;
2. else, in local mode, the demo library of this checkout (`demo/zotero`: a few open-access
   papers, listed in demo/README.md), so that a first `make run` has something to answer from;
3. else none: the local user has no library until one is configured.

A hosted deployment (`ZOCRATES_MODE=hosted`) never falls back to the demo, and an installed
package (a container image) has no checkout, so no demo, to fall back to. Like every library,
the demo is only ever read (from a snapshot copy); its index lives in the data directory.
"""

from __future__ import annotations

from pathlib import Path

DATABASE = "zotero.sqlite"


def demo_zotero_dir() -> Path | None:
    """The checkout's demo library, `<checkout>/demo/zotero`, or None outside a checkout."""
    here = Path(__file__).resolve()  # <checkout>/libs/runtime/src/zocrates_runtime/zotero_dir.py
    if len(here.parents) < 5:
        return None
    candidate = here.parents[4] / "demo" / "zotero"
    return candidate if (candidate / DATABASE).is_file() else None


def default_zotero_dir(mode: str = "local") -> Path | None:
    """`~/Zotero` when it holds a database, else the demo library in local mode, else None."""
    home = Path.home() / "Zotero"
    if (home / DATABASE).is_file():
        return home
    if mode == "local":
        return demo_zotero_dir()
    return None


def is_demo(zotero_dir: Path | None) -> bool:
    """Whether `zotero_dir` is the bundled demo library (however it was configured)."""
    demo = demo_zotero_dir()
    return zotero_dir is not None and demo is not None and Path(zotero_dir).resolve() == demo


def demo_papers(zotero_dir: Path) -> int:
    """How many papers the demo holds: one stored PDF each (storage/<key>/<name>.pdf)."""
    return sum(1 for _ in Path(zotero_dir).glob("storage/*/*.pdf"))
