"""The daemon process: ready line, daemon.json, file modes, one daemon per home, start/stop/status,
graceful SIGTERM, loopback-only listening, config validation at start, health, and CLI endpoints.

Every test runs real daemon processes (`python3 compozy.py daemon ...`) and stops them in a finally.
"""

import json
import os
import re
import select
import signal
import socket
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

from compozy import __version__
from compozy.cli.client import Client
from tests.harness.daemon import DaemonProcess
from tests.harness.daemon import test_environment as daemon_environment

ROOT = Path(__file__).resolve().parents[1]
CLI_TIMEOUT = 60
READY_LINE = re.compile(r"^compozy daemon listening on (http://127\.0\.0\.1:(\d+)) socket (\S+)$", re.M)


def run_cli(home, *args, extra_env=None, timeout=CLI_TIMEOUT):
    """`python3 compozy.py ARGS` from the repo root, with COMPOZY_HOME=home and no COMPOZY_URL."""
    return subprocess.run([sys.executable, "compozy.py", *args], cwd=ROOT, env=daemon_environment(home, extra_env),
                          capture_output=True, text=True, timeout=timeout)


def mode_of(path):
    return stat.S_IMODE(os.lstat(path).st_mode)


def proc_stat(pid):
    """(state, pgrp, start_time) from /proc/<pid>/stat, or None when the pid does not exist."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            data = handle.read()
    except (FileNotFoundError, ProcessLookupError):
        return None
    fields = data[data.rindex(b")") + 2:].split()
    return fields[0].decode(), int(fields[2]), int(fields[19])


def is_alive(pid, start_time=None):
    info = proc_stat(pid)
    if info is None or info[0] == "Z":
        return False
    return start_time is None or info[2] == start_time


def group_members(pgid):
    members = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            info = proc_stat(int(entry))
            if info and info[1] == pgid and info[0] != "Z":
                members.append(int(entry))
    return members


def wait_for(predicate, timeout=30.0, interval=0.05, what="condition"):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(interval)
    raise AssertionError(f"timed out after {timeout}s waiting for {what}")


def terminate_pid(pid, timeout=30.0):
    """Stop a daemon this test started but does not own as a child (from `daemon start`)."""
    if not is_alive(pid):
        return
    os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout
    while is_alive(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    if is_alive(pid):
        os.kill(pid, signal.SIGKILL)


def free_port():
    """A loopback port that nothing listens on (bound, then closed)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def sessions_path(ws, sid, *rest):
    return "/".join(("/api/workspaces", ws, "sessions", sid, *rest))


# -- daemon run: ready line, daemon.json, modes -----------------------------------------------------


def read_line(stream, timeout):
    """One line from a pipe, or None after timeout (select, so a silent daemon cannot hang the test)."""
    ready, _, _ = select.select([stream], [], [], timeout)
    return stream.readline().decode() if ready else None


def test_daemon_run_prints_ready_line_and_writes_private_files(home, tmp_path):
    with open(tmp_path / "stderr.log", "wb") as stderr:
        process = subprocess.Popen([sys.executable, "compozy.py", "daemon", "run", "--http", "127.0.0.1:0"],
                                   cwd=ROOT, env=daemon_environment(home), stdout=subprocess.PIPE, stderr=stderr)
    try:
        line = read_line(process.stdout, 30)
        assert line is not None, (tmp_path / "stderr.log").read_text()
        ready = READY_LINE.fullmatch(line.rstrip("\n"))
        assert ready, line
        # daemon.json is on disk by the time the ready line is printed, and agrees with it.
        info = json.loads((home / "daemon.json").read_text())
        assert set(info) >= {"pid", "http", "socket", "started_at"}
        assert info["pid"] == process.pid
        assert info["http"] == ready.group(1)
        assert int(ready.group(2)) != 0  # port 0 resolved to the real port
        assert info["socket"] == ready.group(3) == str(home / "daemon.sock")
        assert isinstance(info["started_at"], str) and info["started_at"]
        assert mode_of(home / "daemon.json") == 0o600
        assert stat.S_ISSOCK(os.lstat(info["socket"]).st_mode)
        assert mode_of(info["socket"]) == 0o600
        assert mode_of(home) == 0o700
        assert mode_of(home / "sessions") == 0o700
        assert Client(info["http"], timeout=10).call("GET", "/api/health")[0] == 200
        process.send_signal(signal.SIGTERM)
        assert process.wait(60) == 0
        assert process.stdout.read().decode() == ""  # one line only
    finally:
        if process.poll() is None:
            process.kill()
            process.wait(10)
        process.stdout.close()
    assert not (home / "daemon.json").exists()
    assert not (home / "daemon.sock").exists()


def test_second_daemon_on_same_home_refuses_to_start(home):
    daemon = DaemonProcess(home)
    try:
        daemon.start()
        before = (home / "daemon.json").read_text()
        second = run_cli(home, "daemon", "run", "--http", "127.0.0.1:0")
        assert second.returncode == 1, second.stdout + second.stderr
        assert str(home) in second.stderr
        assert "listening" not in second.stdout
        # The first daemon is untouched: same daemon.json, still answering on its socket.
        assert (home / "daemon.json").read_text() == before
        assert Client(daemon.socket_url, timeout=10).call("GET", "/api/health")[0] == 200
    finally:
        daemon.stop()


# -- daemon start / status / stop -------------------------------------------------------------------


def test_daemon_start_status_stop_lifecycle(home):
    pid = None
    try:
        started = run_cli(home, "daemon", "start", "--http", "127.0.0.1:0")
        assert started.returncode == 0, started.stdout + started.stderr
        info = json.loads((home / "daemon.json").read_text())  # ready when start returns
        pid = info["pid"]
        assert is_alive(pid)
        assert Client(info["http"], timeout=10).call("GET", "/api/health")[1]["status"] == "ok"

        status = run_cli(home, "daemon", "status", "-o", "json")
        assert status.returncode == 0, status.stderr
        document = json.loads(status.stdout)
        assert document["running"] is True
        assert document["pid"] == pid
        assert document["version"] == __version__

        stopped = run_cli(home, "daemon", "stop")
        assert stopped.returncode == 0, stopped.stdout + stopped.stderr
        assert not is_alive(pid)
        assert not (home / "daemon.json").exists()
        assert not (home / "daemon.sock").exists()

        after = run_cli(home, "daemon", "status")
        assert after.returncode == 1
    finally:
        if pid is None and (home / "daemon.json").exists():
            pid = json.loads((home / "daemon.json").read_text())["pid"]
        if pid is not None:
            terminate_pid(pid)


# -- graceful shutdown ------------------------------------------------------------------------------


def test_sigterm_stops_bound_session_with_reason_shutdown(home, workspace):
    daemon = DaemonProcess(home)
    try:
        daemon.start()
        client = daemon.client(timeout=30)
        _, created = client.call("POST", "/api/sessions", {"workspace_path": str(workspace)})
        sid, ws = created["session"]["id"], created["session"]["workspace_id"]
        client.call("POST", sessions_path(ws, sid, "prompt"), {"message": "hello"})
        wait_for(lambda: client.call("GET", sessions_path(ws, sid, "events"), query={"type": "done"})[1]["events"],
                 what="the first turn to end")
        _, inspected = client.call("GET", sessions_path(ws, sid, "inspect"))
        process = inspected["process"]
        assert process and is_alive(process["pid"], process["start_time"])

        daemon.stop()  # SIGTERM and wait: the graceful path
        assert daemon.process.returncode == 0
        assert not is_alive(process["pid"], process["start_time"])
        assert group_members(process.get("pgid", process["pid"])) == []
        assert not (home / "daemon.json").exists()

        meta = json.loads((home / "sessions" / sid / "meta.json").read_text())
        assert meta["state"] == "stopped"
        assert meta["stop_reason"] == "shutdown"

    finally:
        daemon.stop()


# -- listening address ------------------------------------------------------------------------------


def test_non_loopback_http_refused_without_allow_remote(home):
    result = run_cli(home, "daemon", "run", "--http", "0.0.0.0:0")
    assert result.returncode == 1, result.stdout + result.stderr
    assert "0.0.0.0" in result.stderr
    assert "--allow-remote" in result.stderr
    assert "listening" not in result.stdout
    assert not (home / "daemon.json").exists()


def test_allow_remote_without_token_refused(home):
    result = run_cli(home, "daemon", "run", "--http", "0.0.0.0:0", "--allow-remote")
    assert result.returncode == 1, result.stdout + result.stderr
    assert "token" in result.stderr
    assert not (home / "daemon.json").exists()


def test_the_listening_address_comes_from_config_toml_and_the_flag_wins(home):
    home.mkdir(parents=True, exist_ok=True)
    configured, flagged = free_port(), free_port()
    (home / "config.toml").write_text(f'[daemon]\nhttp = "127.0.0.1:{configured}"\n')
    pid = None
    try:
        for flags, port in (((), configured), (("--http", f"127.0.0.1:{flagged}"), flagged)):
            started = run_cli(home, "daemon", "start", *flags)
            assert started.returncode == 0, started.stdout + started.stderr
            info = json.loads((home / "daemon.json").read_text())
            pid = info["pid"]
            assert info["http"] == f"http://127.0.0.1:{port}"
            assert Client(info["http"], timeout=10).call("GET", "/api/health")[1]["status"] == "ok"
            assert run_cli(home, "daemon", "stop").returncode == 0
            pid = None
    finally:
        if pid is not None:
            terminate_pid(pid)


def test_a_port_in_use_says_which_flag_or_key_changes_it(home):
    home.mkdir(parents=True, exist_ok=True)
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        result = run_cli(home, "daemon", "run", "--http", f"127.0.0.1:{port}")
        assert result.returncode == 1 and "Address already in use" in result.stderr
        assert "the address came from --http" in result.stderr
        assert '--http HOST:PORT or `[daemon] http = "HOST:PORT"` in config.toml' in result.stderr
        (home / "config.toml").write_text(f'[daemon]\nhttp = "127.0.0.1:{port}"\n')
        result = run_cli(home, "daemon", "run")
        assert result.returncode == 1
        assert f"the address came from `[daemon] http` in {home / 'config.toml'}" in result.stderr
    (home / "config.toml").write_text('[daemon]\nhttp = "localhost"\n')
    result = run_cli(home, "daemon", "run")
    assert result.returncode == 1 and "`[daemon] http` in" in result.stderr and "must be HOST:PORT" in result.stderr


# -- config.toml validated at start -----------------------------------------------------------------


@pytest.mark.parametrize("text, key, problem", [
    ('[session.supervision]\nquite_after = "30m"\n', "session.supervision.quite_after", "unknown key"),
    ('[session.supervision]\nquiet_after = "30 minutes"\n', "session.supervision.quiet_after", "duration"),
    ('[session.busy_input]\nqueue_cap = "ten"\n', "session.busy_input.queue_cap", "whole number"),
], ids=["unknown-key", "bad-duration", "wrong-type"])
def test_invalid_config_stops_daemon_at_start(home, text, key, problem):
    config = home / "config.toml"
    config.write_text(text)
    result = run_cli(home, "daemon", "run", "--http", "127.0.0.1:0")
    assert result.returncode == 1, result.stdout + result.stderr
    message = next((line for line in result.stderr.splitlines() if key in line), "")
    assert str(config) in message, result.stderr
    assert problem in message, result.stderr
    assert "listening" not in result.stdout
    assert not (home / "daemon.json").exists()
    assert not (home / "daemon.sock").exists()


def test_unparsable_config_stops_daemon_naming_the_file(home):
    config = home / "config.toml"
    config.write_text("[session\nbroken = \n")
    result = run_cli(home, "daemon", "run", "--http", "127.0.0.1:0")
    assert result.returncode == 1
    assert str(config) in result.stderr
    assert not (home / "daemon.json").exists()


# -- health and CLI endpoints -----------------------------------------------------------------------


def test_health_answers_status_and_version_on_tcp_and_socket(daemon):
    for url in (daemon.http_url, daemon.socket_url):
        status, document = Client(url, timeout=10).call("GET", "/api/health")
        assert status == 200
        assert document == {"status": "ok", "version": __version__}


@pytest.mark.parametrize("how", ["default-socket", "dead-tcp-env", "dead-unix-flag"])
def test_cli_without_daemon_prints_one_error_line(home, how):
    args, env = ("session", "list"), None
    if how == "dead-tcp-env":
        env = {"COMPOZY_URL": f"http://127.0.0.1:{free_port()}"}
    elif how == "dead-unix-flag":
        args = ("--url", f"unix://{home}/nothing.sock", *args)
    result = run_cli(home, *args, extra_env=env)
    assert result.returncode == 1
    assert result.stdout == ""
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("Error: daemon_unavailable: ")


def test_cli_url_and_env_select_tcp_or_unix_endpoint(daemon, workspace, tmp_path):
    _, created = daemon.client(timeout=30).call("POST", "/api/sessions",
                                                          {"workspace_path": str(workspace)})
    sid = created["session"]["id"]
    elsewhere = tmp_path / "empty-home"  # no socket here: only an explicit URL can reach the daemon
    elsewhere.mkdir()
    dead = f"unix://{tmp_path}/dead.sock"

    def listed(result):
        assert result.returncode == 0, result.stdout + result.stderr
        return [s["id"] for s in json.loads(result.stdout)["sessions"]]

    secret = {"COMPOZY_TOKEN": daemon.token}  # over TCP from another home: its secret, not this home's
    assert sid in listed(run_cli(elsewhere, "session", "list", "-o", "json",
                                 extra_env={"COMPOZY_URL": daemon.http_url, **secret}))
    assert sid in listed(run_cli(daemon.home, "session", "list", "-o", "json",
                                 extra_env={"COMPOZY_URL": daemon.http_url}))  # its own home: read from the file
    assert sid in listed(run_cli(elsewhere, "session", "list", "-o", "json",
                                 extra_env={"COMPOZY_URL": daemon.socket_url}))
    assert sid in listed(run_cli(elsewhere, "--url", daemon.http_url, "session", "list", "-o", "json",
                                 extra_env={"COMPOZY_URL": dead, **secret}))
    assert sid in listed(run_cli(elsewhere, "--url", daemon.socket_url, "session", "list", "-o", "json"))
    assert sid in listed(run_cli(daemon.home, "session", "list", "-o", "json"))  # default: the home socket

    unreachable = run_cli(daemon.home, "session", "list", extra_env={"COMPOZY_URL": dead})
    assert unreachable.returncode == 1
    assert unreachable.stderr.startswith("Error: daemon_unavailable: ")
    assert "dead.sock" in unreachable.stderr
