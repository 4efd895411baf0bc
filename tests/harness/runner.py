"""Runs one scenario on one surface: steps, saves, awaits, signals, restarts, the events trace."""

import json
import os
import signal
import sqlite3
import sys
import time
import uuid
from pathlib import Path

from tests.harness.daemon import DaemonProcess
from tests.harness.fleet import ScenarioFleet
from tests.harness.ops import OPS
from tests.harness.scenario import ScenarioError, duration, interpolate, lookup, mismatch, nest, to_toml
from tests.harness.surfaces import CliSurface, HttpSurface, InProcess

POLL_INTERVAL = 0.05
DEFAULT_WITHIN = 15.0
SIGNALS = {"KILL": signal.SIGKILL, "TERM": signal.SIGTERM, "STOP": signal.SIGSTOP, "CONT": signal.SIGCONT,
           "INT": signal.SIGINT}


class Run:
    def __init__(self, scenario, surface_name, tmp_path, postgres=None):
        """postgres: the PostgreSQL server a scenario with `fleet:` joins (tests/harness/fleet.py)."""
        self.scenario, self.surface_name, self.postgres = scenario, surface_name, postgres
        self.tmp = Path(tmp_path)
        self.home = self.tmp / "home"
        self.variables = {"tmp": {"workspace": str(self._dir("workspace")), "other": str(self._dir("other")),
                                  "root": str(self.tmp)},
                          "python": sys.executable, "home": str(self.home), "surface": surface_name}
        self.marker = f"compozy-test-{uuid.uuid4().hex}"
        self.surface = self.fleet = None

    def _dir(self, name):
        path = self.tmp / name
        path.mkdir(parents=True, exist_ok=True)
        return path.resolve()

    # -- lifecycle ---------------------------------------------------------------------

    def execute(self):
        self.home.mkdir(parents=True, exist_ok=True)
        config = nest(interpolate(self.scenario.data.get("config") or {}, self.variables))
        if self.scenario.data.get("fleet") is not None:
            if self.postgres is None:
                raise ScenarioError(f"{self.scenario.path}: a fleet scenario needs the postgres fixture")
            self.fleet = ScenarioFleet(self.scenario.data["fleet"], self.postgres, self.tmp)
            config["fleet"] = self.fleet.table()
        (self.home / "config.toml").write_text(to_toml(config))
        os.environ["COMPOZY_TEST_MARK"] = self.marker  # inherited by daemons and agents: leak detection
        try:
            if self.fleet is not None:
                self.variables["peers"] = self.fleet.start_peers(to_toml)
            self.surface = self._make_surface()
            try:
                self._steps(self.scenario.steps)
                self._check_events()
            finally:
                self._finally()
        finally:
            if self.surface:
                self.surface.close()
            if self.fleet is not None:
                self.fleet.close()
            leaked = kill_marked(self.marker)
            os.environ.pop("COMPOZY_TEST_MARK", None)
        if leaked:
            raise ScenarioError(f"{self.scenario.path}: processes outlived the daemon: {leaked}")

    def _make_surface(self):
        if self.surface_name == "inproc":
            return InProcess(self.home).start()
        daemon = DaemonProcess(self.home).start()
        return HttpSurface(daemon) if self.surface_name == "http" else CliSurface(daemon)

    def _finally(self):
        for step in self.scenario.data.get("finally") or []:
            try:
                self._step(step, check=False)
            except Exception:  # noqa: BLE001 (finally steps never mask the real failure)
                pass

    # -- steps -------------------------------------------------------------------------

    def _steps(self, steps):
        for step in steps:
            self._step(step)

    def _step(self, step, check=True):
        if self.surface_name not in step.get("surfaces", (self.surface_name,)):
            return  # a step limited to some surfaces; its note says why
        where = f"{self.scenario.path}:{step.get('__line__', '?')}"
        kind = next((k for k in ("do", "await", "gate", "signal", "restart", "sleep") if k in step), None)
        try:
            getattr(self, f"_{kind}")(step, check)
        except ScenarioError as exc:
            raise ScenarioError(f"{where} [{self.surface_name}] {exc}") from None
        except KeyError as exc:
            raise ScenarioError(f"{where} [{self.surface_name}] unknown variable {exc}") from None

    def _do(self, step, check):
        op = step["do"]
        if op not in OPS:
            raise ScenarioError(f"unknown op {op!r}")
        args = interpolate(step.get("with") or {}, self.variables)
        outcome = self.surface.call(op, args)
        if check:
            self._expect(op, interpolate(step.get("expect") or {}, self.variables), outcome)
        for name, dotted in (step.get("save") or {}).items():
            if name == "__line__":
                continue
            self.variables[name] = lookup({"result": outcome.result, "document": outcome.document}, dotted)

    def _expect(self, op, expect, outcome):
        expected_error = expect.get("error")
        if outcome.error and outcome.error != expected_error:
            raise ScenarioError(f"{op}: unexpected error {outcome.error}: {outcome.message}"
                                + (f" (expected {expected_error})" if expected_error else ""))
        if expected_error and not outcome.error:
            raise ScenarioError(f"{op}: expected error {expected_error}, got success {json.dumps(outcome.result)[:300]}")
        if "http_status" in expect and outcome.http_status is not None and outcome.http_status != expect["http_status"]:
            raise ScenarioError(f"{op}: expected HTTP {expect['http_status']}, got {outcome.http_status}")
        if self.surface_name == "cli":
            self._expect_cli(op, expect, outcome)
        if "result" in expect and not expected_error:
            problem = mismatch(expect["result"], outcome.result)
            if problem:
                raise ScenarioError(f"{op}: {problem}")
        if "message_contains" in expect and expect["message_contains"] not in (outcome.message or ""):
            raise ScenarioError(f"{op}: message {outcome.message!r} lacks {expect['message_contains']!r}")
        if "details" in expect and isinstance(outcome.document, dict):  # the CLI prints the message only
            problem = mismatch(expect["details"], outcome.document.get("details") or {}, "details")
            if problem:
                raise ScenarioError(f"{op}: {problem}")

    def _expect_cli(self, op, expect, outcome):
        wanted_exit = expect.get("cli_exit", _error_exit(outcome) if expect.get("error") else 0)
        if outcome.exit_code != wanted_exit:
            raise ScenarioError(f"{op}: CLI exited {outcome.exit_code}, expected {wanted_exit}\n"
                                f"stdout: {outcome.stdout[-800:]}\nstderr: {outcome.stderr[-800:]}")
        if "stdout_contains" in expect and expect["stdout_contains"] not in outcome.stdout:
            raise ScenarioError(f"{op}: stdout lacks {expect['stdout_contains']!r}: {outcome.stdout[-800:]}")

    def _await(self, step, check):
        spec = interpolate(step["await"], self.variables)
        deadline = time.monotonic() + duration(spec.get("within", DEFAULT_WITHIN))
        last = None
        while True:
            last = self._await_once(spec)
            if last is None:
                return
            if time.monotonic() >= deadline:
                raise ScenarioError(f"await timed out after {spec.get('within', DEFAULT_WITHIN)}: {last}")
            time.sleep(POLL_INTERVAL)

    def _await_once(self, spec):
        if "event" in spec:
            events = read_events(self.home, spec["session"], spec["event"])
            wanted = spec.get("where") or {}
            matching = [e for e in events if mismatch(wanted, e, "event") is None]
            count = spec.get("count", 1)
            return None if len(matching) >= count else f"{len(matching)}/{count} {spec['event']} events matching {wanted}"
        if "do" in spec:
            outcome = self.surface.call(spec["do"], spec.get("with") or {})
            if outcome.error:
                return f"{spec['do']} failed: {outcome.error}: {outcome.message}"
            return mismatch(spec.get("result") or {}, outcome.result)
        raise ScenarioError(f"await needs event or do: {spec}")

    def _gate(self, step, check):
        spec = interpolate(step["gate"], self.variables)
        gates = Path(spec.get("workspace", self.variables["tmp"]["workspace"])) / ".compozy-gates"
        gates.mkdir(exist_ok=True)
        (gates / spec["open"]).write_text("open\n")

    def _signal(self, step, check):
        spec = interpolate(step["signal"], self.variables)
        sig = SIGNALS[spec.get("sig", "KILL")]
        if spec.get("target") == "daemon":
            if self.surface_name == "inproc":
                raise ScenarioError("signal target daemon needs a daemon process (skip inproc with a reason)")
            self.surface.daemon.kill() if sig == signal.SIGKILL else os.kill(self.surface.daemon.process.pid, sig)
            return
        process = agent_process(self.home, spec["session"])
        if not process:
            raise ScenarioError(f"session {spec['session']} has no recorded agent process")
        os.killpg(process["pgid"], sig) if spec.get("group", True) else os.kill(process["pid"], sig)

    def _restart(self, step, check):
        if step["restart"] != "daemon":
            raise ScenarioError("restart takes `daemon`")
        if self.surface_name == "inproc":
            self.surface.restart()
        elif self.surface.daemon.process.poll() is not None:
            self.surface.daemon.start()  # after a kill: start again on the same home
        else:
            self.surface.restart()

    def _sleep(self, step, check):
        time.sleep(duration(step["sleep"]))

    # -- the events trace ----------------------------------------------------------------

    def _check_events(self):
        spec = self.scenario.data.get("events")
        if not spec:
            return
        if isinstance(spec, list):
            spec = {"session": "{sid}", "sequence": spec}
        spec = interpolate(spec, self.variables)
        events = read_events(self.home, spec["session"])
        position = 0
        for expected in spec.get("sequence") or []:
            (kind, fields), = ((k, v) for k, v in expected.items())
            while position < len(events) and not (events[position]["type"] == kind and
                                                  mismatch(fields or {}, events[position]["content"]) is None):
                position += 1
            if position == len(events):
                trace = [e["type"] for e in events]
                raise ScenarioError(f"{self.scenario.path}: events trace lacks {kind} {fields} in order; got {trace}")
            position += 1
        for kind in spec.get("absent") or []:
            if any(e["type"] == kind for e in events):
                raise ScenarioError(f"{self.scenario.path}: events trace has a {kind} event")


def read_events(home, session_id, kind=None):
    """Straight from the session's events.db file, the way an auditor would read it."""
    path = Path(home) / "sessions" / session_id / "events.db"
    if not path.exists():
        return []
    connection = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=5)
    try:
        query = "SELECT sequence, turn_id, type, content, archived FROM events"
        rows = connection.execute(query + (" WHERE type = ?" if kind else "") + " ORDER BY sequence",
                                  (kind,) if kind else ()).fetchall()
    except sqlite3.OperationalError:
        return []
    finally:
        connection.close()
    return [{"sequence": r[0], "turn_id": r[1], "type": r[2], "content": json.loads(r[3]), "archived": bool(r[4])}
            for r in rows]


def agent_process(home, session_id):
    try:
        meta = json.loads((Path(home) / "sessions" / session_id / "meta.json").read_text())
    except (OSError, ValueError):
        return None
    return (meta.get("runtime") or {}).get("process")


def kill_marked(marker):
    """Kill and report every process whose environment carries this run's marker."""
    leaked = living_with(f"COMPOZY_TEST_MARK={marker}")
    for pid in leaked:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    return leaked


def agents_of(session_id):
    """The live processes the daemon started for a session (its agents carry COMPOZY_SESSION_ID)."""
    return living_with(f"COMPOZY_SESSION_ID={session_id}")


def living_with(variable):
    """Every live process (not a zombie) but this one whose environment holds `NAME=value`."""
    needle, found = variable.encode(), []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            with open(f"/proc/{entry}/environ", "rb") as handle:
                environ = handle.read().split(b"\0")
            with open(f"/proc/{entry}/stat", "rb") as handle:
                stat = handle.read()
        except OSError:
            continue
        if needle in environ and stat[stat.rindex(b")") + 2:stat.rindex(b")") + 3] != b"Z":
            found.append(int(entry))
    return found


def _error_exit(outcome):
    """Usage errors (click refused the input before any request, printing the usage) exit 2, others 1."""
    return 2 if outcome.stderr.startswith("Usage: ") else 1
