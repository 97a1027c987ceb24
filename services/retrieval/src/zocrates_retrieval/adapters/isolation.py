"""The isolated converter: files we did not write are converted in a child process with an
address-space cap and a wall-clock limit (RELIABILITY.md section 4), so a decompression bomb
or a parser crash costs one file, not the service.

The converter runs as `python -m zocrates_retrieval.adapters.isolation` (not multiprocessing, which
re-imports the parent's __main__ and so breaks under `python -c` or embedded interpreters).
Requests and replies are length-prefixed JSON on the worker's stdin/stdout: JSON, not pickle,
so that a worker subverted by a hostile file cannot run code in the service by its reply.
"""

from __future__ import annotations

import json
import os
import resource
import select
import subprocess
import sys
import threading
import time
from collections.abc import Iterable, Iterator
from dataclasses import asdict, dataclass
from pathlib import Path

from zocrates_retrieval.convert import convert_file
from zocrates_retrieval.domain.document import CORRUPT, TIMEOUT, TOO_LARGE, Block, ConversionError, Document


def _limit_memory(megabytes: int) -> None:
    limit = megabytes * 1024 * 1024
    try:
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    except (ValueError, OSError):  # not permitted on this platform: run without the cap
        pass


def _convert_job(path: str, content_type: str, max_pages: int) -> Document | ConversionError:
    try:
        return convert_file(Path(path), content_type, max_pages)
    except ConversionError as exc:
        return exc
    except MemoryError:
        return ConversionError(TOO_LARGE, "conversion exceeded the memory cap")
    except Exception as exc:  # a parser bug on a hostile file: report it, keep the worker
        return ConversionError(CORRUPT, f"{type(exc).__name__}: {exc}")


def _encode(result: Document | ConversionError) -> bytes:
    if isinstance(result, ConversionError):
        body = {"error": result.reason, "detail": result.detail}
    else:
        body = {
            "doc": {
                **asdict(result),
                "blocks": [[b.text, list(b.section), b.page, b.kind, b.head_lines] for b in result.blocks],
            }
        }
    return json.dumps(body).encode()


def _decode_reply(data: bytes) -> Document | ConversionError:
    body = json.loads(data)
    if "error" in body:
        return ConversionError(str(body["error"]), str(body.get("detail", "")))
    doc = body["doc"]
    blocks = [
        Block(str(t), tuple(map(str, sec)), page, str(kind), int(head)) for t, sec, page, kind, head in doc["blocks"]
    ]
    return Document(
        blocks=blocks,
        pages=int(doc["pages"]),
        page_labels={int(n): str(label) for n, label in (doc.get("page_labels") or {}).items()},
        title=doc.get("title"),
        authors=doc.get("authors"),
        doi=doc.get("doi"),
    )


def _worker_main(memory_mb: int, max_pages: int) -> None:
    _limit_memory(memory_mb)
    stdin, stdout = sys.stdin.buffer, sys.stdout.buffer
    while header := stdin.read(8):
        request = json.loads(stdin.read(int.from_bytes(header, "big")))
        reply = _encode(_convert_job(request["path"], request["content_type"], max_pages))
        stdout.write(len(reply).to_bytes(8, "big") + reply)
        stdout.flush()


class _WorkerGone(Exception):
    pass


class _Stopped(Exception):
    pass


@dataclass(frozen=True)
class ConvertJob:
    path: Path
    content_type: str


class _Worker:
    """One converter child process and the files sent to it whose replies were not read yet
    (it handles them in the order sent)."""

    def __init__(self, memory_mb: int, max_pages: int, stop: threading.Event):
        self.memory_mb = memory_mb
        self.max_pages = max_pages
        self.stop = stop
        self.proc: subprocess.Popen | None = None
        self.in_flight: list[tuple[int, ConvertJob]] = []
        self.crashes = 0  # in a row: a worker that cannot even start is not the files' fault
        self.broken = False  # a file could not be sent: its process is gone, found at the next read

    def send(self, index: int, job: ConvertJob) -> None:
        if self.proc is None:
            self.proc = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "zocrates_retrieval.adapters.isolation",
                    str(self.memory_mb),
                    str(self.max_pages),
                ],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
            )
        self.in_flight.append((index, job))
        data = json.dumps({"path": str(job.path), "content_type": job.content_type}).encode()
        try:
            self.proc.stdin.write(len(data).to_bytes(8, "big") + data)
            self.proc.stdin.flush()
        except (BrokenPipeError, OSError):
            self.broken = True  # nothing more is sent to it until it is replaced

    def read(self, n: int, deadline: float) -> bytes:
        fd = self.proc.stdout.fileno()
        out = bytearray()
        while len(out) < n:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError
            if self.stop.is_set():
                raise _Stopped
            if not select.select([fd], [], [], min(left, 0.1))[0]:
                continue
            chunk = os.read(fd, n - len(out))
            if not chunk:
                raise _WorkerGone(f"the converter exited with status {self.proc.poll()}")
            out += chunk
        return bytes(out)

    def kill(self) -> None:
        """End the process at once; the files sent to it are forgotten (the caller sends again
        those it still wants)."""
        if self.proc is not None:
            self.proc.kill()
            self.proc.wait()
            self.proc = None
        self.in_flight.clear()
        self.broken = False

    def close(self) -> None:
        """Let the process exit; one still converting files nobody will read (the caller
        stopped early, e.g. the service is shutting down) is killed at once instead."""
        if self.in_flight:
            self.kill()
        if self.proc is not None:
            try:
                self.proc.stdin.close()
                self.proc.wait(timeout=5)
            except (OSError, subprocess.TimeoutExpired):
                self.proc.kill()
                self.proc.wait()
            self.proc = None


#: Converters by default at most: each may take its memory cap (2 GiB) on a long paper with
#: tables, and a lab's many-core host also serves searches.
MAX_DEFAULT_WORKERS = 4


def default_workers() -> int:
    """One converter per core this process may run on, at most `MAX_DEFAULT_WORKERS`."""
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        cores = os.cpu_count() or 1
    return max(1, min(cores, MAX_DEFAULT_WORKERS))


class ConverterPool:
    """Converts files in `workers` child processes (default: one per core, at most four), each with a memory
    cap and a per-file time limit.

    `convert_many` keeps `lookahead` files queued at each worker, so the workers convert side
    by side and conversion overlaps whatever the caller does with the previous result; the
    results still come in the order of the jobs. A file that hangs or kills its worker is
    reported (`timeout` or `corrupt`), that worker is replaced and the files queued behind it
    are sent again. Once `stop` is set, `convert_many` ends within a tenth of a second instead
    of waiting for the files being converted (a long paper with many tables takes seconds).
    """

    def __init__(
        self,
        timeout_s: float = 120.0,
        memory_mb: int = 2048,
        max_pages: int = 2000,
        lookahead: int = 2,
        stop: threading.Event | None = None,
        workers: int = 0,
    ):
        self.timeout_s = timeout_s
        self.lookahead = max(1, lookahead)
        self.stop = stop or threading.Event()
        self._workers = [_Worker(memory_mb, max_pages, self.stop) for _ in range(max(1, workers or default_workers()))]

    @property
    def processes(self) -> list[subprocess.Popen]:
        """The worker processes running now."""
        return [w.proc for w in self._workers if w.proc is not None]

    def convert_many(self, jobs: Iterable[ConvertJob]) -> Iterator[tuple[ConvertJob, Document | ConversionError]]:
        pending = list(enumerate(jobs))
        total = len(pending)
        ready: dict[int, Document | ConversionError] = {}  # read ahead of their turn
        jobs_by_index = dict(pending)
        for wanted in range(total):
            while wanted not in ready:
                self._fill(pending)
                worker = self._holding(wanted, pending)
                try:
                    index, result = self._take(worker, pending)
                except _Stopped:
                    for w in self._workers:  # mid-file: their replies would be read by nobody
                        w.kill()
                    return
                ready[index] = result
            yield jobs_by_index[wanted], ready.pop(wanted)

    def _fill(self, pending: list[tuple[int, ConvertJob]]) -> None:
        """Queue the next files at the workers, one each in turn, up to `lookahead` each."""
        while pending:
            working = [w for w in self._workers if not w.broken]
            worker = min(working, key=lambda w: len(w.in_flight), default=None)
            if worker is None or len(worker.in_flight) >= self.lookahead:
                return
            worker.send(*pending.pop(0))

    def _holding(self, index: int, pending: list[tuple[int, ConvertJob]]) -> _Worker:
        """The worker converting file `index`; sent to the least busy one if still waiting."""
        for worker in self._workers:
            if any(i == index for i, _ in worker.in_flight):
                return worker
        worker = min(self._workers, key=lambda w: (w.broken, len(w.in_flight)))
        at = next(n for n, (i, _) in enumerate(pending) if i == index)
        worker.send(*pending.pop(at))
        return worker

    def _take(self, worker: _Worker, pending: list[tuple[int, ConvertJob]]) -> tuple[int, Document | ConversionError]:
        """The reply to the file at the head of `worker`'s queue; a worker that hangs or dies
        on it is replaced, and the files queued behind it go back to `pending`."""
        restart = False
        try:
            if worker.broken:
                raise _WorkerGone("the converter stopped taking files")
            deadline = time.monotonic() + self.timeout_s
            size = int.from_bytes(worker.read(8, deadline), "big")
            result = _decode_reply(worker.read(size, deadline))
            worker.crashes = 0
        except TimeoutError:
            result = ConversionError(TIMEOUT, f"conversion took longer than {self.timeout_s:.0f} s")
            restart = True
        except _WorkerGone as exc:
            worker.crashes += 1
            if worker.crashes > 3:  # not the files' fault: the converter cannot run here
                self.close()
                raise RuntimeError(f"the document converter keeps failing to start: {exc}") from exc
            result = ConversionError(CORRUPT, f"the converter crashed on this file ({exc})")
            restart = True
        index, _ = worker.in_flight.pop(0)  # the worker handles files in order: this was its current one
        if restart:
            pending[:0] = worker.in_flight  # queued behind it: send them again, first
            pending.sort(key=lambda p: p[0])
            worker.kill()
        return index, result

    def close(self) -> None:
        for worker in self._workers:
            worker.close()

    def __enter__(self) -> ConverterPool:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


if __name__ == "__main__":
    _worker_main(int(sys.argv[1]), int(sys.argv[2]))
    # Every reply is written and flushed: skip the interpreter's teardown of PyMuPDF and its
    # layout model, which held up the end of every ingest by about 0.17 s a converter.
    os._exit(0)
