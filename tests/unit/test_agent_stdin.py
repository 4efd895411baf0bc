"""Writing to an agent's stdin: callers write directly, never block on a stuck agent, and order holds."""

import json
import os
import sys
import threading
import time

from compozy.acp.driver import AgentProcess

TIMEOUT = 30

# Reads nothing until the file `go` exists, then copies stdin to `out` line by line.
STUCK_THEN_READS = """
import os, sys, time
go, out = sys.argv[1], sys.argv[2]
while not os.path.exists(go):
    time.sleep(0.02)
with open(out, "wb") as handle:
    for line in sys.stdin.buffer:
        handle.write(line)
        handle.flush()
"""


class Quiet:
    def on_updates(self, updates): pass
    def on_request(self, request): pass
    def on_notification(self, notification): pass
    def on_issue(self, issue): pass
    def on_exit(self, process): pass


def test_a_stuck_agent_never_blocks_a_sender_and_every_message_arrives_in_order(tmp_path):
    script, go, out = tmp_path / "agent.py", tmp_path / "go", tmp_path / "out"
    script.write_text(STUCK_THEN_READS)
    agent = AgentProcess([sys.executable, str(script), str(go), str(out)], str(tmp_path), dict(os.environ), Quiet())
    agent.start()
    try:
        start = time.monotonic()
        for number in range(40):  # 40 x 16 KiB: ten times what a pipe holds
            agent.notify("x/note", {"n": number, "pad": "p" * 16384})
        assert time.monotonic() - start < 10  # generous: a blocked sender would hang here forever
        go.touch()
        deadline = time.monotonic() + TIMEOUT
        while time.monotonic() < deadline:
            lines = out.read_bytes().splitlines() if out.exists() else []
            if len(lines) == 40:
                break
            time.sleep(0.05)
        assert [json.loads(line)["params"]["n"] for line in lines] == list(range(40))
    finally:
        agent.kill_tree(1.0, 5.0)


def _lines_of(out, count):
    deadline = time.monotonic() + TIMEOUT
    lines = []
    while time.monotonic() < deadline:
        lines = out.read_bytes().splitlines() if out.exists() else []
        if len(lines) >= count:
            break
        time.sleep(0.05)
    return lines


def test_requests_answers_and_notifications_of_concurrent_writers_keep_each_writers_order(tmp_path):
    """Four threads each send requests, answers and notifications in turn while the agent reads nothing
    (the pipe fills, the writer thread takes over) and then everything. Every line arrives whole, each
    thread's lines in the order it sent them, and the count of lines waiting for the writer returns to 0."""
    script, go, out = tmp_path / "agent.py", tmp_path / "go", tmp_path / "out"
    script.write_text(STUCK_THEN_READS)
    agent = AgentProcess([sys.executable, str(script), str(go), str(out)], str(tmp_path), dict(os.environ), Quiet())
    agent.start()
    writers, each = 4, 60

    def write(writer):
        for number in range(each):
            params = {"writer": writer, "n": number, "pad": "p" * (number % 7) * 4096}
            kind = number % 3
            if kind == 0:
                agent.request("x/ask", params)
            elif kind == 1:
                agent.respond(f"w{writer}-{number}", params)
            else:
                agent.notify("x/note", params)
            if number == each // 2 and writer == 0:
                go.touch()  # the agent starts reading while the others still write
    try:
        threads = [threading.Thread(target=write, args=(w,)) for w in range(writers)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(TIMEOUT)
        go.touch()
        lines = _lines_of(out, writers * each)
        messages = [json.loads(line) for line in lines]  # a line cut by another writer's would not parse
        assert len(messages) == writers * each
        for writer in range(writers):
            sent = [(m.get("params") or m.get("result"))["n"] for m in messages
                    if (m.get("params") or m.get("result"))["writer"] == writer]
            assert sent == list(range(each)), f"writer {writer}'s lines arrived as {sent}"
        deadline = time.monotonic() + TIMEOUT
        while agent._queued and time.monotonic() < deadline:
            time.sleep(0.02)
        assert agent._queued == 0
    finally:
        agent.kill_tree(1.0, 5.0)


def test_a_notification_never_overtakes_a_request_sent_before_it(tmp_path):
    """A prompt request then its cancel, fifty times: the cancel never reaches the agent first."""
    script, go, out = tmp_path / "agent.py", tmp_path / "go", tmp_path / "out"
    script.write_text(STUCK_THEN_READS)
    go.touch()
    agent = AgentProcess([sys.executable, str(script), str(go), str(out)], str(tmp_path), dict(os.environ), Quiet())
    agent.start()
    try:
        for number in range(50):
            agent.request("session/prompt", {"n": number})
            agent.notify("session/cancel", {"n": number})
        lines = [json.loads(line) for line in _lines_of(out, 100)]
        assert [(m["method"], m["params"]["n"]) for m in lines] == \
            [(method, n) for n in range(50) for method in ("session/prompt", "session/cancel")]
        assert agent._queued == 0
    finally:
        agent.kill_tree(1.0, 5.0)
