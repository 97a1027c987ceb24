"""Build the HNSW index of a copy of the embedded index, in a process of its own.

`python -m zocrates_retrieval.adapters.edge_build <shard dir> <dim>`; `EdgeStore.optimize` runs it on
a copy of its shard. qdrant-edge holds the GIL for the whole build (up to a minute), which in
the service's process would stall every search, bus handler and heartbeat.
"""

from __future__ import annotations

import os
import sys


def main(argv: list[str]) -> int:
    if len(argv) != 2 or not argv[1].isdigit():
        print("usage: python -m zocrates_retrieval.adapters.edge_build <shard dir> <vector dimension>", file=sys.stderr)
        return 2
    from zocrates_retrieval.adapters.store import build_hnsw

    os.nice(10)  # a background job: the service's own work comes first on a small machine
    build_hnsw(argv[0], int(argv[1]))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
