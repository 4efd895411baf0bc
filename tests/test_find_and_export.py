"""Exports and search hold no secret whole (issue 26): a known secret streamed by the real reference agent split
at every offset is absent from `GET S/export` in every format (HTTP and `compozy session export`) and from search
results, while the pieces it was streamed in are in the stored chunks. The exports carry what a person needs: the
prompts, the answers, tool calls and permission answers; the JSONL holds every stored event in sequence order,
archived ones marked.
"""

import io
import json
import sqlite3
import zipfile

import pytest

from compozy.redact import REPLACEMENT
from tests.harness.api import events, run_turn, spath, wait_for
from tests.harness.cli import run_cli
from tests.test_split_secrets import DAEMON_SECRET, PROVIDER_SECRET, api, daemon, split_everywhere  # noqa: F401
from tests.test_tool_server import create

FORMATS = ("md", "html", "jsonl")


def exported(api, session, name):
    method, path = "GET", spath(session, "export")
    media, data = api.fetch(method, path, query={"format": name})
    return media, data.decode()


@pytest.fixture
def spoken(api, workspace):
    """A session whose agent streamed both secrets split at every offset, then ran a tool and asked a permission."""
    session = create(api, workspace, name="spoken")
    run_turn(api, session, split_everywhere(DAEMON_SECRET) + " " + split_everywhere(PROVIDER_SECRET))
    run_turn(api, session, "[tool Lint] [permission edit] lint the tree")
    return session


def test_no_export_format_holds_a_secret_split_across_chunks(home, daemon, api, spoken):
    chunks = events(api, spoken, type="agent_message", limit=1000)
    assert any(DAEMON_SECRET[:5] in chunk["content"]["text"] for chunk in chunks)  # streamed in pieces
    for name in FORMATS:
        media, text = exported(api, spoken, name)
        by_cli = run_cli(home, "--url", daemon.socket_url, "session", "export", spoken["id"], "--format", name)
        assert by_cli.returncode == 0, by_cli.stderr
        for shown in (text, by_cli.stdout):
            assert DAEMON_SECRET not in shown and PROVIDER_SECRET not in shown, name
            assert REPLACEMENT in shown
        joined = "".join(json.loads(line)["content"].get("text", "") for line in text.splitlines()
                         if json.loads(line)["type"] == "agent_message") if name == "jsonl" else text
        assert DAEMON_SECRET not in joined and PROVIDER_SECRET not in joined


def archived_files(api, **query):
    _, data = api.fetch("GET", "/api/export", query=query)
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        return {name: archive.read(name).decode() for name in archive.namelist()}


def test_a_lineage_archive_holds_continues_and_forks_and_no_secret(api, spoken):
    continued = api.call("POST", spath(spoken, "continue"), {"agent_name": "general", "idempotency_key": "on"})[1]
    forked = api.call("POST", spath(spoken, "fork"), {"idempotency_key": "branch"})[1]
    for name in FORMATS:
        files = archived_files(api, lineage=spoken["id"], format=name)
        assert set(files) == {f"{s['id']}.{name}" for s in (spoken, continued["session"], forked["session"])} | {
            "sessions.json"}
        assert not any(DAEMON_SECRET in text or PROVIDER_SECRET in text for text in files.values())


def found(api, q, **filters):
    return api.call("GET", "/api/search", query={"q": q, **filters})[1]["search"]["hits"]


def test_search_finds_the_answers_but_never_a_secret_split_across_chunks(home, daemon, api, spoken):
    hits = wait_for(lambda: found(api, "echo"), what="the answer indexed")
    assert {hit["session_id"] for hit in hits} == {spoken["id"]}
    for piece in (DAEMON_SECRET, PROVIDER_SECRET, DAEMON_SECRET.split("-")[0], "daemonkey*", "providerkey*"):
        quoted = f'"{piece}"' if "-" in piece else piece
        shown = json.dumps(found(api, quoted, kind="agent"))
        assert DAEMON_SECRET not in shown and PROVIDER_SECRET not in shown
    answer = next(hit for hit in found(api, "redacted", kind="agent"))
    assert "**redacted**" in answer["snippet"] and answer["kind"] == "agent"
    by_cli = run_cli(home, "--url", daemon.socket_url, "search", "redacted", "-o", "json")
    assert by_cli.returncode == 0 and DAEMON_SECRET not in by_cli.stdout and "redacted" in by_cli.stdout


def test_exports_carry_the_conversation_tool_calls_and_permission_answers(home, daemon, api, spoken, tmp_path):
    _, markdown = exported(api, spoken, "md")
    assert markdown.startswith("# spoken\n")
    assert "lint the tree" in markdown and "**tool call** Lint (completed)" in markdown
    assert "**permission**" in markdown and "allow" in markdown
    media, page = exported(api, spoken, "html")
    assert media.startswith("text/html") and "<script" not in page and "<style>" in page
    assert "lint the tree" in page and 'class="msg user"' in page
    target = tmp_path / "out.jsonl"
    result = run_cli(home, "--url", daemon.socket_url, "session", "export", spoken["id"][:12], "--format", "jsonl",
                     "-o", str(target))
    assert result.returncode == 0, result.stderr
    records = [json.loads(line) for line in target.read_text().splitlines()]
    assert [r["sequence"] for r in records] == sorted(r["sequence"] for r in records)
    assert len(records) == len(events(api, spoken, limit=1000))


def test_a_rewound_turn_leaves_the_transcript_and_stays_marked_in_the_jsonl(api, workspace):
    session = create(api, workspace)
    run_turn(api, session, "first words")
    run_turn(api, session, "second thoughts")
    message_id = events(api, session, type="user_message")[-1]["content"]["message_id"]
    fences = api.call("GET", spath(session))[1]["session"]["fences"]
    api.call("POST", spath(session, "rewind"), {"message_id": message_id, "idempotency_key": "back",
                                                 **{f"expected_{name}": value for name, value in fences.items()}})
    _, markdown = exported(api, session, "md")
    assert "first words" in markdown and "second thoughts" not in markdown
    _, lines = exported(api, session, "jsonl")
    records = [json.loads(line) for line in lines.splitlines()]
    rewound = [r for r in records if r["type"] == "user_message" and r["content"]["text"] == "second thoughts"]
    assert rewound and rewound[0]["archived"] is True
    hits = wait_for(lambda: [h for h in found(api, "thoughts", rewound="true") if h["rewound"]],
                    what="the rewound prompt marked rewound")
    assert sorted(hit["kind"] for hit in hits) == ["agent", "user"]  # the prompt and its echo
    assert found(api, "thoughts") == [] and found(api, "first", kind="user")


def test_archived_sessions_are_found_unless_excluded(api, workspace):
    session = create(api, workspace)
    run_turn(api, session, "shelved narwhal notes")
    api.call("POST", spath(session, "archive"), query={"stop": "true"})
    hits = wait_for(lambda: [h for h in found(api, "narwhal", kind="user") if h["archived"]], what="the archive seen")
    assert hits[0]["session_id"] == session["id"]
    assert found(api, "narwhal", archive="exclude") == []
    assert len(found(api, "narwhal", archive="only", kind="user")) == 1


def test_the_index_catches_up_from_its_last_indexed_sequence_after_a_crash(home, daemon, api, workspace):
    session = create(api, workspace)
    for word in ("alpha", "bravo", "charlie"):
        run_turn(api, session, f"word {word}")
    wait_for(lambda: found(api, "charlie", kind="user"), what="the last prompt indexed")
    daemon.kill()
    path = home / "search.db"
    with sqlite3.connect(path) as db:  # as if the crash came before the index saw the last turns
        cut = db.execute("SELECT sequence FROM messages WHERE text = 'word bravo'").fetchone()[0] - 1
        db.execute("DELETE FROM messages WHERE sequence > ?", (cut,))
        db.execute("UPDATE sessions SET last_sequence = ?, open_row = NULL, open_key = NULL", (cut,))
    daemon.start()
    api = daemon.client(timeout=30)
    hits = wait_for(lambda: len(found(api, "word", kind="user")) == 3 and found(api, "word", kind="user"),
                    what="the index caught up")
    assert sorted(hit["snippet"] for hit in hits) == ["**word** alpha", "**word** bravo", "**word** charlie"]
    assert len(found(api, "echo", kind="agent")) == 3  # each answer once: nothing indexed twice
