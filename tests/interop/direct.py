"""Driving an adapter alone, with no daemon: a bare ACP client on the adapter's stdio, timed.

It sends initialize, authenticate when asked (the method given), session/new and one session/prompt, and
measures from the spawn: ready (session/new answered) and the first agent_message_chunk. A permission request
is answered with the first allow option offered; the fs methods are refused (none is advertised).
"""

import json
import os
import queue
import signal
import subprocess
import threading
import time

STEP_TIMEOUT = 180.0


class DirectRun:
    def __init__(self, argv, env, cwd):
        self.process = subprocess.Popen(argv, cwd=cwd, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                        stderr=subprocess.PIPE, start_new_session=True)
        self.started = time.monotonic()
        self.messages = queue.Queue()
        self.stderr = []
        self.next_id = 0
        self.threads = [threading.Thread(target=self._read, daemon=True),
                        threading.Thread(target=self._drain, daemon=True)]
        for thread in self.threads:
            thread.start()

    def _read(self):
        for line in self.process.stdout:
            try:
                self.messages.put(json.loads(line))
            except ValueError:
                continue
        self.messages.put(None)

    def _drain(self):
        for line in self.process.stderr:
            self.stderr.append(line.decode("utf-8", "replace"))
            del self.stderr[:-200]

    def send(self, message):
        self.process.stdin.write((json.dumps(message) + "\n").encode())
        self.process.stdin.flush()

    def call(self, method, params, on_update=None):
        self.next_id += 1
        request_id = self.next_id
        self.send({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params})
        deadline = time.monotonic() + STEP_TIMEOUT
        while True:
            message = self.messages.get(timeout=max(0.1, deadline - time.monotonic()))
            if message is None:
                raise RuntimeError(f"adapter exited during {method}: {''.join(self.stderr)[-2000:]}")
            if message.get("id") == request_id and "method" not in message:
                if "error" in message:
                    raise RuntimeError(f"{method}: {message['error']}")
                return message.get("result")
            if "method" in message and "id" in message:
                self._answer(message)
            elif message.get("method") == "session/update" and on_update:
                on_update(message["params"].get("update") or {})

    def _answer(self, request):
        if request["method"] == "session/request_permission":
            options = request["params"].get("options") or []
            allow = next((o for o in options if str(o.get("kind", "")).startswith("allow")), options[0])
            self.send({"jsonrpc": "2.0", "id": request["id"],
                       "result": {"outcome": {"outcome": "selected", "optionId": allow["optionId"]}}})
        else:
            self.send({"jsonrpc": "2.0", "id": request["id"], "error": {"code": -32601, "message": "Method not found"}})

    def stop(self):
        try:
            self.process.stdin.close()
        except OSError:
            pass
        try:
            self.process.wait(3)
        except subprocess.TimeoutExpired:
            for sig, grace in ((signal.SIGTERM, 3), (signal.SIGKILL, 10)):
                try:
                    os.killpg(self.process.pid, sig)
                    self.process.wait(grace)
                    break
                except (ProcessLookupError, subprocess.TimeoutExpired):
                    continue
        # Whatever the adapter started in its own group goes too.
        try:
            os.killpg(self.process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        for thread in self.threads:
            thread.join(10)
        self.process.stdout.close()
        self.process.stderr.close()


def timed_turn(argv, env, cwd, prompt, auth_method=None):
    """{"ready", "first_chunk", "text", "stop_reason"}: seconds from the spawn, and what the agent answered."""
    run = DirectRun(argv, env, cwd)
    chunks = []
    first = []

    def on_update(update):
        if update.get("sessionUpdate") == "agent_message_chunk":
            if not first:
                first.append(time.monotonic())
            content = update.get("content") or {}
            chunks.append(content.get("text", ""))
    try:
        run.call("initialize", {"protocolVersion": 1, "clientInfo": {"name": "direct", "version": "1"},
                                "clientCapabilities": {"fs": {"readTextFile": False, "writeTextFile": False}}})
        if auth_method:
            run.call("authenticate", {"methodId": auth_method})
        session = run.call("session/new", {"cwd": str(cwd), "mcpServers": []})
        ready = time.monotonic()
        result = run.call("session/prompt", {"sessionId": session["sessionId"],
                                             "prompt": [{"type": "text", "text": prompt}]}, on_update)
        return {"ready": ready - run.started, "first_chunk": (first[0] - run.started) if first else None,
                "text": "".join(chunks), "stop_reason": (result or {}).get("stopReason")}
    finally:
        run.stop()
