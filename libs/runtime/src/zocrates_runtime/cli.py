"""`zocrates`: one command for the things a researcher or a lab admin runs by hand.

    zocrates run                       the embedded stack (what `make run` starts)
    zocrates library ingest|search|status ...   index and search a Zotero library
    zocrates token create|revoke|list ...       access tokens (gateway admin)
    zocrates mcp [--url URL] [--token TOKEN]    the library's MCP tools over stdio (docs/mcp.md)

Each subcommand belongs to the package that owns it and is imported only when used, so
this dispatcher depends on none of them.
"""

from __future__ import annotations

import importlib
import sys

COMMANDS = {
    "run": ("zocrates_runtime.stack", "main", None),
    "library": ("zocrates_retrieval.cli", "main", "zocrates library"),
    "token": ("zocrates_gateway.admin", "main", None),
    "mcp": ("zocrates_gateway.mcp_stdio", "main", "zocrates mcp"),
}


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in {"-h", "--help"} or argv[0] not in COMMANDS:
        print(__doc__.strip())
        if argv and argv[0] not in {"-h", "--help"}:
            print(f"\nerror: unknown command {argv[0]!r}; expected one of: {', '.join(COMMANDS)}", file=sys.stderr)
            return 2
        return 0
    name, rest = argv[0], argv[1:]
    module_name, function, prog = COMMANDS[name]
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        print(
            f"error: `zocrates {name}` needs {module_name.split('.')[0]}, which is not installed "
            f"({exc}). Hint: run `make test` or `make run` once to install everything.",
            file=sys.stderr,
        )
        return 2
    entry = getattr(module, function)
    if name == "run":
        return entry()
    if name == "token":
        return entry(["token", *rest])
    return entry(rest, prog=prog)


if __name__ == "__main__":
    sys.exit(main())
