"""What the stop and recovery scenarios cannot say: files, modes, secrets, pids and raw event rows.

Each test drives a real daemon (tests/harness/daemon.py) and the reference agent, with short real
durations in config.toml; nothing of the ladder or the timers is mocked.
"""

import json
import os
import shlex
import signal
import sqlite3
import stat
import sys
import threading
import time
import uuid

import pytest

from tests.harness.api import path_of
from compozy.errors import CompozyError
from tests.harness.daemon import DaemonProcess
from tests.harness.runner import agents_of, kill_marked

SECRET = "sk-secret-value-12345"
BUNDLE_SCHEMA = "compozy.session_crash_bundle.v2"
POLL = 0.05


# -- helpers ---------------------------------------------------------------------------------------


@pytest.fixture
def marker(monkeypatch):
    """Marks every daemon and agent of the test; teardown fails the test if one survives."""
    value = f"compozy-test-{uuid.uuid4().hex}"
    monkeypatch.setenv("COMPOZY_TEST_MARK", value)
    yield value
    leaked = kill_marked(value)
    assert leaked == [], f"processes outlived the test: {leaked}"


@pytest.fixture
def started(home, marker):
    """start(config_text) -> DaemonProcess on `home`; every daemon started is stopped at teardown."""
    daemons = []

    def start(config_text=""):
        (home / "config.toml").write_text(config_text)
        daemon = DaemonProcess(home).start()
        daemons.append(daemon)
        return daemon

    yield start
    for daemon in daemons:
        daemon.stop()


def _client(daemon):
    return daemon.client(timeout=120)


def _scoped(session, *rest):
    return path_of("api", "workspaces", session["workspace_id"], "sessions", session["id"], *rest)


def _create(client, workspace):
    _, document = client.call("POST", "/api/sessions", {"workspace_path": str(workspace)})
    return document["session"]


def _get(client, session_id):
    _, document = client.call("GET", path_of("api", "sessions", session_id))
    return document["session"]


def _prompt(client, session, message):
    _, document = client.call("POST", _scoped(session, "prompt"), {"message": message})
    return document["prompt"]["turn_id"]


def _events(home, session_id):
    """Every row of the session's events.db, exactly as stored, in sequence order."""
    path = home / "sessions" / session_id / "events.db"
    connection = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=5)
    try:
        columns = [row[1] for row in connection.execute("PRAGMA table_info(events)")]
        rows = connection.execute("SELECT * FROM events ORDER BY sequence").fetchall()
    finally:
        connection.close()
    return columns, rows


def _records(home, session_id):
    columns, rows = _events(home, session_id)
    records = [dict(zip(columns, row)) for row in rows]
    for record in records:
        record["content"] = json.loads(record["content"])
    return records


def _wait_for(predicate, within, what):
    deadline = time.monotonic() + within
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() >= deadline:
            raise AssertionError(f"timed out after {within}s waiting for {what}")
        time.sleep(POLL)


def _wait_event(home, session_id, kind, within=15.0, where=lambda record: True, count=1):
    def found():
        matching = [r for r in _records(home, session_id) if r["type"] == kind and where(r)]
        return matching if len(matching) >= count else None
    return _wait_for(found, within, f"{count} {kind} event(s) in {session_id}")


def _stat_fields(pid):
    """(state, start_time) from /proc/<pid>/stat, or None when the pid is gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            data = handle.read()
    except OSError:
        return None
    rest = data[data.rindex(b")") + 2:].split()
    return rest[0].decode(), int(rest[19])


def _same_process_alive(pid, start_time):
    """True only for the same incarnation (pid plus start time) and not a zombie."""
    fields = _stat_fields(pid)
    return fields is not None and fields[1] == start_time and fields[0] not in ("Z", "X", "x")


def _crash_config(command_prefix=""):
    """A provider whose launch wrapper writes the secret to stderr, then becomes the reference agent."""
    agent = f"exec {shlex.quote(sys.executable)} -m compozy.agents.reference"
    script = f'echo "startup credential $MY_API_KEY" >&2; echo "MY_API_KEY=$MY_API_KEY" >&2; {command_prefix}{agent}'
    return (
        "[providers.leaky]\n"
        f"command = {json.dumps(['sh', '-c', script])}\n"
        f'env = {{ MY_API_KEY = "{SECRET}", HARMLESS = "visible-value" }}\n'
        "\n[agents.general]\nprovider = \"leaky\"\n"
    )


def _read(path):
    with open(path, encoding="utf-8", errors="replace") as handle:
        return handle.read()


def _all_text_under(root):
    """(path, text) for every regular file under root (binary files decoded leniently)."""
    for folder, _, files in os.walk(root):
        for name in files:
            path = os.path.join(folder, name)
            try:
                with open(path, "rb") as handle:
                    yield path, handle.read().decode("utf-8", "replace")
            except OSError:
                continue


# -- crash bundles -------------------------------------------------------------------------------------


def _exhaust(home, workspace, daemon, message):
    client = _client(daemon)
    session = _create(client, workspace)
    turn_id = _prompt(client, session, message)
    _wait_event(home, session["id"], "session_stopped", within=30)
    return client, session, turn_id


def test_exhausted_recovery_writes_a_private_redacted_crash_bundle(home, workspace, started):
    assert SECRET not in os.environ.values()  # the secret lives only in the provider's env
    daemon = started(_crash_config())
    client, session, turn_id = _exhaust(home, workspace, daemon, "[crash 1] boom")

    resource = _get(client, session["id"])
    assert resource["state"] == "stopped"
    assert resource["stop_reason"] == "agent_crashed"
    failure = resource["failure"]
    assert failure["kind"] == "process_exit"
    bundle_path = failure["crash_bundle_path"]

    bundles_dir = home / "logs" / "crash-bundles"
    bundles = sorted(bundles_dir.iterdir())
    assert [str(p) for p in bundles] == [bundle_path], "exactly one bundle, the one the failure names"
    assert stat.S_IMODE(os.stat(bundle_path).st_mode) == 0o600
    assert stat.S_IMODE(os.stat(bundles_dir).st_mode) & 0o077 == 0, "the bundle folder is owner-only"

    text = _read(bundle_path)
    bundle = json.loads(text)
    assert bundle["schema"] == BUNDLE_SCHEMA
    assert bundle["session"]["id"] == session["id"]
    assert bundle["session"]["workspace_id"] == session["workspace_id"]
    assert bundle["provider"]["name"] == "leaky"
    assert bundle["failure_kind"] == "process_exit"
    process = bundle["process"]
    assert process["pid"] > 0 and process["start_time"] > 0
    assert process["signal"] == signal.SIGKILL, process  # [crash] SIGKILLs itself
    assert process["exit_code"] is None, process
    assert "crashing on purpose" in bundle["stderr"], "the captured stderr tail is kept"
    assert bundle["provider"]["env"]["MY_API_KEY"] != SECRET
    assert bundle["provider"]["env"]["HARMLESS"] == "visible-value"

    assert SECRET not in json.dumps(resource)
    _, events = client.call("GET", _scoped(session, "events"))
    assert SECRET not in json.dumps(events)
    log_text = (home / "logs" / "compozy.log").read_text(errors="replace")
    assert SECRET not in log_text, "the provider's API key leaked into logs/compozy.log"
    assert SECRET not in text, "the provider's API key leaked into the crash bundle"


def test_no_secret_anywhere_in_the_home_after_a_crash(home, workspace, started):
    daemon = started(_crash_config())
    _exhaust(home, workspace, daemon, "[crash 1] boom")
    daemon.stop()
    leaks = []
    for path, text in _all_text_under(home):
        if "reference-agent" in path or os.path.basename(path) == "config.toml":
            continue  # the user's own config and the agent's own state are not the daemon's writing
        if SECRET in text:
            leaks.append(os.path.relpath(path, home))
    assert leaks == [], f"the provider's API key is written to {leaks}"


def test_crash_bundle_is_bounded(home, workspace, started):
    daemon = started(_crash_config())
    client, session, _ = _exhaust(home, workspace, daemon, "[stderr 96] [crash 1] noisy")
    bundle_path = _get(client, session["id"])["failure"]["crash_bundle_path"]
    bundle = json.loads(_read(bundle_path))
    assert 60 * 1024 <= len(bundle["stderr"]) <= 65 * 1024, len(bundle["stderr"])  # the last 64 KiB of 96
    assert os.path.getsize(bundle_path) < 96 * 1024
    assert "crashing on purpose" in bundle["stderr"], "the newest stderr is the part kept"


def test_agent_lost_outside_a_turn_records_failure_and_bundle(home, workspace, started):
    daemon = started()
    client = _client(daemon)
    session = _create(client, workspace)
    turn_id = _prompt(client, session, "idle afterwards")
    _wait_event(home, session["id"], "done", where=lambda r: r["turn_id"] == turn_id)
    process = _get(client, session["id"])["runtime"]["process"]
    os.killpg(os.getpgid(process["pid"]), signal.SIGKILL)

    def failed():
        resource = _get(client, session["id"])
        return resource if resource.get("failure") else None
    resource = _wait_for(failed, 10, "the failure of an idle agent's exit")
    assert resource["state"] == "active"
    assert resource["runtime"]["status"] == "unbound"
    assert resource["failure"]["kind"] == "process_exit"
    bundle_path = resource["failure"]["crash_bundle_path"]
    assert stat.S_IMODE(os.stat(bundle_path).st_mode) == 0o600
    assert json.loads(_read(bundle_path))["process"]["signal"] == signal.SIGKILL

    # The session is kept: the next prompt binds a new agent (session/load) and clears the failure.
    turn_id = _prompt(client, session, "[recall] back")
    done = _wait_event(home, session["id"], "done", where=lambda r: r["turn_id"] == turn_id)
    assert done[0]["content"]["stop_reason"] == "end_turn"
    answer = [r for r in _records(home, session["id"]) if r["turn_id"] == turn_id and r["type"] == "agent_message"]
    assert answer[-1]["content"]["text"] == "history: idle afterwards"
    assert "failure" not in _get(client, session["id"])


def test_a_refused_start_never_echoes_the_secret(home, workspace, started):
    script = 'echo "startup credential $MY_API_KEY" >&2; exit 3'
    daemon = started("[providers.leaky]\n"
                     f"command = {json.dumps(['sh', '-c', script])}\n"
                     f'env = {{ MY_API_KEY = "{SECRET}" }}\n'
                     '\n[agents.general]\nprovider = "leaky"\n')
    client = _client(daemon)
    session = _create(client, workspace)
    with pytest.raises(CompozyError) as refused:
        client.call("POST", _scoped(session, "prompt"), {"message": "hello"})
    assert refused.value.code == "provider_unavailable"
    assert SECRET not in str(refused.value), "the refusal echoes the provider's API key"
    assert SECRET not in json.dumps(getattr(refused.value, "body", None) or {})
    _, events = client.call("GET", _scoped(session, "events"))
    assert SECRET not in json.dumps(events), "the provider_failure marker holds the provider's API key"
    assert SECRET not in json.dumps(_get(client, session["id"]))
    assert SECRET not in (home / "logs" / "compozy.log").read_text(errors="replace")


# -- the stubborn agent: nothing survives a verified stop ------------------------------------------------


def test_stubborn_stop_leaves_no_grandchild_alive(home, workspace, started):
    daemon = started('[session.stop]\ncooperative_grace = "1s"\n')
    client = _client(daemon)
    session = _create(client, workspace)
    turn_id = _prompt(client, session, "[ignore-term] [grandchild] [grandchild setsid] [hang] stubborn")
    _wait_event(home, session["id"], "agent_message", count=2,
                where=lambda r: r["turn_id"] == turn_id and "spawned" in r["content"].get("text", ""))

    pid_file = workspace / ".compozy-pids" / "grandchildren"
    pids = [int(line) for line in pid_file.read_text().split()]
    assert len(pids) == 2
    agent = _get(client, session["id"])["runtime"]["process"]
    watched = {pid: _stat_fields(pid)[1] for pid in [*pids, agent["pid"]]}
    assert all(_same_process_alive(pid, start) for pid, start in watched.items())
    setsid_child = pids[1]
    assert os.getsid(setsid_child) != os.getsid(agent["pid"]), "[grandchild setsid] left the agent's session"

    started_at = time.monotonic()
    status, outcome = client.call("POST", _scoped(session, "stop"), {"wait": True})
    elapsed = time.monotonic() - started_at
    assert status == 200
    assert outcome["state"] == "stopped" and outcome["verified"] is True, outcome
    assert outcome["escalated"] is True and outcome["phase"] == "kill", outcome
    assert elapsed >= 1.0, "the cooperative grace ran before any signal"

    survivors = [pid for pid, start in watched.items() if _same_process_alive(pid, start)]
    assert survivors == [], f"alive after a verified stop: {survivors}"
    resource = _get(client, session["id"])
    assert resource["state"] == "stopped" and resource["escalated"] is True and resource["verified"] is True


# -- starting -> stopping: a stop while a stopped session is being restored --------------------------------
# A scenario cannot say this: prompt admission answers only after the bind, so the stop has to be sent
# from another thread while the prompt request is still waiting.


def _slow_provider(seconds):
    """A provider `slow` whose agent starts only after `seconds`."""
    slow = ["sh", "-c", f"sleep {seconds}; exec {shlex.quote(sys.executable)} -m compozy.agents.reference"]
    return f"[providers.slow]\ncommand = {json.dumps(slow)}\n"


def _after_one_turn(home, workspace, daemon):
    client = _client(daemon)
    session = _create(client, workspace)
    first = _prompt(client, session, "one")
    _wait_event(home, session["id"], "done", where=lambda r: r["turn_id"] == first)
    return client, session


def test_stop_while_restoring_waits_for_the_bind_then_stops(home, workspace, started):
    daemon = started(_slow_provider(2) + "\n[agents.general]\nprovider = \"slow\"\n")
    client, session = _after_one_turn(home, workspace, daemon)
    _, outcome = client.call("POST", _scoped(session, "stop"), {"wait": True})
    assert outcome["state"] == "stopped" and outcome["verified"] is True

    answers = []
    restore = threading.Thread(target=lambda: answers.append(_attempt(client, session, "two")))
    restore.start()
    try:
        _wait_for(lambda: _get(client, session["id"])["state"] == "starting", 5, "the restore to begin")
        status, accepted = client.call("POST", _scoped(session, "stop"), {"wait": False})
        assert status == 202 and accepted["status"] == "stopping"
        assert _get(client, session["id"])["state"] == "stopping"  # starting -> stopping
        _wait_for(lambda: _get(client, session["id"])["state"] == "stopped", 20, "the stop to settle")
    finally:
        restore.join(30)
    resource = _get(client, session["id"])
    assert resource["stop_reason"] == "user_canceled" and resource["verified"] is True
    assert resource["runtime"]["status"] == "unbound" and "process" not in resource["runtime"]
    turns = [r for r in _records(home, session["id"]) if r["type"] in ("done", "error", "session_stopped")]
    assert [(r["type"], r["content"].get("stop_reason")) for r in turns] == [
        ("done", "end_turn"), ("session_stopped", "user_canceled"),
        ("done", "cancelled"), ("session_stopped", "user_canceled")], turns
    assert answers and answers[0][0] in ("started", "session_stop_in_progress"), answers


def test_stop_during_a_provider_replacement_refuses_the_late_bind(home, workspace, started):
    """The ladder stops the serving agent while its replacement is still starting: when that
    replacement comes up, it is refused and stopped, never bound to a stopped session."""
    daemon = started('[session.stop]\ncooperative_grace = "500ms"\n\n' + _slow_provider(3))
    client, session = _after_one_turn(home, workspace, daemon)

    answers = []
    replace = threading.Thread(target=lambda: answers.append(_attempt(client, session, "two", provider="slow")))
    replace.start()
    try:
        _wait_for(lambda: _get(client, session["id"])["runtime"]["status"] == "reconfiguring", 5,
                  "the replacement to start")
        status, outcome = client.call("POST", _scoped(session, "stop"), {"wait": True})
    finally:
        replace.join(30)
    assert status == 200 and outcome["state"] == "stopped" and outcome["verified"] is True, outcome
    assert answers == [("session_stop_in_progress", None)]
    resource = _get(client, session["id"])
    assert resource["runtime"]["status"] == "unbound" and "process" not in resource["runtime"]
    assert resource["runtime"]["last_known"]["provider"] == "reference"
    ends = [(r["type"], r["content"].get("stop_reason")) for r in _records(home, session["id"])
            if r["type"] in ("user_message", "done", "error", "session_stopped")]
    assert ends == [("user_message", None), ("done", "end_turn"), ("session_stopped", "user_canceled")]


def test_stop_during_a_slow_first_bind_stops_the_agent_being_bound_at_once(home, workspace, started):
    """An agent held in `initialize` (its gate never opens; a 30 s handshake) has no turn to cancel: once the
    cooperative grace (1 s) has let the bind try to finish, the ladder stops it, so the stop answers long
    before the handshake could end, verified, the waiting prompt is refused `session_stop_in_progress`, and
    no agent of the session is left (it used to answer after the grace and 5 s more, the agent alive)."""
    reference = json.dumps([sys.executable, "-m", "compozy.agents.reference"])
    daemon = started(f'[session.stop]\ncooperative_grace = "1s"\n\n[providers.held]\ncommand = {reference}\n'
                     f'env = {{COMPOZY_REFERENCE_GATES = "initialize=never"}}\nhandshake_timeout = "30s"\n\n'
                     f'[agents.general]\nprovider = "held"\n')
    client = _client(daemon)
    session = _create(client, workspace)
    answers = []
    first = threading.Thread(target=lambda: answers.append(_attempt(client, session, "one")))
    first.start()
    try:
        _wait_for(lambda: agents_of(session["id"]) and _get(client, session["id"])["runtime"]["status"] == "binding",
                  10, "the agent held in initialize")
        started_at = time.monotonic()
        _, outcome = client.call("POST", _scoped(session, "stop"), {"wait": True})
        took = time.monotonic() - started_at
    finally:
        first.join(30)
    assert outcome["state"] == "stopped" and outcome["verified"] is True, outcome
    assert took < 4.0, f"the stop took {took:.1f}s"
    assert answers == [("session_stop_in_progress", None)]
    assert agents_of(session["id"]) == []
    resource = _get(client, session["id"])
    assert resource["runtime"]["status"] == "unbound" and resource["state"] == "stopped"
    kinds = [r["type"] for r in _records(home, session["id"])]
    assert "transcript_marker.created" not in kinds, kinds  # the stopped agent is no refused route


def _attempt(client, session, message, provider=None):
    try:
        body = {"message": message, **({"runtime": {"provider": provider}} if provider else {})}
        _, document = client.call("POST", _scoped(session, "prompt"), body)
        return document["prompt"]["disposition"], document["prompt"]["turn_id"]
    except CompozyError as exc:
        return exc.code, None


# -- daemon SIGKILL: earlier events byte-identical, repair only appends -------------------------------------


def test_daemon_kill_keeps_earlier_events_byte_identical(home, workspace, started):
    daemon = started()
    client = _client(daemon)
    session = _create(client, workspace)
    first = _prompt(client, session, "[chunks 2] first")
    _wait_event(home, session["id"], "done", where=lambda r: r["turn_id"] == first)
    second = _prompt(client, session, "[tool-open t1] [hold g1] interrupted")
    _wait_event(home, session["id"], "agent_message",
                where=lambda r: r["turn_id"] == second and r["content"].get("text") == "holding g1 ")
    agent = _get(client, session["id"])["runtime"]["process"]
    agent_start = _stat_fields(agent["pid"])[1]

    daemon.kill()
    columns, before = _events(home, session["id"])
    assert before, "events were committed before the crash"
    assert _same_process_alive(agent["pid"], agent_start), "the agent outlives a SIGKILLed daemon"
    try:
        daemon.start()
        _, after = _events(home, session["id"])
        assert after[:len(before)] == before, "events that existed before the crash changed"
        appended = [dict(zip(columns, row)) for row in after[len(before):]]
        sequences = [dict(zip(columns, row))["sequence"] for row in after]
        assert sequences == list(range(1, len(after) + 1)), "sequences stay dense and in order"
        assert [row["type"] for row in appended] == ["tool_result", "checkpoint", "error"], appended
        assert all(row["turn_id"] == second for row in appended)
        # the repair takes the turn's end checkpoint before it ends the turn
        tool_result, checkpoint, error = (json.loads(row["content"]) for row in appended)
        assert checkpoint["repaired"] is True
        assert tool_result["interrupted"] is True
        assert error["repaired"] is True

        resource = _get(_client(daemon), session["id"])
        assert resource["state"] == "stopped"
        assert resource["stop_reason"] == "agent_crashed"
        assert resource["stop_detail"] == "daemon crashed while session active"
        assert resource["failure"]["kind"] == "process_exit"
        assert not _same_process_alive(agent["pid"], agent_start), "boot stopped the orphaned agent"

        # An explicit repair now finds nothing and writes nothing.
        _, document = _client(daemon).call("POST", _scoped(session, "repair"), {"dry_run": False})
        assert document["repair"]["issues"] == ["no_repairable_turn"]
        assert _events(home, session["id"])[1] == after

        # A second restart (graceful this time) appends nothing more.
        daemon.restart()
        assert _events(home, session["id"])[1] == after
    finally:
        (workspace / ".compozy-gates").mkdir(exist_ok=True)
        (workspace / ".compozy-gates" / "g1").write_text("open\n")


def test_repair_of_a_live_session_is_refused(home, workspace, started):
    daemon = started()
    client = _client(daemon)
    session = _create(client, workspace)
    with pytest.raises(CompozyError) as refused:
        client.call("POST", _scoped(session, "repair"), {"dry_run": True})
    assert refused.value.code == "session_not_stopped"
