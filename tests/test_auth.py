"""A daemon only its owner can drive (issue 21, high 1): every TCP request carries the daemon's secret or
the page's cookie, `GET /api/health` stays open, the page logs in through a URL whose token leaves the
address bar, a one-time login token works once, the socket refuses a peer of another uid, and the
opt-out `daemon.auth = "none"` is logged at every start and refused beyond loopback.
"""

import http.client
import json
import os
import re
import socket
import stat
import tempfile
from pathlib import Path

import pytest

from compozy import __version__
from compozy.http.openapi import openapi
from tests.harness.api import spath
from tests.harness.cli import cli_json, run_cli
from tests.harness.daemon import DaemonProcess

NOBODY = 65534
SESSION_ID = "sess_01ARZ3NDEKTSV4RRFFQ69G5FAV"
PARAMETERS = {"workspace": "ws_01ARZ3NDEKTSV4RRFFQ69G5FAV", "session_id": SESSION_ID, "entry": "queue_x",
              "agent_name": "general", "setting": "session.supervision.idle_release_after", "turn_id": "turn_x",
              "checkpoint_id": "ckpt_x",
              "item_id": "attn_01ARZ3NDEKTSV4RRFFQ69G5FAV"}
ROUTES = sorted((method.upper(), path) for path, item in openapi(__version__)["paths"].items()
                for method in item if path != "/api/health")


def send(daemon, method, path, headers=None, body=None):
    """(status, headers, body) of one raw TCP request that carries exactly the given headers."""
    port = int(daemon.http_url.rsplit(":", 1)[1])
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        connection.request(method, path, body=body, headers=headers or {})
        response = connection.getresponse()
        return response.status, {k.lower(): v for k, v in response.getheaders()}, response.read()
    finally:
        connection.close()


def code_of(body):
    return json.loads(body)["code"]


@pytest.mark.parametrize("method, path", ROUTES, ids=[f"{m} {p}" for m, p in ROUTES])
def test_every_route_without_the_secret_is_unauthorized_over_tcp(served, method, path):
    target = re.sub(r"\{(\w+)\}", lambda m: PARAMETERS[m.group(1)], path)
    body = b"{}" if method in ("POST", "PUT", "PATCH") else None
    json_type = {"Content-Type": "application/json"} if body else {}
    for headers in ({}, {"Authorization": "Bearer not-the-secret"}, {"Authorization": served.token},
                    {"Cookie": f"compozy-{served.http_url.rsplit(':', 1)[1]}={served.token}"}):
        status, _, answer = send(served, method, target, {**headers, **json_type}, body)
        assert (status, code_of(answer)) == (401, "unauthorized"), (headers, answer)
    status, _, answer = send(served, method, target + "?token=" + served.token, json_type, body)
    assert status == 401, "the query token logs in a page, never an API call"


def test_pages_assets_and_unknown_paths_are_unauthorized_too_and_health_stays_open(served):
    for path in ("/", f"/sessions/{SESSION_ID}", "/settings", "/assets/app.js", "/api/nothing-here", "/mcp"):
        status, headers, body = send(served, "GET", path)
        assert status == 401, path
        if path in ("/", f"/sessions/{SESSION_ID}", "/settings"):  # a person reads this one: it says how to log in
            assert headers["content-type"].startswith("text/html") and b"compozy open" in body
    status, _, body = send(served, "GET", "/api/health")
    assert status == 200 and json.loads(body) == {"status": "ok", "version": __version__}
    assert send(served, "GET", "/api/health", {"Host": "evil.example"})[0] == 403  # still behind the Host check


def test_the_secret_is_a_private_file_stable_across_restarts_and_the_cli_needs_nothing(daemon, workspace):
    token_file = daemon.home / "auth_token"
    first = token_file.read_text().strip()
    assert stat.S_IMODE(token_file.stat().st_mode) == 0o600 and len(first) >= 40
    daemon.restart()
    assert token_file.read_text().strip() == first
    created = cli_json(daemon.home, "--url", daemon.http_url, "session", "new", "--cwd", str(workspace))
    assert cli_json(daemon.home, "--url", daemon.http_url, "session", "get", created["session"]["id"])
    refused = run_cli(daemon.home, "--url", daemon.http_url, "session", "list", extra_env={"COMPOZY_TOKEN": "wrong"})
    assert refused.returncode == 1 and refused.stderr.startswith("Error: unauthorized: ")


def test_the_page_logs_in_with_the_secret_and_the_redirect_strips_it(served):
    port = served.http_url.rsplit(":", 1)[1]
    status, headers, _ = send(served, "GET", f"/sessions/{SESSION_ID}?view=x&token={served.token}")
    assert status in (302, 303) and headers["location"].endswith(f"/sessions/{SESSION_ID}?view=x")
    assert served.token not in headers["location"] and headers["referrer-policy"] == "no-referrer"
    cookie = headers["set-cookie"]
    name_value = cookie.split(";", 1)[0]
    assert name_value.startswith(f"compozy-{port}=") and served.token not in cookie
    assert {"HttpOnly", "SameSite=Strict", "Path=/"} <= {part.strip() for part in cookie.split(";")}
    for path in ("/", "/assets/app.js", "/api/sessions"):
        assert send(served, "GET", path, {"Cookie": name_value})[0] == 200, path
    status, headers, body = send(served, "GET", "/?token=wrong")
    assert status == 401 and "set-cookie" not in headers and b"compozy open" in body


def test_a_one_time_login_token_works_once(daemon, workspace, tmp_path):
    session = cli_json(daemon.home, "session", "new", "--cwd", str(workspace))["session"]
    printed = run_cli(daemon.home, "open", session["id"][5:13], extra_env={"DISPLAY": "", "BROWSER": ""})
    assert printed.returncode == 0 and printed.stderr == "", printed.stderr
    url = printed.stdout.strip()
    assert url.startswith(f"{daemon.http_url}/sessions/{session['id']}?token=") and daemon.token not in url
    path = url[len(daemon.http_url):]
    status, headers, _ = send(daemon, "GET", path)
    assert status == 303 and headers["location"] == f"/sessions/{session['id']}" and "set-cookie" in headers
    status, headers, _ = send(daemon, "GET", path)
    assert status == 401 and "set-cookie" not in headers  # used once already

    opener = tmp_path / "browser"  # $BROWSER: what `compozy open` hands the URL to where a browser runs
    opener.write_text(f"#!/bin/sh\necho \"$1\" > {tmp_path / 'opened'}\n")
    opener.chmod(0o755)
    opened = run_cli(daemon.home, "open", extra_env={"BROWSER": str(opener)})
    assert opened.returncode == 0 and "opened in your browser" in opened.stderr
    assert (tmp_path / "opened").read_text().strip() == opened.stdout.strip()
    listed = json.loads(run_cli(daemon.home, "open", "-o", "json").stdout)["login"]
    assert listed["url"].startswith(daemon.http_url + "/?token=") and listed["expires_at"].endswith("Z")


def test_login_tokens_are_minted_only_for_the_owner_and_check_their_session(daemon):
    status, _, body = send(daemon, "POST", "/api/login", {"Content-Type": "application/json"}, b"{}")
    assert (status, code_of(body)) == (401, "unauthorized")
    api = daemon.client()
    for body, code in (({"session_id": "../etc"}, "invalid_request"), ({"session_id": SESSION_ID}, "session_not_found"),
                       ({"other": 1}, "invalid_request")):
        with pytest.raises(Exception) as refused:
            api.call("POST", "/api/login", body)
        assert refused.value.code == code, body
    assert api.call("POST", "/api/login", {})[0] == 201


def test_daemon_start_prints_a_login_url_that_opens_the_page(home):
    started = run_cli(home, "daemon", "start", "--http", "127.0.0.1:0")
    try:
        assert started.returncode == 0, started.stderr
        info = json.loads((home / "daemon.json").read_text())
        url = re.search(r"(http://\S+\?token=\S+)", started.stdout).group(1)
        assert url.startswith(info["http"] + "/?token=")
        daemon = DaemonProcess(home)
        daemon.info = info
        status, headers, _ = send(daemon, "GET", url[len(info["http"]):])
        assert status == 303 and "set-cookie" in headers
    finally:
        run_cli(home, "daemon", "stop")


def test_the_daemons_secret_never_reaches_its_agents(daemon, workspace):
    api = daemon.client()
    session = api.call("POST", "/api/sessions", {"workspace_path": str(workspace)})[1]["session"]
    api.call("POST", spath(session, "prompt"), {"message": "hello"})
    pid = api.call("GET", spath(session, "inspect"))[1]["process"]["pid"]
    with open(f"/proc/{pid}/environ", "rb") as handle:
        assert daemon.token.encode() not in handle.read()
    assert api.call("POST", spath(session, "stop"), {"wait": True})[0] == 200


def _as_nobody(probe):
    """Run probe() in a forked child that has dropped to uid/gid 65534; its JSON-able result."""
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: no pytest, no threads of ours; only the probe, then _exit
        try:
            os.close(read_end)
            os.setgroups([])
            os.setgid(NOBODY)
            os.setuid(NOBODY)
            result = probe()
        except BaseException as exc:  # noqa: BLE001 (reported to the parent)
            result = {"error": repr(exc)}
        os.write(write_end, json.dumps(result).encode())
        os._exit(0)
    os.close(write_end)
    with os.fdopen(read_end, "rb") as reader:
        data = reader.read()
    os.waitpid(pid, 0)
    return json.loads(data)


@pytest.mark.skipif(os.geteuid() != 0, reason="dropping to another uid needs root")
def test_another_user_is_refused_on_the_socket_and_unauthorized_over_tcp(home):
    folder = Path(tempfile.mkdtemp(prefix="compozy-peer-"))  # outside the 0700 tmp folders, reachable by nobody
    folder.chmod(0o711)
    socket_path = folder / "daemon.sock"
    daemon = DaemonProcess(home, args=["--socket", str(socket_path)]).start()
    try:
        socket_path.chmod(0o666)  # as root could, or a careless chmod: only the peer check is left
        port = int(daemon.http_url.rsplit(":", 1)[1])

        def probe():
            unix = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            unix.settimeout(10)
            unix.connect(str(socket_path))
            answer = b""
            while chunk := unix.recv(65536):
                answer += chunk
            tcp = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
            tcp.request("GET", "/api/sessions")
            over_tcp = tcp.getresponse()
            try:
                open(home / "auth_token").read()
                secret = "read"
            except PermissionError:
                secret = "denied"
            return {"uid": os.getuid(), "socket": answer.decode(), "tcp": [over_tcp.status, over_tcp.read().decode()],
                    "secret": secret}

        seen = _as_nobody(probe)
        assert seen.get("uid") == NOBODY, seen
        assert seen["socket"].startswith("HTTP/1.1 401") and '"code": "unauthorized"' in seen["socket"], seen
        assert seen["tcp"][0] == 401 and json.loads(seen["tcp"][1])["code"] == "unauthorized"
        assert seen["secret"] == "denied"
        assert daemon.client().call("GET", "/api/sessions")[0] == 200  # the owner still gets in
        log = (home / "logs" / "compozy.log").read_text()
        assert "refused a connection on the socket from pid" in log and f"uid {NOBODY}" in log
    finally:
        daemon.stop()
        socket_path.unlink(missing_ok=True)
        folder.rmdir()


def test_auth_none_is_logged_at_every_start_and_refused_beyond_loopback(home):
    (home / "config.toml").write_text('[daemon]\nauth = "none"\n')
    daemon = DaemonProcess(home).start()
    try:
        assert send(daemon, "GET", "/api/sessions")[0] == 200  # no secret asked
        assert daemon.client().call("POST", "/api/login", {})[1]["login"]["url"] == daemon.http_url + "/"
        daemon.restart()
        assert send(daemon, "GET", "/api/sessions")[0] == 200
    finally:
        daemon.stop()
    log = (home / "logs" / "compozy.log").read_text()
    assert log.count('daemon.auth = "none": TCP requests are not authenticated') == 2
    remote = DaemonProcess(home, http="127.0.0.2:0", args=["--allow-remote"], env={"COMPOZY_TOKEN": "t" * 24})
    with pytest.raises(RuntimeError) as refused:
        remote.start()
    assert 'daemon.auth = "none" is allowed only on a loopback address' in str(refused.value)
