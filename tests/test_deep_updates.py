"""An agent update nested about a thousand levels deep (issue 21, low): redaction walks it without
recursion, the stored event keeps at most MAX_CONTENT_DEPTH levels (deeper values become a marker), and
nothing of the batch it came in is lost; the daemon's log gets no traceback.
"""

import json
import sys

from compozy.text import DEPTH_MARKER
from tests.harness.api import run_turn
from tests.harness.daemon import DaemonProcess
from tests.harness.runner import read_events

SECRET = "providerkey-123456789"


def test_a_deeply_nested_update_with_a_secret_is_stored_capped_and_redacted_and_its_batch_kept(tmp_path, workspace):
    home = tmp_path / "home"
    home.mkdir()
    (home / "config.toml").write_text(
        f'[providers.reference]\ncommand = ["{sys.executable}", "-m", "compozy.agents.reference"]\n'
        f'env = {{ REFERENCE_API_KEY = "{SECRET}" }}\n')
    daemon = DaemonProcess(home).start()
    try:
        api = daemon.client(timeout=30)
        session = api.call("POST", "/api/sessions", {"workspace_path": str(workspace)})[1]["session"]
        deep = f"[nest 900 {SECRET}] [chunks 2] [nest 40 {SECRET}] after"
        answer = run_turn(api, session, deep)
        history = api.call("GET", f"/api/workspaces/{session['workspace_id']}/sessions/{session['id']}/history")[1]
    finally:
        daemon.stop()
    log = (home / "logs" / "compozy.log").read_text()
    calls = [e for e in read_events(home, session["id"], "tool_call") if e["content"].get("title") == "Nested"]
    assert [e["content"]["text"] for e in answer if e["type"] == "agent_message"] == \
        ["chunk 1 ", "chunk 2 ", "echo: after"]
    assert len(calls) == 2  # both updates stored, the deep one too
    deep_input, shallow_input = (c["content"]["raw"]["rawInput"] for c in calls)
    assert DEPTH_MARKER in json.dumps(deep_input) and SECRET not in json.dumps(calls)
    assert json.dumps(shallow_input) == "[" * 40 + '"[redacted]"' + "]" * 40  # within the cap: whole, redacted
    assert history["messages"][-1]["text"] == "chunk 1 chunk 2 echo: after"
    assert "RecursionError" not in log and "Traceback" not in log
