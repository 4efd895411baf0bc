"""`compozy session stop|archive|remove ID [ID ...]` against a real daemon: each session handled on its own (its
own workspace), one line or one -o json result each, and an exit status that says whether all succeeded."""

import json

from tests.harness.cli import cli_json, run_cli


def new(home, workspace, *extra):
    return cli_json(home, "session", "new", "--cwd", str(workspace), *extra)["session"]["id"]


def state(home, session_id):
    return cli_json(home, "session", "get", session_id)["session"]


def test_stop_then_archive_a_mix_and_remove_reporting_each(home, daemon, workspace, tmp_path):
    other = tmp_path / "other"
    other.mkdir()
    running, idle, elsewhere = new(home, workspace), new(home, workspace), new(home, other)
    assert run_cli(home, "session", "prompt", running, "wake up").returncode == 0
    assert run_cli(home, "session", "prompt", elsewhere, "wake up too").returncode == 0
    assert state(home, elsewhere)["workspace_id"] != state(home, running)["workspace_id"]

    stopped = run_cli(home, "session", "stop", running, elsewhere[5:25], "--wait")
    assert stopped.returncode == 0, stopped.stderr
    lines = stopped.stdout.splitlines()
    assert [line.split(":")[0] for line in lines] == [running, elsewhere]
    assert all("stopped (verified=True" in line for line in lines)

    # Running and stopped together, one unknown: each result on its own, and the exit status says not all.
    live = new(home, workspace)
    assert run_cli(home, "session", "prompt", live, "hello").returncode == 0
    missing = "sess_01J00000000000000000000000"
    mixed = run_cli(home, "session", "archive", live, running, missing, "-o", "json")
    assert mixed.returncode == 1
    results = json.loads(mixed.stdout)["results"]
    assert [(r["session_id"], r["ok"]) for r in results] == [(live, False), (running, True), (missing, False)]
    assert results[0]["error"]["code"] == "session_not_stopped" and results[2]["error"]["code"] == "session_not_found"
    assert results[1]["session"]["archived"] is True and state(home, live)["archived"] is False

    archived = run_cli(home, "session", "archive", "--stop", live, idle, elsewhere)
    assert archived.returncode == 0, archived.stderr
    assert archived.stdout.splitlines() == [f"archived {live}", f"archived {idle}", f"archived {elsewhere}"]
    assert state(home, live)["state"] == "stopped" and state(home, live)["archived"] is True

    removed = run_cli(home, "session", "remove", running, missing, live, running)
    assert removed.returncode == 1
    assert removed.stdout.splitlines() == [f"removed {running}", f"removed {live}"]
    assert removed.stderr.startswith(f"Error: session_not_found: {missing}: ")
    listed = cli_json(home, "session", "list", "--archive", "include")["sessions"]
    assert sorted(s["id"] for s in listed) == sorted([idle, elsewhere])


def test_one_id_prints_what_it_always_printed(home, daemon, workspace):
    session_id = new(home, workspace)
    document = cli_json(home, "session", "stop", session_id)
    assert document["session"]["id"] == session_id and "results" not in document
    assert run_cli(home, "session", "archive", session_id).stdout == f"archived {session_id}\n"
    refused = run_cli(home, "session", "remove", "sess_01J00000000000000000000000")
    assert refused.returncode == 1 and refused.stderr.startswith("Error: session_not_found: ")
