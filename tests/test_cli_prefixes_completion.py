"""Session IDs as unique prefixes on every command that takes one, and shell completion of commands,
session IDs, workspace names and agent names, through the real CLI against a real daemon."""

import os
import shutil
import subprocess

import pytest

from tests.harness.cli import cli_json, run_cli


def create(home, workspace, name=None):
    return cli_json(home, "session", "new", "--cwd", str(workspace), *(["--name", name] if name else []))["session"]


def distinct_prefix(sid, others):
    """The shortest prefix of sid's ULID that no other ID shares."""
    ulid = sid[len("sess_"):]
    for length in range(1, 27):
        if not any(o[len("sess_"):].startswith(ulid[:length]) for o in others):
            return ulid[:length]
    raise AssertionError("no distinct prefix")


def test_a_unique_prefix_with_or_without_sess_names_the_session(daemon, workspace):
    first, second = create(daemon.home, workspace), create(daemon.home, workspace)
    prefix = distinct_prefix(first["id"], [second["id"]])
    for typed in (prefix, "sess_" + prefix, prefix.lower(), first["id"]):
        assert cli_json(daemon.home, "session", "get", typed)["session"]["id"] == first["id"], typed
    prompted = run_cli(daemon.home, "session", "prompt", prefix, "hello")
    assert prompted.returncode == 0, prompted.stderr
    assert "echo: hello" in prompted.stdout
    events = cli_json(daemon.home, "session", "events", "sess_" + prefix, "--type", "done")["events"]
    assert len(events) == 1 and events[0]["session_id"] == first["id"]
    child = cli_json(daemon.home, "session", "new", "--cwd", str(workspace), "--parent", prefix)["session"]
    assert child["lineage"]["parent_session_id"] == first["id"]
    listed = cli_json(daemon.home, "session", "list", "--parent", prefix)["sessions"]
    assert [s["id"] for s in listed] == [child["id"]]


def test_an_ambiguous_prefix_is_invalid_request_naming_the_candidates(daemon, workspace):
    ids = {create(daemon.home, workspace)["id"] for _ in range(2)}
    common = os.path.commonprefix([i[len("sess_"):] for i in ids])
    assert common, "two IDs made together share their time prefix"
    result = run_cli(daemon.home, "session", "status", common)
    assert result.returncode == 1
    assert result.stderr.startswith("Error: invalid_request: ")
    assert "ambiguous" in result.stderr
    assert all(i in result.stderr for i in ids)


def test_a_prefix_nothing_starts_with_is_session_not_found(daemon, workspace):
    create(daemon.home, workspace)
    result = run_cli(daemon.home, "session", "status", "ZZZZ")
    assert result.returncode == 1
    assert result.stderr.startswith("Error: session_not_found: ")


def complete(home, *words):
    """What `compozy` offers for the last word, through click's bash protocol (as the script asks)."""
    env = {"COMP_WORDS": " ".join(("compozy", *words)), "COMP_CWORD": str(len(words)),
           "_COMPOZY_COMPLETE": "bash_complete"}
    result = run_cli(home, extra_env=env)
    assert result.returncode == 0, result.stderr
    return [line.split(",", 1)[1] for line in result.stdout.splitlines() if line.startswith("plain,")]


def test_completion_offers_commands_session_ids_workspaces_and_agents(daemon, workspace):
    session = create(daemon.home, workspace, name="alpha")
    assert complete(daemon.home, "session", "sta") == ["status"]
    assert complete(daemon.home, "session", "status", "sess_") == [session["id"]]
    assert complete(daemon.home, "session", "status", session["id"][5:9]) == [session["id"][5:]]
    assert complete(daemon.home, "session", "new", "--workspace", "") == [workspace.name]
    assert complete(daemon.home, "session", "new", "--agent", "") == ["general"]


def test_completion_without_a_daemon_offers_nothing_quietly(home):
    assert complete(home, "session", "status", "sess_") == []


@pytest.mark.parametrize("shell", ["bash", "zsh", "fish"])
def test_completion_scripts_load_in_their_shell(home, shell):
    result = run_cli(home, "completion", shell)
    assert result.returncode == 0, result.stderr
    assert "_COMPOZY_COMPLETE" in result.stdout
    if shutil.which(shell) is None:
        pytest.skip(f"{shell} is not installed")
    script = home / f"compozy.{shell}"
    script.write_text(result.stdout)
    check = {"bash": ["bash", "-c", f"source {script} && complete -p compozy"],
             "zsh": ["zsh", "-n", str(script)], "fish": ["fish", "-n", str(script)]}[shell]
    assert subprocess.run(check, capture_output=True, timeout=30).returncode == 0
