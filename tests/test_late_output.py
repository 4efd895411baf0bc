"""Output from an agent process that no longer serves its session is dropped and logged, never
appended to the session (issue 9, finding 8). In-process, so the test can wait until the retired
process's reader thread has handled every line it wrote."""

import logging
import re
import time

from compozy.config import from_document, reference_command
from compozy.manager import SessionManager
from compozy.paths import Home

WITHIN = 20.0


def _await_done(manager, session_id, turn_id):
    deadline = time.monotonic() + WITHIN
    while time.monotonic() < deadline:
        if manager.events(session_id, None, {"turn_id": turn_id, "type": "done"})["events"]:
            return
        time.sleep(0.02)
    raise AssertionError(f"turn {turn_id} did not end within {WITHIN}s")


def test_late_output_of_a_replaced_process_is_dropped(home, workspace, caplog):
    config = from_document({"providers": {"second": {"command": reference_command()}}})
    manager = SessionManager(Home(home), config).start()
    caplog.set_level(logging.WARNING, logger="compozy.session")
    try:
        session_id = manager.create_session({"workspace_path": str(workspace)})["session"]["id"]
        first = manager.prompt(session_id, None, {"message": "[linger 3] alpha"})["prompt"]["turn_id"]
        _await_done(manager, session_id, first)
        retired = manager.live[session_id].runtime
        # The provider change replaces the process; closing its stdin makes it write "late N" chunks.
        second = manager.prompt(session_id, None, {"message": "beta", "runtime": {"provider": "second"}})
        assert retired.process.stdout_closed.wait(WITHIN)  # every line it wrote has been handled
        _await_done(manager, session_id, second["prompt"]["turn_id"])
        texts = [e["content"]["text"] for e in
                 manager.events(session_id, None, {"type": "agent_message"})["events"]]
    finally:
        manager.shutdown()
    assert texts[0] == "echo: alpha" and texts[-1].endswith("echo: beta")
    assert [text for text in texts if "late" in text] == []
    dropped = [re.search(r"dropped (\d+) late event\(s\) from a retired agent process", r.getMessage())
               for r in caplog.records]
    assert sum(int(match.group(1)) for match in dropped if match) == 3  # the lines may arrive in several reads
