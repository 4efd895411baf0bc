"""A title pass cut short by the daemon's shutdown leaves no title agent behind, and the session unnamed."""

import time

from compozy.config import from_document
from compozy.manager import SessionManager
from compozy.paths import Home
from compozy.location import self_command


def test_shutdown_ends_a_title_pass_in_flight(home, workspace):
    config = from_document({"providers": {"slow": {"command": list(self_command("agent", "reference")),
                                                   "env": {"COMPOZY_REFERENCE_TITLE_GATE": "never"}}},
                            "roles": {"auto_title": {"enabled": True, "provider": "slow"}}})
    manager = SessionManager(Home(home), config).start()
    session_id = manager.create_session({"workspace_path": str(workspace)})["session"]["id"]
    manager.prompt(session_id, None, {"message": "name me"})
    titles = manager.observers["titles"]
    deadline = time.monotonic() + 30
    while not titles.agents and time.monotonic() < deadline:
        time.sleep(0.05)
    agent = next(iter(titles.agents))
    manager.shutdown()
    assert agent.process.wait_exit(10)
    manager = SessionManager(Home(home), from_document({})).start()
    try:
        session = manager.get_session(session_id)["session"]
        assert session["name"] is None and session["auto_title"]["state"] in ("running", "failed")
    finally:
        manager.shutdown()
