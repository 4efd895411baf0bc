"""Attacks on the daemon itself, each against a real daemon process (issue 14): secrets kept from agents
and reads (7), remote mode (14), a home only we control (5, 15), daemon stop and --socket (8).
"""

import json
import os
import stat
import subprocess
import sys
import time

import pytest

from compozy.cli.client import Client
from tests.harness.api import events, spath, wait_for
from tests.harness.cli import run_cli
from tests.harness.daemon import DaemonProcess

TOKEN = "daemon-token-0123456789"
SECRETS = {"COMPOZY_TOKEN": TOKEN, "COMPOZY_RELAY_SECRET": "relay-secret-98765",
           "ANTHROPIC_API_KEY": "sk-ant-test-4242", "PLAIN_SETTING": "visible"}


def test_agents_get_the_environment_without_the_daemons_credentials_and_reads_redact_secrets(home, tmp_path):
    dump = tmp_path / "agent.env"
    (home / "config.toml").write_text(
        '[providers.reference]\n'
        f'command = ["sh", "-c", "env > {dump}; exec {sys.executable} -m compozy.agents.reference"]\n'
        'env = { PROVIDER_TOKEN = "provider-token-5555" }\n')
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "leak.txt").write_text(f"{TOKEN} {SECRETS['ANTHROPIC_API_KEY']} provider-token-5555")
    daemon = DaemonProcess(home, env=SECRETS).start()
    try:
        api = daemon.client(timeout=60)
        session = api.call("POST", "/api/sessions", {"workspace_path": str(workspace.resolve())})[1]["session"]
        turn_id = api.call("POST", spath(session, "prompt"), {"message": "[read leak.txt] go"})[1]["prompt"]["turn_id"]
        wait_for(lambda: events(api, session, turn_id=turn_id, type="done"), what="end of the turn")
        environment = dict(line.split("=", 1) for line in dump.read_text().splitlines() if "=" in line)
        assert "COMPOZY_TOKEN" not in environment and "COMPOZY_RELAY_SECRET" not in environment
        assert environment["ANTHROPIC_API_KEY"] == SECRETS["ANTHROPIC_API_KEY"]  # what the agent needs, it gets
        assert environment["PLAIN_SETTING"] == "visible" and environment["PROVIDER_TOKEN"] == "provider-token-5555"
        reads = json.dumps([events(api, session), api.call("GET", spath(session, "history"))[1],
                            api.call("GET", spath(session, "inspect"))[1]])
        assert "read: [redacted] [redacted] [redacted]" in reads
        for value in (TOKEN, SECRETS["ANTHROPIC_API_KEY"], "provider-token-5555"):
            assert value not in reads
        api.call("POST", spath(session, "stop"), {"wait": True})
    finally:
        daemon.stop()


@pytest.fixture
def remote_daemon(home):
    """A daemon on 127.0.0.2: a loopback address compozy counts as remote, so no test opens a real port."""
    process = DaemonProcess(home, http="127.0.0.2:0", args=["--allow-remote"], env={"COMPOZY_TOKEN": TOKEN}).start()
    yield process
    process.stop()


def test_a_remote_daemon_asks_for_its_token_and_still_checks_host_and_origin(remote_daemon, home):
    url = remote_daemon.http_url
    assert url.startswith("http://127.0.0.2:")
    port = url.rsplit(":", 1)[1]
    api = Client(url, timeout=30)
    with pytest.raises(Exception) as refused:
        api.call("GET", "/api/sessions")
    assert refused.value.code == "unauthorized"
    bearer = {"Authorization": f"Bearer {TOKEN}"}
    assert api.call("GET", "/api/sessions", headers=bearer)[0] == 200
    for headers, code in (({"Host": f"evil.example:{port}"}, "host_not_allowed"),
                          ({"Origin": "http://evil.example"}, "origin_not_allowed"),
                          ({"Sec-Fetch-Site": "cross-site"}, "origin_not_allowed")):
        with pytest.raises(Exception) as refused:
            api.call("GET", "/api/sessions", headers={**bearer, **headers})
        assert refused.value.code == code, headers
    assert api.call("GET", "/api/sessions", headers={**bearer, "Origin": url})[0] == 200
    assert Client(remote_daemon.socket_url).call("GET", "/api/sessions")[0] == 200  # the owner-only socket


def test_the_cli_without_the_token_says_unauthorized_not_not_running(remote_daemon, home):
    for args in (("session", "list"), ("status",)):
        result = run_cli(home, "--url", remote_daemon.http_url, *args)
        assert result.returncode != 0
        assert "unauthorized" in result.stderr and "not running" not in result.stdout + result.stderr, result
    running = run_cli(home, "--url", remote_daemon.http_url, "daemon", "status")  # the open health route
    assert running.returncode == 0 and "compozy daemon running" in running.stdout, running.stderr
    ok = run_cli(home, "--url", remote_daemon.http_url, "session", "list", extra_env={"COMPOZY_TOKEN": TOKEN})
    assert ok.returncode == 0, ok.stderr


def test_a_wildcard_daemon_writes_a_url_this_machine_can_use_and_takes_its_token_from_a_file(home, tmp_path):
    token_file = tmp_path / "token"
    token_file.write_text(TOKEN + "\n")
    daemon = DaemonProcess(home, http="0.0.0.0:0", args=["--allow-remote", "--token-file", str(token_file)]).start()
    try:
        assert daemon.http_url.startswith("http://127.0.0.1:")
        with open(f"/proc/{daemon.process.pid}/cmdline", "rb") as handle:
            assert TOKEN.encode() not in handle.read()
        api = daemon.client(timeout=30)
        assert api.call("GET", "/api/sessions", headers={"Authorization": f"Bearer {TOKEN}"})[0] == 200
    finally:
        daemon.stop()


# -- a home only we control (findings 5 and 15) ----------------------------------------------------------


@pytest.mark.parametrize("target, mode, fix", [("home", 0o777, "chmod 700"), ("config", 0o666, "chmod 600"),
                                               ("socket_dir", 0o777, "chmod 700")])
def test_a_home_config_or_socket_folder_others_can_write_is_refused_with_the_fix(home, tmp_path, target, mode, fix):
    config = home / "config.toml"
    config.write_text("")
    socket_dir = tmp_path / "sockets"
    socket_dir.mkdir()
    path = {"home": home, "config": config, "socket_dir": socket_dir}[target]
    os.chmod(path, mode)
    result = run_cli(home, "daemon", "run", "--http", "127.0.0.1:0", "--socket", str(socket_dir / "d.sock"))
    assert result.returncode == 1, result.stdout + result.stderr
    assert f"{fix} {path}" in result.stderr and "listening" not in result.stdout
    assert stat.S_IMODE(os.stat(path).st_mode) == mode  # refused, not silently narrowed and trusted
    started = run_cli(home, "daemon", "start", "--http", "127.0.0.1:0", "--socket", str(socket_dir / "d.sock"))
    assert started.returncode == 1 and fix in started.stderr


@pytest.mark.skipif(os.geteuid() != 0, reason="giving a folder to another user needs root")
def test_a_home_another_user_owns_is_refused(home):
    os.chown(home, 65534, -1)
    result = run_cli(home, "daemon", "run", "--http", "127.0.0.1:0")
    assert result.returncode == 1 and "belongs to uid 65534" in result.stderr and "COMPOZY_HOME" in result.stderr


def test_everything_in_the_home_is_owner_only(home, tmp_path):
    (home / "reference-agent").mkdir(mode=0o755)  # left by an older version
    os.chmod(home / "reference-agent", 0o755)
    workspace = tmp_path / "ws"
    workspace.mkdir()
    started = run_cli(home, "daemon", "start", "--http", "127.0.0.1:0")
    assert started.returncode == 0, started.stderr
    try:
        api = Client("unix://" + str(home / "daemon.sock"), timeout=60)
        session = api.call("POST", "/api/sessions", {"workspace_path": str(workspace.resolve())})[1]["session"]
        turn_id = api.call("POST", spath(session, "prompt"), {"message": "hello"})[1]["prompt"]["turn_id"]
        wait_for(lambda: events(api, session, turn_id=turn_id, type="done"), what="end of the turn")
        crash = api.call("POST", spath(session, "prompt"), {"message": "[crash 1 once] again"})[1]["prompt"]["turn_id"]
        wait_for(lambda: events(api, session, turn_id=crash, type="done"), what="end of the crashed turn")
        loose = [f"{stat.S_IMODE(os.lstat(os.path.join(folder, name)).st_mode):o} {os.path.join(folder, name)}"
                 for folder, folders, files in os.walk(home) for name in folders + files
                 if os.lstat(os.path.join(folder, name)).st_mode & 0o077]
        assert loose == []
        assert (home / "logs" / "daemon.out").exists() and (home / "reference-agent").is_dir()
    finally:
        assert run_cli(home, "daemon", "stop").returncode == 0


# -- daemon stop and --socket never touch a stranger (finding 8) -----------------------------------------


def test_daemon_stop_never_signals_a_process_that_reused_the_daemons_pid(home):
    stranger = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
    try:
        (home / "daemon.json").write_text(json.dumps({"pid": stranger.pid, "http": None, "socket": str(home / "x"),
                                                      "started_at": "2026-01-01T00:00:00Z"}))
        (home / "daemon.lock").touch()
        result = run_cli(home, "daemon", "stop")
        assert result.returncode != 0 and "nothing was signalled" in result.stderr, result.stderr
        time.sleep(0.5)
        assert stranger.poll() is None, "the stranger was killed"
    finally:
        stranger.kill()
        stranger.wait()


@pytest.fixture
def stale_daemon_file(home):
    """A real, unrelated `sleep` whose pid a daemon.json left by a crash names (issue 21, medium 7)."""
    stranger = subprocess.Popen(["sleep", "120"])
    home.chmod(0o700)
    (home / "daemon.json").write_text(json.dumps({"pid": stranger.pid, "http": None, "socket": str(home / "x"),
                                                  "started_at": "2026-01-01T00:00:00Z"}))
    (home / "daemon.lock").touch()
    yield stranger
    stranger.kill()
    stranger.wait()


def test_daemon_reload_never_signals_a_process_that_reused_the_daemons_pid(home, stale_daemon_file):
    result = run_cli(home, "daemon", "reload")
    assert result.returncode != 0 and "nothing was signalled" in result.stderr, result.stderr
    time.sleep(0.5)  # a SIGHUP would have ended sleep at once
    assert stale_daemon_file.poll() is None, "the stranger was signalled"


def test_daemon_start_over_a_stale_daemon_file_checks_the_lock_holder_and_starts(home, stale_daemon_file):
    started = run_cli(home, "daemon", "start", "--http", "127.0.0.1:0", "-o", "json")
    try:
        assert started.returncode == 0, started.stderr
        info = json.loads(started.stdout)
        assert "already_running" not in info and info["pid"] != stale_daemon_file.pid
        assert run_cli(home, "session", "list").returncode == 0
    finally:
        stopped = run_cli(home, "daemon", "stop")
    assert stopped.returncode == 0, stopped.stderr
    assert stale_daemon_file.poll() is None


def test_a_daemon_never_takes_over_a_live_daemons_socket(daemon, tmp_path):
    other_home = tmp_path / "other-home"
    result = run_cli(other_home, "daemon", "run", "--no-http", "--socket", daemon.info["socket"])
    assert result.returncode == 1 and "a daemon is listening on" in result.stderr, result.stderr
    assert Client(daemon.socket_url).call("GET", "/api/health")[0] == 200  # still its own


@pytest.mark.skipif(os.geteuid() != 0, reason="giving a socket to another user needs root")
def test_the_cli_never_talks_to_a_socket_another_user_owns(daemon, home):
    os.chown(daemon.info["socket"], 65534, -1)
    try:
        result = run_cli(home, "session", "list")
        assert result.returncode == 1 and "belongs to uid 65534" in result.stderr, result.stderr
    finally:
        os.chown(daemon.info["socket"], os.geteuid(), -1)
