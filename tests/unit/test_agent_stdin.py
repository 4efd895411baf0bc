"""Writing to an agent's stdin: callers write directly, never block on a stuck agent, and order holds."""

import json
import os
import sys
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
