import asyncio
import contextlib
import io
import logging
import os
import signal
import subprocess
import sys
import textwrap

import pytest

from harness.waiting import wait_until
from zocrates_runtime.supervisor import Child, RestartPolicy, Supervisor

PY = sys.executable
FAST = RestartPolicy(initial_delay=0.02, max_delay=0.05, max_crashes=50, window=60)
SLEEPER = "import os, time; print('pid', os.getpid(), flush=True); time.sleep(120)"


def test_backoff_doubles_from_half_a_second_and_is_capped():
    policy = RestartPolicy()
    assert [policy.delay(n) for n in range(1, 8)] == [0.5, 1, 2, 4, 8, 10, 10]


async def test_crashing_child_is_restarted_until_it_stays_up(tmp_path, alive):
    runs = tmp_path / "runs"
    # Crashes on its first two runs, then stays up.
    flaky = (
        f"import os, sys, time, pathlib; p = pathlib.Path({str(runs)!r}); "
        "n = len(p.read_text()) if p.exists() else 0; p.write_text('x' * (n + 1)); "
        "print('run', n + 1, flush=True); n < 2 and sys.exit(3); time.sleep(120)"
    )
    out = io.StringIO()
    sup = Supervisor([Child("flaky", [PY, "-c", flaky])], policy=FAST, output=out)
    task = asyncio.create_task(sup.run())
    state = sup.children["flaky"]
    await wait_until(lambda: "[flaky] run 3" in out.getvalue(), what="the 3rd run")
    pid = state.pid
    assert pid and alive(pid)
    assert state.last_exit == 3 and len(state.crashes) == 2
    sup.stop()
    assert await asyncio.wait_for(task, 10) == 0
    assert not alive(pid)
    assert out.getvalue().splitlines() == ["[flaky] run 1", "[flaky] run 2", "[flaky] run 3"]


async def test_gives_up_after_crash_budget_and_stops_the_others(caplog, alive):
    caplog.set_level(logging.INFO, logger="zocrates.supervisor")
    policy = RestartPolicy(initial_delay=0.01, max_delay=0.02, max_crashes=3, window=60)
    out = io.StringIO()
    sup = Supervisor(
        [Child("broken", [PY, "-c", "import sys; sys.exit(7)"]), Child("fine", [PY, "-c", SLEEPER])],
        policy=policy,
        output=out,
    )
    code = await asyncio.wait_for(sup.run(), 15)
    assert code == 1 and sup.failed == "broken"
    assert sup.children["broken"].starts == 3
    assert sup.pids == {}
    assert "broken exited with code 7 and has crashed 3 times within 60 s; giving up" in caplog.text
    [fine_line] = [line for line in out.getvalue().splitlines() if line.startswith("[fine] pid")]
    fine_pid = int(fine_line.split()[-1])
    assert not alive(fine_pid)


async def test_missing_program_gives_up_at_once(caplog):
    sup = Supervisor([Child("ghost", ["zocrates-no-such-program"])], policy=FAST)
    assert await asyncio.wait_for(sup.run(), 5) == 1
    assert sup.children["ghost"].starts == 0
    assert "cannot start ghost" in caplog.text and "program not found" in caplog.text


async def test_output_is_prefixed_line_by_line_including_a_last_partial_line():
    out = io.StringIO()
    code = (
        "import sys; print('one', flush=True); print('err', file=sys.stderr, flush=True); "
        "sys.stdout.write('two\\nthree'); sys.stdout.flush()"
    )
    # A long backoff keeps the exited child from running again before stop().
    slow = RestartPolicy(initial_delay=30, max_delay=30)
    sup = Supervisor([Child("talker", [PY, "-c", code])], policy=slow, output=out)
    task = asyncio.create_task(sup.run())
    await wait_until(lambda: sup.children["talker"].last_exit == 0, what="the child's exit")
    sup.stop()
    assert await asyncio.wait_for(task, 5) == 0  # stop() cuts the backoff short
    assert out.getvalue() == "[talker] one\n[talker] err\n[talker] two\n[talker] three\n"


SUPERVISED = textwrap.dedent(
    """
    import asyncio, sys
    from zocrates_runtime.supervisor import Child, Supervisor

    PY = sys.executable
    SLEEPER = "import os, time; print('pid', os.getpid(), flush=True); time.sleep(120)"
    PARENT = ("import os, subprocess, sys, time; "
              "c = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(120)']); "
              "print('pid', os.getpid(), c.pid, flush=True); time.sleep(120)")
    STUBBORN = ("import os, signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); "
                "print('pid', os.getpid(), flush=True); time.sleep(120)")

    async def main():
        sup = Supervisor([Child("a", [PY, "-c", SLEEPER]), Child("b", [PY, "-c", PARENT]),
                          Child("c", [PY, "-c", STUBBORN])], stop_timeout=0.5)
        sup.stop_on_signals()
        return await sup.run()

    sys.exit(asyncio.run(main()))
    """
)


@pytest.fixture
def start_supervised(tmp_path, read_lines):
    """Run SUPERVISED; returns the process and its children's pids once all have started."""
    script = tmp_path / "supervised.py"
    script.write_text(SUPERVISED)
    started = []

    def start():
        proc = subprocess.Popen([PY, str(script)], stdout=subprocess.PIPE, text=True)
        started.append(proc)
        lines = read_lines(proc)
        pids = []
        for name in "abc":  # the children start concurrently, so their lines come in any order
            line = lines.wait_for(lambda line, n=name: line.startswith(f"[{n}] pid "))
            pids += [int(p) for p in line.split()[2:]]
        return proc, pids  # a, b, b's own child, c

    yield start
    for proc in started:  # a failed test must not leave the supervisor behind
        if proc.poll() is None:
            proc.terminate()
            proc.wait(10)


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_signal_stops_every_child_and_grandchild(start_supervised, wait_gone, sig):
    proc, pids = start_supervised()
    proc.send_signal(sig)
    assert proc.wait(10) == 0
    # The supervisor has returned, so everything must already be gone (a zombie
    # grandchild awaiting init's reaping counts as gone); the wait only absorbs reaping.
    assert wait_gone(pids, timeout=2) == []


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux only")
def test_children_die_with_a_killed_supervisor(start_supervised, wait_gone):
    proc, pids = start_supervised()
    a, b, _grandchild, c = pids
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(10)
    # Direct children get the parent-death signal; a grandchild is its own parent's business.
    assert wait_gone([a, b, c], timeout=5) == []
    with contextlib.suppress(ProcessLookupError):
        os.kill(_grandchild, signal.SIGKILL)
