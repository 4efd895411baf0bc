"""Secrets split across chunks (issue 21, medium 6): each known secret is streamed by the real reference
agent split at every offset (`[say]` chooses the chunks), and no read that joins chunks shows it whole:
`GET S/history`, `compozy session history`, the native history tool, a prompt's `wait` answer, the
reply wake, and what a continue and a fork carry (read from the new session's events.db, as an auditor
would). The known secrets are a variable of the daemon's environment, one of the provider's `env`,
and the agent's own binding secret. Each chunk, read alone (`/events`), never held a secret whole.
"""

import json
import sqlite3
import sys

import pytest

from compozy.api import SECRET_ENV, TOOL_SERVER_PATH
from compozy.cli.client import Client as Api
from compozy.redact import REPLACEMENT
from tests.harness.api import events, spath, wait_for
from tests.harness.cli import cli_json
from tests.harness.daemon import DaemonProcess
from tests.test_tool_server import agent_environment, bound, stop, use

DAEMON_SECRET = "daemonkey-0123456789"
PROVIDER_SECRET = "providerkey-123456789"


def split_everywhere(secret):
    """The prompt that streams `<secret>` once for every offset it can be split at, one chunk each side."""
    return " ".join(f"[say <{secret[:k]}] [say {secret[k:]}>]" for k in range(1, len(secret)))


def expected_text(secret):
    return f"<{REPLACEMENT}>" * (len(secret) - 1) + "echo: "


@pytest.fixture
def daemon(home):
    (home / "config.toml").write_text(
        f'[providers.reference]\ncommand = ["{sys.executable}", "-m", "compozy.agents.reference"]\n'
        f'env = {{ REFERENCE_API_KEY = "{PROVIDER_SECRET}" }}\n')
    process = DaemonProcess(home, env={"SERVICE_API_KEY": DAEMON_SECRET}).start()
    yield process
    process.stop()


@pytest.fixture
def api(daemon):
    return Api(daemon.http_url, timeout=30)


def carried_text(home, session_id):
    path = home / "sessions" / session_id / "events.db"
    with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as db:
        document = json.loads(db.execute("SELECT document FROM carried_context").fetchone()[0])
    return [entry["text"] for entry in document["entries"] if entry["role"] == "assistant"]


def answers(messages):
    return [m["text"] for m in messages if m["role"] == "assistant"]


def test_a_secret_streamed_split_at_every_offset_is_never_whole_in_a_read(home, daemon, api, workspace):
    source, source_secret = bound(api, workspace, "source")
    asker, asker_secret = bound(api, workspace, "asker")
    secrets = (DAEMON_SECRET, PROVIDER_SECRET, source_secret)
    try:
        _, asked = use(daemon.http_url + TOOL_SERVER_PATH + asker_secret, *[
            ("compozy__session_prompt", {"session_id": source["id"], "message": split_everywhere(secret),
                                         "wait": True, "notify_on_complete": True}) for secret in secrets])
        wake = wait_for(lambda: [e for e in events(api, asker, type="user_message")
                                 if e["content"]["text"].startswith("Reply from session")] and
                        len([e for e in events(api, asker, type="done")]) >= 4, what="the wakes")
        history = answers(api.call("GET", spath(source, "history"))[1]["messages"])
        by_cli = answers(cli_json(home, "--url", daemon.socket_url, "session", "history", source["id"])["messages"])
        _, (by_tool,) = use(daemon.http_url + TOOL_SERVER_PATH + source_secret, ("compozy__session_history", {}))
        continued = api.call("POST", spath(source, "continue"), {"agent_name": "general",
                                                                  "idempotency_key": "carry"})[1]["session"]
        forked = api.call("POST", spath(source, "fork"), {"idempotency_key": "branch"})[1]["session"]
        wakes = [e["content"]["text"] for e in events(api, asker, type="user_message", limit=1000)
                 if e["content"]["text"].startswith("Reply from session")]
        chunks = events(api, source, type="agent_message", limit=1000)
        assert agent_environment(api, source)[SECRET_ENV] == source_secret  # one binding all along
    finally:
        stop(api, source)
        stop(api, asker)
    assert wake
    expected = [expected_text(secret) for secret in secrets]
    assert [result.structured_content["answer"]["text"] for result in asked] == expected
    assert history[1:] == expected and by_cli[1:] == expected  # after the warm-up's answer
    assert answers(by_tool.structured_content["messages"])[1:] == expected
    assert carried_text(home, continued["id"])[1:] == expected
    assert carried_text(home, forked["id"])[1:] == expected
    assert len(wakes) == 3 and all(wake.endswith(text) for wake, text in zip(wakes, expected))
    for secret in secrets:
        assert not any(secret in json.dumps(chunk["content"]) for chunk in chunks)
        assert any(secret[:5] in chunk["content"]["text"] for chunk in chunks)  # the pieces were streamed
