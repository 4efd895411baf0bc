"""Hooks: the [[hooks]] commands of config.toml, run when their event happens.

Layer 4. A hook runs on a thread of its own, in its own process group, with the event as JSON on
stdin, the session's workspace as its directory, and a time bound (its `timeout`; the group is
killed when it is used up). Its environment is the daemon's without any secret-named variable (the
daemon's token, API keys): the workspace it runs in is the agents', and a hook needs none of them.
Each run is recorded in the session's events.db (event, command, exit code, duration, the first
OUTPUT_LIMIT bytes of its output, secrets redacted from the output and the command) and read back by
inspect. Nothing a hook does reaches the session: a hook that fails, hangs or cannot start is only a
recorded run.

Events: session.post_create, session.post_stop (a lifecycle stop; an idle release is no stop),
agent.stopped (any agent process ending: stop, crash, replacement, idle release), turn.end,
session.attention.changed and session.runtime_recovery.{started,succeeded,exhausted}.
"""

import json
import logging
import os
import subprocess
import threading

from compozy import proc
from compozy.location import child_environment
from compozy.redact import redact, without_secrets
from compozy.states import SessionState
from compozy.store import hookruns

log = logging.getLogger("compozy.hooks")

OUTPUT_LIMIT = 4096
MAX_RUNNING = 8  # hooks beyond this wait for a slot: a burst of events never forks a crowd
EVENT_TYPES = {"done": "turn.end", "error": "turn.end",
               "runtime_recovery_started": "session.runtime_recovery.started",
               "runtime_recovery_succeeded": "session.runtime_recovery.succeeded",
               "runtime_recovery_exhausted": "session.runtime_recovery.exhausted"}


class Hooks:
    """An observer (compozy.session.records.observers) that runs the configured hooks."""

    def __init__(self, services):
        self.services = services
        self.slots = threading.BoundedSemaphore(MAX_RUNNING)
        self.running = {}  # pid -> Popen, so shutdown ends what is still running
        self.lock = threading.Lock()

    def created(self, record):
        self.dispatch(record, "session.post_create", {"name": record.name, "agent_name": record.agent_name,
                                                       "lineage": record.lineage})

    def state_changed(self, session, old, new):
        if new == SessionState.STOPPED and old != new:
            record = session.record
            self.dispatch(record, "session.post_stop", {"stop_reason": record.stop_reason,
                                                         "stop_detail": record.stop_detail})

    def appended(self, session, records):
        for event in records:
            name = EVENT_TYPES.get(event["type"])
            if name is not None:
                self.dispatch(session.record, name, {"turn_id": event["turn_id"], "event_type": event["type"],
                                                     "content": event["content"]})

    def agent_exited(self, session, runtime):
        self.dispatch(session.record, "agent.stopped", {"pid": runtime.process.pid,
                                                         "provider": runtime.provider.name})

    def attention_changed(self, session, old, new):
        self.dispatch(session.record, "session.attention.changed", {"previous": old, "attention": new})

    def closing(self):
        with self.lock:
            running = list(self.running.values())
        for process in running:
            proc.kill_group(process.pid)

    def dispatch(self, record, event, details):
        hooks = [hook for hook in self.services.config.hooks if hook.event == event]
        if not hooks:
            return
        payload = {"event": event, "session_id": record.id, "workspace_id": record.workspace_id,
                   "session_type": record.type, "occurred_at": self.services.clock.now_iso(), **details}
        for hook in hooks:
            self.services.threads.start(f"hook-{event}-{record.id}", self._run, record, hook, payload)

    def _run(self, record, hook, payload):
        env = {"COMPOZY_HOOK_EVENT": hook.event, "COMPOZY_SESSION_ID": record.id}
        cwd = record.cwd if os.path.isdir(record.cwd or "") else None
        run = self.run(hook.event, hook.command, payload, hook.timeout, cwd, env)
        try:
            hookruns.record(self.services.store.events(record), run)
        except Exception:  # noqa: BLE001 (the session may be gone: removed while its hook ran)
            log.warning("session %s: hook run of %s not recorded", record.id, hook.event, exc_info=True)
        if run["exit_code"] != 0:
            log.warning("session %s: hook %s exited %s%s", record.id, hook.event, run["exit_code"],
                        " (timed out)" if run["timed_out"] else "")

    def run(self, event, command, payload, timeout, cwd, env):
        """Run one command with the payload on stdin, bounded, in a slot: the run as it may be kept (redacted).
        The attention inbox's notifiers (compozy.session.lifecycle.notify) run theirs here too."""
        with self.slots:
            clock = self.services.clock
            started_at, started = clock.now_iso(), clock.monotonic()
            outcome = self._execute(command, payload, timeout, cwd, env)
            run = {"event": event, "command": list(command), "started_at": started_at,
                   "duration_ms": round((clock.monotonic() - started) * 1000), **outcome}
            return self._redacted(run)

    def _redacted(self, run):
        """The run as inspect may show it: the known secrets and credential-shaped text out of its output,
        error and command (the daemon's environment, every provider's env)."""
        known = {name: value for provider in self.services.config.providers.values()
                 for name, value in provider.env.items()}
        return {**run, "command": [redact(part, known) for part in run["command"]],
                "output": redact(run["output"], known), "error": redact(run["error"], known)}

    def _execute(self, command, payload, timeout, cwd, env):
        env = without_secrets(child_environment(env))
        try:
            process = proc.start_group(command, cwd, env, stderr=subprocess.STDOUT, bufsize=-1)
        except OSError as exc:
            return {"exit_code": None, "timed_out": False, "output": "", "truncated": False,
                    "error": f"cannot start: {exc}"[:500]}
        with self.lock:
            self.running[process.pid] = process
        try:
            return _supervise(self.services.threads, process, payload, timeout)
        finally:
            with self.lock:
                self.running.pop(process.pid, None)


def _supervise(threads, process, payload, timeout):
    output = bytearray()
    reader = threads.start(f"hook-output-{process.pid}", _read_bounded, process.stdout, output)
    try:
        process.stdin.write(json.dumps(payload).encode() + b"\n")
        process.stdin.close()
    except OSError:
        pass  # a hook that does not read its input still runs
    timed_out = False
    try:
        process.wait(timeout)
    except subprocess.TimeoutExpired:
        timed_out = True
        proc.kill_group(process.pid)
        process.wait()
    reader.join(1.0)
    truncated = len(output) > OUTPUT_LIMIT
    return {"exit_code": process.returncode, "timed_out": timed_out,
            "output": bytes(output[:OUTPUT_LIMIT]).decode("utf-8", "replace"), "truncated": truncated,
            "error": "timed out" if timed_out else None}


def _read_bounded(pipe, output):
    """Keep the first OUTPUT_LIMIT (+1, to know it was cut) bytes; drain the rest so the hook never blocks."""
    with pipe:
        for chunk in iter(lambda: pipe.read1(65536), b""):
            if len(output) <= OUTPUT_LIMIT:
                output.extend(chunk[:OUTPUT_LIMIT + 1 - len(output)])

