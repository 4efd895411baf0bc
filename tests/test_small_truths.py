"""Small untruths, each answered truthfully now: the field a bad cursor names, the catalog stream's
resume, the legacy stop's headers, the documented built-in agent, and writes that finish."""

import http.client
import os
import re
import tomllib
from pathlib import Path

from compozy.config import builtin_agents, builtin_providers, from_document
from compozy.http.routes import quoted_string
from compozy import paths
from tests.harness.daemon import auth_for
from tests.test_streams import Viewer, spath

ROOT = Path(__file__).resolve().parents[1]
QUOTED_STRING = re.compile(r'^"(?:[^"\\\x00-\x1f\x7f]|\\.)*"$')


def test_a_bad_after_sequence_is_named_as_after_sequence(api, port, workspace):
    session = api.call("POST", "/api/sessions", {"workspace_path": str(workspace)})[1]["session"]
    viewer = Viewer(port, spath(session, "stream") + "?after_sequence=abc")
    body = viewer.response.read()
    viewer.close()
    assert viewer.status == 400 and b'"field":"after_sequence"' in body.replace(b" ", b"")
    assert b"after_sequence must be a whole number" in body


def test_the_catalog_stream_resumes_after_last_event_id(api, port, workspace, tmp_path):
    viewer = Viewer(port, "/api/sessions/stream")
    first = api.call("POST", "/api/sessions", {"workspace_path": str(workspace)})[1]["session"]
    seen = viewer.read_until(lambda f: f["data"].get("session_id") == first["id"])
    viewer.close()
    other = tmp_path / "other"
    other.mkdir()
    second = api.call("POST", "/api/sessions", {"workspace_path": str(other)})[1]["session"]  # while away
    resumed = Viewer(port, "/api/sessions/stream", headers={"Last-Event-ID": seen[-1]["id"]})
    caught_up = resumed.read_until(lambda f: f["data"].get("session_id") == second["id"])
    resumed.close()
    assert int(caught_up[0]["id"]) == int(seen[-1]["id"]) + 1
    bad = Viewer(port, "/api/sessions/stream", headers={"Last-Event-ID": "abc"})
    bad.close()
    assert bad.status == 400


def test_the_legacy_stop_answer_has_no_media_type_and_a_quoted_warning(api, port, workspace):
    session = api.call("POST", "/api/sessions", {"workspace_path": str(workspace)})[1]["session"]
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    connection.request("POST", spath(session, "stop"), body="{}",
                       headers={"Content-Type": "application/json", **auth_for(port)})
    answer = connection.getresponse()
    answer.read()
    connection.close()
    assert answer.status == 204 and answer.getheader("Content-Type") is None
    assert answer.getheader("Deprecation") == "true"
    code, agent, text = answer.getheader("Warning").split(" ", 2)
    assert (code, agent) == ("299", "compozy") and QUOTED_STRING.match(text), text


def test_a_warning_text_is_always_one_quoted_string():
    assert quoted_string('say "hi" \\ now\r\nX-Injected: 1') == '"say \\"hi\\" \\\\ now??X-Injected: 1"'
    assert QUOTED_STRING.match(quoted_string("ünïcode ✓ \x00"))


def test_the_documented_built_in_agent_and_provider_are_the_code_s():
    text = (ROOT / "docs" / "configuration.md").read_text(encoding="utf-8")
    block = text.split("## Providers and agents", 1)[1].split("```toml", 1)[1].split("```", 1)[0]
    documented = tomllib.loads(block)
    assert documented["agents"]["general"] == {"provider": "reference"}
    assert from_document({"agents": {"general": documented["agents"]["general"]}}).agents["general"] == \
        builtin_agents()["general"]
    assert set(documented["providers"]) == set(builtin_providers())


def test_a_partial_write_to_a_file_is_continued(tmp_path, monkeypatch):
    real_write, calls = os.write, []

    def dribble(fd, data):  # the kernel may take less than it is given
        calls.append(len(data))
        return real_write(fd, bytes(data[:3]))
    monkeypatch.setattr(os, "write", dribble)
    target = tmp_path / "file.json"
    paths.write_private_file(target, b'{"whole": "document"}')
    monkeypatch.setattr(os, "write", real_write)
    assert target.read_bytes() == b'{"whole": "document"}' and len(calls) > 1
