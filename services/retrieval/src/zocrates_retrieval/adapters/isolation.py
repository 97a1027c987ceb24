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


class ConverterPool:
    """Converts files in a child process with a memory cap and a per-file time limit.

    `convert_many` keeps `lookahead` files queued at the worker so conversion overlaps
    whatever the caller does with the previous result (embedding, on the other core). A file
    that hangs or kills the worker is reported (`timeout` or `corrupt`), the worker is
    replaced and the files queued behind it are sent again. Once `stop` is set, `convert_many`
    ends within a tenth of a second instead of waiting for the file being converted (a long
    paper with many tables takes seconds).
    """

    def __init__(
        self,
        timeout_s: float = 120.0,
        memory_mb: int = 2048,
        max_pages: int = 2000,
        lookahead: int = 2,
        stop: threading.Event | None = None,
    ):
        self.timeout_s = timeout_s
        self.memory_mb = memory_mb
        self.max_pages = max_pages
        self.lookahead = max(1, lookahead)
        self.stop = stop or threading.Event()
        self._proc: subprocess.Popen | None = None
        self._in_flight = 0  # files sent to the worker whose result was not taken yet

    def _worker(self) -> subprocess.Popen:
        if self._proc is None:
            self._proc = subprocess.Popen(
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
        return self._proc

    def _send(self, job: ConvertJob) -> None:
        data = json.dumps({"path": str(job.path), "content_type": job.content_type}).encode()
        proc = self._worker()
        try:
            proc.stdin.write(len(data).to_bytes(8, "big") + data)
            proc.stdin.flush()
        except (BrokenPipeError, OSError) as exc:
            raise _WorkerGone(str(exc)) from exc

    def _read(self, n: int, deadline: float) -> bytes:
        fd = self._proc.stdout.fileno()
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
                raise _WorkerGone(f"the converter exited with status {self._proc.poll()}")
            out += chunk
        return bytes(out)

    def _kill(self) -> None:
        if self._proc is not None:
            self._proc.kill()
            self._proc.wait()
            self._proc = None

    def convert_many(self, jobs: Iterable[ConvertJob]) -> Iterator[tuple[ConvertJob, Document | ConversionError]]:
        pending = list(jobs)
        in_flight: list[ConvertJob] = []
        crashes = 0
        while pending or in_flight:
            restart = False
            try:
                while pending and len(in_flight) < self.lookahead:
                    in_flight.append(pending.pop(0))
                    self._in_flight = len(in_flight)
                    self._send(in_flight[-1])
                deadline = time.monotonic() + self.timeout_s
                size = int.from_bytes(self._read(8, deadline), "big")
                result = _decode_reply(self._read(size, deadline))
                crashes = 0
            except _Stopped:
                self._kill()  # mid-file: its reply would be read by nobody
                self._in_flight = 0
                return
            except TimeoutError:
                result = ConversionError(TIMEOUT, f"conversion took longer than {self.timeout_s:.0f} s")
                restart = True
            except _WorkerGone as exc:
                crashes += 1
                if crashes > 3:  # not the files' fault: the converter cannot run here
                    self._kill()
                    raise RuntimeError(f"the document converter keeps failing to start: {exc}") from exc
                result = ConversionError(CORRUPT, f"the converter crashed on this file ({exc})")
                restart = True
            job = in_flight.pop(0)  # the worker handles files in order: this was its current one
            if restart:
                self._kill()
                pending[:0] = in_flight  # queued behind it: send them to the fresh worker
                in_flight.clear()
            self._in_flight = len(in_flight)
            yield job, result

    def close(self) -> None:
        """Let the worker exit; one still converting files nobody will read (the caller
        stopped early, e.g. the service is shutting down) is killed at once instead."""
        if self._in_flight:
            self._kill()
            self._in_flight = 0
        if self._proc is not None:
            try:
                self._proc.stdin.close()
                self._proc.wait(timeout=5)
            except (OSError, subprocess.TimeoutExpired):
                self._proc.kill()
                self._proc.wait()
            self._proc = None

    def __enter__(self) -> ConverterPool:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


if __name__ == "__main__":
    _worker_main(int(sys.argv[1]), int(sys.argv[2]))
