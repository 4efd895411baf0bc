"""AgentProcess: one ACP agent subprocess, its pipes, its threads and its JSON-RPC bookkeeping.

Layer 3. The agent runs in its own session and process group. stdout is read on a dedicated
thread that never dies on garbage; stderr is drained into a bounded ring (compozy.acp.stderr: its last
64 KiB are the evidence of a failure) so a chatty agent never blocks; stdin is non-blocking: a message
is written by its caller when the pipe takes it whole, else (a full pipe, a stuck agent) by a writer
thread, so a caller never blocks.
"""

import itertools
import logging
import os
import queue
import select
import subprocess
import threading

from pexpect.popen_spawn import PopenSpawn
from pexpect.spawnbase import SpawnBase

from compozy import proc
from compozy.acp import protocol
from compozy.acp.output import StdoutLedger
from compozy.acp.protocol import ProtocolIssue, Request, Response
from compozy.acp.stderr import StderrRing
from compozy.threads import Threads

log = logging.getLogger("compozy.acp")

READ_CHUNK = 65536
EXIT_AFTER_EOF_WAIT = 2.0


class AgentExited(Exception):
    """The agent process ended (or closed stdout) before answering."""


class AcpError(Exception):
    """A JSON-RPC error answer from the agent."""

    def __init__(self, code, message, data=None):
        self.code, self.message, self.data = code, message, data
        super().__init__(f"{message} ({code})")


class PendingCall:
    def __init__(self, method, wake=None):
        self.method, self.wake = method, wake
        self._done = threading.Event()
        self.result = self.error = None

    def resolve(self, result=None, error=None):
        self.result, self.error = result, error
        self._done.set()
        if self.wake is not None:
            self.wake.set()  # the waiter learns at once, with no polling delay

    @property
    def done(self):
        return self._done.is_set()

    def wait(self, timeout=None):
        """The result; raises AcpError, AgentExited, or TimeoutError when timeout passes."""
        if not self._done.wait(timeout):
            raise TimeoutError(f"{self.method} got no answer within {timeout}s")
        if self.error is not None:
            raise self.error
        return self.result


class AgentSpawn(PopenSpawn):
    """pexpect's PopenSpawn with the agent's stderr kept apart from its stdout.

    PopenSpawn merges stderr into stdout (stderr log lines would interleave with JSON-RPC
    frames) and reads 1 KiB at a time through a second thread; this subclass keeps the
    pexpect send/kill/wait interface and lets AgentProcess read stdout in 64 KiB chunks (StdoutLedger).
    """

    def __init__(self, argv, cwd, env):  # noqa: super().__init__ is replaced on purpose
        SpawnBase.__init__(self, timeout=None, maxread=READ_CHUNK)
        self.crlf = b"\n"
        self.delaybeforesend = None  # pexpect otherwise sleeps 50 ms before every send
        self.proc = proc.start_group(argv, cwd, env)
        self.pid = self.proc.pid
        self.closed = False
        self._buf = b""


class AgentProcess:
    """A running agent. handler receives on_updates(list of session/update params), on_request(Request),
    on_notification(Notification), on_issue(ProtocolIssue) and on_exit(process)."""

    def __init__(self, argv, cwd, env, handler, marker=None, label="agent", threads=None):
        self.argv, self.cwd, self.env = list(argv), cwd, env
        self.handler, self.marker, self.label = handler, marker, label
        self.threads = threads or Threads()  # the daemon's; a process of its own outside one (login, tests)
        self.spawn = self.stdout = None
        self.identity = None
        self._ids = itertools.count()
        self._pending = {}
        self._pending_lock = threading.Lock()
        self._outbox = queue.SimpleQueue()
        self._send_lock = threading.RLock()  # _write_line hands its rest to _enqueue under it
        self._queued = 0  # messages handed to the writer thread and not yet written whole
        self._stdin_closed = False
        self.stderr = None  # the StderrRing, once started
        self._aside = None  # the queue of the worker that runs slow requests off the reader (run_aside)
        self.exited = threading.Event()
        self.stdout_closed = threading.Event()
        self.exit_code = self.exit_signal = None

    # -- lifecycle -----------------------------------------------------------------------

    def start(self):
        """Spawn and record identity; OSError (missing command, bad cwd) propagates."""
        self.spawn = AgentSpawn(self.argv, self.cwd, self.env)
        self.stdout = StdoutLedger(self.spawn.proc.stdout.fileno())
        self.stderr = StderrRing(self.spawn.proc.stderr, self.env)
        self.identity = proc.identify(self.spawn.pid)
        os.set_blocking(self.spawn.proc.stdin.fileno(), False)
        for target, name in ((self._read_stdout, "stdout"), (self.stderr.drain, "stderr"),
                             (self._write_stdin, "stdin")):
            self.threads.start(f"{self.label}-{name}", target)
        return self

    @property
    def pid(self):
        return self.spawn.pid if self.spawn else None

    @property
    def popen(self):
        return self.spawn.proc if self.spawn else None

    @property
    def alive(self):
        return self.spawn is not None and not self.exited.is_set() and self.spawn.proc.poll() is None

    def close_stdin(self):
        self._enqueue(None)

    def wait_exit(self, timeout):
        """True once the process has exited (and been reaped) within timeout."""
        try:
            self.spawn.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            return False
        self._record_exit()
        return True

    def settle_output(self, timeout):
        """Wait until what the agent wrote to stdout before now is handled (persisted); False on timeout."""
        return self.stdout is None or self.stdout.settle(timeout)

    def kill_tree(self, term_grace, kill_grace):
        if self.identity is None:  # it exited before its identity could be read: reap it
            try:
                self.spawn.proc.wait(kill_grace)
            except subprocess.TimeoutExpired:  # /proc would not say: it is still our child
                self.spawn.proc.kill()
                self.spawn.proc.wait()
            self._record_exit()
            return proc.KillReport(verified=True, phase="already_exited", exit_code=self.exit_code,
                                   signal=self.exit_signal)
        report = proc.kill_tree(self.identity, self.marker, term_grace, kill_grace, popen=self.spawn.proc)
        if self.spawn.proc.poll() is not None:
            self._record_exit()
        return report

    def _record_exit(self):
        if not self.exited.is_set():
            self.exit_code, self.exit_signal = proc.exit_status_from_returncode(self.spawn.proc.returncode)
            self.exited.set()

    def stderr_tail(self, lines=None):
        """The last 64 KiB the agent wrote to stderr (or its last `lines` lines): plain text, its environment's
        secrets redacted (compozy.acp.stderr)."""
        return self.stderr.tail(lines) if self.stderr is not None else ""

    # -- JSON-RPC out --------------------------------------------------------------------

    def request(self, method, params, wake=None):
        call_id = next(self._ids)
        pending = PendingCall(method, wake)
        line = protocol.encode(protocol.make_request(call_id, method, params))
        if len(line) > protocol.MAX_LINE_BYTES:  # the agent would drop it and never answer
            pending.resolve(error=AcpError(protocol.INVALID_PARAMS,
                                           f"{method} is {len(line)} bytes encoded; the limit is "
                                           f"{protocol.MAX_LINE_BYTES}"))
            return pending
        with self._pending_lock:
            if self.stdout_closed.is_set():
                pending.resolve(error=AgentExited(f"{self.label} is gone"))
                return pending
            self._pending[call_id] = pending
        self._write_line(line)
        return pending

    def call(self, method, params, timeout):
        return self.request(method, params).wait(timeout)

    def notify(self, method, params):
        self._send(protocol.make_notification(method, params))

    def respond(self, request_id, result):
        line = protocol.encode(protocol.make_result(request_id, result))
        if len(line) > protocol.MAX_LINE_BYTES:  # the agent would drop it and wait for ever
            return self.respond_error(request_id, protocol.INTERNAL_ERROR,
                                      f"the answer is {len(line)} bytes encoded; the limit is {protocol.MAX_LINE_BYTES}")
        self._write_line(line)

    def respond_error(self, request_id, code, message, data=None):
        self._send(protocol.make_error(request_id, code, message, data))

    def _send(self, message):
        self._write_line(protocol.encode(message))

    def _write_line(self, data):
        """Every line out goes through here. It is written at once when nothing waits for the writer
        thread and the pipe takes it (a thread hand-off cost 0.3-0.9 ms a message); what the pipe does
        not take goes to the thread, counted and in order, so no later line can overtake it."""
        with self._send_lock:
            if self._stdin_closed:
                return
            if not self._queued:
                written = self._write_some(data)
                if written is None or written == len(data):
                    return  # None: the agent is gone; the stdout reader reports the exit
                data = data[written:]
            self._enqueue(data)

    def _enqueue(self, data):
        """Hand data (None: close stdin) to the writer thread. Counted and queued under one lock: a
        line's rest must follow its first part before any other sender's line."""
        with self._send_lock:
            self._queued += 1
            self._outbox.put(data)

    def _write_some(self, data):
        """How much of data the pipe took at once (0 when full); None when the agent is gone."""
        try:
            return os.write(self.spawn.proc.stdin.fileno(), data)
        except BlockingIOError:
            return 0
        except (OSError, ValueError):
            return None

    def _write_stdin(self):
        while True:
            data = self._outbox.get()
            if data is None or not self._write_all(data):
                with self._send_lock:  # no caller writes to a descriptor being closed
                    self._stdin_closed = True
                    _close(self.spawn.proc.stdin)
                return  # at EOF, or the agent is gone: the stdout reader reports the exit
            with self._send_lock:
                self._queued -= 1

    def _write_all(self, data):
        view = memoryview(data)
        poller = select.poll()  # select() fails on descriptors past 1,024
        poller.register(self.spawn.proc.stdin.fileno(), select.POLLOUT)
        while view:
            written = self._write_some(view)
            if written is None:
                return False
            view = view[written:]
            if view:
                poller.poll(1000)
        return True

    # -- JSON-RPC in ---------------------------------------------------------------------

    def _read_stdout(self):
        splitter = protocol.LineSplitter()
        try:
            while True:
                data = self.stdout.read(READ_CHUNK)
                if not data:
                    break
                self._dispatch_lines(splitter.feed(data))
                self.stdout.handled(data)
            for issue in splitter.finish():
                self._safely(self.handler.on_issue, issue)
        finally:
            self.stdout.close()
            _close(self.spawn.proc.stdout)
            self._on_stdout_closed()

    def _dispatch_lines(self, lines):
        updates = []
        for line in lines:
            message = line if isinstance(line, ProtocolIssue) else protocol.parse_output_line(line)
            if message is None:
                continue
            if message.__class__ is dict:  # a session/update's params
                updates.append(message)  # consecutive updates are committed together
                continue
            self._flush(updates)
            updates = []
            self._dispatch(message)
        self._flush(updates)

    def _flush(self, updates):
        if updates:
            self._safely(self.handler.on_updates, updates)

    def _dispatch(self, message):
        if isinstance(message, ProtocolIssue):
            if message.request_id is not protocol.NO_ID:  # a request the agent waits on: answer it
                self.respond_error(message.request_id, protocol.INVALID_REQUEST, f"invalid request ({message.kind})")
            self._safely(self.handler.on_issue, message)
        elif isinstance(message, Response):
            self._resolve(message)
        elif isinstance(message, Request):
            self._safely(self.handler.on_request, message)
        else:
            self._safely(self.handler.on_notification, message)

    def _resolve(self, response):
        with self._pending_lock:
            pending = self._pending.pop(response.id, None) if isinstance(response.id, int) else None
        if pending is None:
            self._safely(self.handler.on_issue, ProtocolIssue("unknown_response_id", protocol.excerpt(repr(response))))
            return
        if response.error is not None:
            error = response.error if isinstance(response.error, dict) else {}
            pending.resolve(error=AcpError(error.get("code", protocol.INTERNAL_ERROR),
                                           str(error.get("message", "error"))[:500], error.get("data")))
        else:
            pending.resolve(result=response.result)

    def run_aside(self, work):
        """Run work() on this agent's request worker, in order, never on the output reader: a slow
        file request must not stop the agent's output (and with it cancel) from being read."""
        with self._pending_lock:
            if self._aside is None:
                self._aside = queue.SimpleQueue()
                self.threads.start(f"{self.label}-requests", self._work_aside, self._aside)
            self._aside.put(work)

    def _work_aside(self, works):
        while (work := works.get()) is not None:
            self._safely(lambda w: w(), work)

    def _safely(self, callback, argument):
        """A handler bug must not kill the reader: the agent's output keeps flowing."""
        try:
            callback(argument)
        except Exception:  # noqa: BLE001
            log.exception("%s: handler %s failed", self.label, getattr(callback, "__name__", callback))

    def _on_stdout_closed(self):
        with self._pending_lock:
            self.stdout_closed.set()
            pending, self._pending = list(self._pending.values()), {}
        if not self.wait_exit(EXIT_AFTER_EOF_WAIT):
            log.warning("%s closed stdout but pid %s is still running", self.label, self.pid)
        for call in pending:
            call.resolve(error=AgentExited(f"{self.label} exited before answering {call.method}"))
        self._enqueue(None)  # lets the stdin writer close its pipe and finish
        with self._pending_lock:
            if self._aside is not None:
                self._aside.put(None)  # the request worker finishes what is queued, then ends
        self._safely(self.handler.on_exit, self)


def _close(pipe):
    try:
        pipe.close()
    except (OSError, ValueError):
        pass
