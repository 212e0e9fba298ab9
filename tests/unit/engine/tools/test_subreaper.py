"""The subreaper supervisor with real processes: every descendant ends with it, also those that
left the process group or were orphaned, and it exits the way the command did."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from apps.engine.tools.subreaper import proc_stat, running_descendants, supervised_argv
from tests.unit.engine.survivors import kill_marked, marker_sleep, running, sleeping

TIMEOUT_S = 10


def wait_for(condition, what: str) -> None:
    """Poll ``condition`` (another process makes it true) until it holds."""
    deadline = time.monotonic() + TIMEOUT_S
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.01)


@pytest.fixture
def marker() -> tuple[str, str]:
    sleep, mark = marker_sleep()
    yield sleep, mark
    kill_marked(mark)


@pytest.mark.parametrize(("command", "returncode"), [
    ("exit 3", 3), ("true", 0), ("kill -TERM $$", -signal.SIGTERM),
    ("kill -KILL $$", -signal.SIGKILL),
])
def test_it_exits_the_way_the_command_did(command: str, returncode: int) -> None:
    done = subprocess.run(supervised_argv(["sh", "-c", command]), timeout=TIMEOUT_S)
    assert done.returncode == returncode


def test_a_command_that_cannot_start_is_127_with_the_reason() -> None:
    done = subprocess.run(supervised_argv(["confab-no-such-program"]), capture_output=True,
                          text=True, timeout=TIMEOUT_S)
    assert done.returncode == 127
    assert done.stderr == "confab-no-such-program: No such file or directory\n"


def test_the_command_keeps_its_pipes_and_environment() -> None:
    done = subprocess.run(supervised_argv(["sh", "-c", "read line; echo $line $FOO; echo e >&2"]),
                          input="hello\n", capture_output=True, text=True, timeout=TIMEOUT_S,
                          env={"FOO": "bar", "PATH": "/usr/bin:/bin"})
    assert (done.stdout, done.stderr, done.returncode) == ("hello bar\n", "e\n", 0)


def test_what_left_the_group_ends_when_the_command_exits(marker: tuple[str, str]) -> None:
    sleep, mark = marker
    started = time.monotonic()
    command = f"setsid {sleep} & (setsid {sleep} &); {sleep} & sleep 0.2"
    done = subprocess.run(supervised_argv(["sh", "-c", command]), timeout=TIMEOUT_S)
    assert done.returncode == 0
    assert running(marker=mark) == []  # gone before the supervisor exited
    assert time.monotonic() - started < 3  # SIGTERM was enough: no grace was waited out


def test_a_descendant_that_ignores_sigterm_gets_sigkill_after_the_grace(
        marker: tuple[str, str]) -> None:
    sleep, mark = marker
    stubborn = f"setsid sh -c \"trap '' TERM; {sleep}; :\" &"
    supervisor = subprocess.Popen(supervised_argv(["sh", "-c", f"{stubborn} wait"],
                                                  grace_s=0.5), start_new_session=True)
    wait_for(lambda: len(sleeping(mark)) == 1, "the stubborn sleep")
    began = time.monotonic()
    supervisor.send_signal(signal.SIGTERM)  # Stop
    assert supervisor.wait(TIMEOUT_S) == -signal.SIGTERM
    assert 0.5 <= time.monotonic() - began < 5
    assert running(marker=mark) == []


def test_the_tree_ends_when_the_process_that_started_it_dies(marker: tuple[str, str],
                                                              tmp_path: Path) -> None:
    sleep, mark = marker
    pid_file = tmp_path / "supervisor.pid"
    spawner = subprocess.Popen([sys.executable, "-c", (
        "import subprocess, sys, time\n"
        f"sys.path.insert(0, {str(Path.cwd())!r})\n"
        "from apps.engine.tools.subreaper import supervised_argv\n"
        f"p = subprocess.Popen(supervised_argv(['sh', '-c', 'setsid {sleep} & {sleep}']))\n"
        f"open({str(pid_file)!r}, 'w').write(str(p.pid))\n"
        "time.sleep(60)\n")])
    wait_for(lambda: len(sleeping(mark)) == 2, "the command's sleeps")
    supervisor = int(pid_file.read_text())
    spawner.kill()  # a server that crashes
    spawner.wait(TIMEOUT_S)
    wait_for(lambda: running(marker=mark) == [], "the orphaned tree to end")
    wait_for(lambda: (s := proc_stat(supervisor)) is None or s.state in ("Z", "X"),
             "the supervisor to exit")


def test_running_descendants_follows_the_tree_and_skips_zombies(
        marker: tuple[str, str]) -> None:
    sleep, mark = marker
    child = subprocess.Popen(["sh", "-c", f"{sleep} & exec {sleep}"])
    try:
        wait_for(lambda: len(running_descendants(child.pid)) == 1, "the grandchild")
        [grandchild] = running_descendants(child.pid)
        stat = proc_stat(grandchild)
        assert stat is not None and stat.ppid == child.pid and stat.state in ("S", "R")
        assert {child.pid, grandchild} <= set(running_descendants(os.getpid()))
        child.kill()
        wait_for(lambda: proc_stat(child.pid).state == "Z", "the child to be a zombie")
        assert child.pid not in running_descendants(os.getpid())  # dead, though not reaped
    finally:
        child.kill()
        child.wait()
