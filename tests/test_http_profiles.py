"""HTTP `?profile=NAME` on the main daemon: relayed to the profile's own daemon over its socket, or
`daemon_unavailable` naming the command that starts it. A real main daemon and a real profile daemon."""

import json
import urllib.error
import urllib.request

from tests.harness.cli import run_cli
from tests.test_daemon import terminate_pid


def call(daemon, method, path, body=None, auth=True):
    data = json.dumps(body).encode() if body is not None else None
    headers = {**(daemon.auth_headers if auth else {}), **({"Content-Type": "application/json"} if data else {})}
    req = urllib.request.Request(daemon.http_url + path, data=data, method=method, headers=headers)
    try:
        with urllib.request.urlopen(req, timeout=60) as answer:
            return answer.status, json.loads(answer.read())
    except urllib.error.HTTPError as refused:
        return refused.code, json.loads(refused.read())


def test_profile_requests_are_relayed_to_the_profiles_daemon(daemon, workspace):
    home = daemon.home
    status, body = call(daemon, "GET", "/api/sessions?profile=work")
    assert (status, body["code"]) == (503, "daemon_unavailable")
    assert "compozy --profile work daemon start" in body["error"]
    status, body = call(daemon, "GET", "/api/sessions?profile=..%2Fx")
    assert (status, body["code"]) == (400, "invalid_request")
    pid = None
    try:
        started = run_cli(home, "--profile", "work", "daemon", "start")
        assert started.returncode == 0, started.stdout + started.stderr
        pid = json.loads((home / "profiles" / "work" / "daemon.json").read_text())["pid"]
        # A write through the main daemon lands in the profile's home; the main daemon's own list stays empty.
        status, body = call(daemon, "POST", "/api/sessions?profile=work", {"workspace_path": str(workspace)})
        assert status == 201, body
        sid = body["session"]["id"]
        assert (home / "profiles" / "work" / "sessions" / sid).is_dir()
        assert run_cli(home, "--profile", "work", "session", "list", "-q").stdout.split() == [sid]
        status, body = call(daemon, "GET", "/api/sessions?profile=work&limit=5")
        assert status == 200 and [s["id"] for s in body["sessions"]] == [sid]
        for path in ("/api/sessions?profile=work", "/api/health?profile=work"):  # the main daemon's secret first
            status, body = call(daemon, "GET", path, auth=False)
            assert (status, body["code"]) == (401, "unauthorized"), path
        status, body = call(daemon, "GET", "/api/sessions")
        assert status == 200 and body["sessions"] == []
        # Errors of the profile's daemon come back as they are.
        status, body = call(daemon, "GET", "/api/sessions/sess_nope?profile=work")
        assert status == 404 and body["code"] == "session_not_found"
        for spelt in ("a%20b", "..%2Fx", "%C3%A9t%C3%A9"):  # relayed as sent, not as decoded (a 500, once)
            status, body = call(daemon, "GET", f"/api/workspaces/w/sessions/{spelt}/status?profile=work")
            assert (status, body["code"]) == (404, "session_not_found"), (spelt, body)
            assert "/" not in spelt or "../x" in body["error"], body
        # A stream is relayed as it is written.
        streamed = urllib.request.Request(daemon.http_url + "/api/sessions/stream?profile=work",
                                          headers=daemon.auth_headers)
        with urllib.request.urlopen(streamed, timeout=60) as stream:
            assert stream.headers["Content-Type"].startswith("text/event-stream")
            lines = [stream.readline() for _ in range(2)]
            assert any(sid.encode() in line or line.startswith((b"event:", b"data:", b":")) for line in lines), lines
    finally:
        if pid is not None:
            terminate_pid(pid)


def test_profile_is_accepted_after_every_command_as_the_seed_writes_it(daemon, workspace):
    """`compozy session stop --profile NAME ...`: the flag after the command does what it does before it."""
    from compozy.cli.main import add_profile_option, cli
    from tests.harness.commands import cli_commands
    cli_commands()  # every command registered first
    add_profile_option(cli)
    missing = [name for name, command in cli_commands().items()
               if not any("--profile" in param.opts for param in command.params)]
    assert missing == []
    home, pid = daemon.home, None
    try:
        started = run_cli(home, "daemon", "start", "--profile", "work")
        assert started.returncode == 0, started.stdout + started.stderr
        info = json.loads((home / "profiles" / "work" / "daemon.json").read_text())
        pid = info["pid"]
        assert not info["http"].endswith(":2123")  # a profile's daemon takes a free port, as before the command
        sid = run_cli(home, "session", "new", "--profile", "work", "--cwd", str(workspace), "-q").stdout.strip()
        assert (home / "profiles" / "work" / "sessions" / sid).is_dir()
        assert run_cli(home, "session", "prompt", "--profile", "work", sid, "hello").returncode == 0
        stopped = run_cli(home, "session", "stop", "--profile", "work", sid, "--wait", "-o", "json")
        assert json.loads(stopped.stdout)["state"] == "stopped", stopped.stderr
        assert run_cli(home, "session", "list", "-q").stdout.split() == []  # the main daemon's own list
        assert run_cli(home, "session", "list", "-q", "--profile", "work").stdout.split() == [sid]
        both = run_cli(home, "--profile", "work", "session", "list", "--profile", "other")
        assert both.returncode == 2 and "--profile work and --profile other: give one profile" in both.stderr
    finally:
        if pid is not None:
            terminate_pid(pid)
