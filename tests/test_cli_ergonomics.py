"""The CLI as people use it from a terminal: stdin and file messages, usage errors exit 2, errors that
name their fix, `daemon start` idempotent with `run`'s flags, list headers only on a terminal, `-q`,
and colour only on a terminal without NO_COLOR. Every test runs the real `compozy` against a real daemon
(terminals through a pseudo-terminal)."""

import json

import pytest

from tests.harness.cli import cli_json, on_terminal, run_cli
from tests.test_daemon import free_port, terminate_pid


def new_session(home, workspace):
    created = run_cli(home, "session", "new", "--cwd", str(workspace), "-q")
    assert created.returncode == 0, created.stderr
    return created.stdout.strip()


def user_messages(home, sid):
    return [e["content"]["text"] for e in cli_json(home, "session", "events", sid, "--type", "user_message")["events"]]


def test_message_from_stdin_and_from_a_file(daemon, workspace, tmp_path):
    sid = new_session(daemon.home, workspace)
    piped = run_cli(daemon.home, "session", "prompt", sid, "-", input_text="summarize\nthis diff\n")
    assert piped.returncode == 0, piped.stderr
    task = tmp_path / "task.md"
    task.write_text("from a file\n", encoding="utf-8")
    from_file = run_cli(daemon.home, "session", "prompt", sid, "--file", str(task))
    assert from_file.returncode == 0, from_file.stderr
    assert user_messages(daemon.home, sid) == ["summarize\nthis diff", "from a file"]
    assert "echo: from a file" in from_file.stdout


@pytest.mark.parametrize("args", [
    ("session", "prompt"),                                   # a missing argument
    ("session", "list", "--no-such-flag"),                   # an unknown flag
    ("session", "list", "--state", "sleeping"),              # a value outside the choices
    ("session", "prompt", "sess_x", "hi", "--file", "-"),    # MESSAGE and --file together
    ("session", "prompt", "sess_x"),                         # no message at all
], ids=["missing-argument", "unknown-flag", "bad-choice", "message-and-file", "no-message"])
def test_usage_errors_exit_2_with_the_usage_and_one_error_line(home, args):
    result = run_cli(home, *args)
    assert result.returncode == 2, result.stdout + result.stderr
    assert result.stdout == ""
    assert result.stderr.startswith("Usage: compozy ")
    assert result.stderr.strip().splitlines()[-1].startswith("Error: invalid_request: ")


@pytest.mark.parametrize("args,said", [
    (("storage", "--dry-run"), "--dry-run goes with --retention"),
    (("search",), "search needs Q, e.g. compozy search 'migration AND postgres'"),
    (("search", "words", "--reindex"), "Q does not go with --reindex"),
    (("session", "input", "edit", "sess_x", "queue_x", "new text", "--message-id", "m1"),
     "--message-id and --idempotency-key go together"),
    (("session", "input", "steer", "sess_x", "queue_x"), "Missing option '--expected-turn-id'."),
    (("export", "-o", "all.zip"), "name --workspace or --lineage, one of the two"),
], ids=["dry-run-alone", "search-without-query", "reindex-with-query", "identity-half", "steer-without-turn",
        "export-of-nothing"])
def test_generated_commands_refuse_what_their_operations_refuse_before_any_call(home, args, said):
    result = run_cli(home, *args)  # no daemon runs: the refusal comes before any request
    assert result.returncode == 2, result.stdout + result.stderr
    assert result.stderr.strip().splitlines()[-1] == f"Error: invalid_request: {said}"


def test_generated_commands_pick_their_operation_and_send_what_they_state(daemon, workspace, tmp_path):
    home = daemon.home
    sid = new_session(home, workspace)
    session = cli_json(home, "session", "get", sid)["session"]
    assert cli_json(home, "session", "get", sid, "--workspace", session["workspace_id"])["session"]["id"] == sid
    (tmp_path / "other").mkdir()
    added = run_cli(home, "workspace", "add", "other", "other", cwd=tmp_path)  # a relative PATH, made absolute
    assert added.returncode == 0, added.stderr
    assert added.stdout.split()[2] == str(tmp_path / "other")
    elsewhere = run_cli(home, "session", "get", sid, "--workspace", "other")  # the scoped read: not found there
    assert elsewhere.returncode == 1 and elsewhere.stderr.startswith("Error: session_not_found: ")
    assert cli_json(home, "session", "attention", sid)["attention"]["turn_finished"] is True  # the stated default
    assert cli_json(home, "session", "attention", sid, "--no-turn-finished")["attention"]["turn_finished"] is False
    written = run_cli(home, "session", "export", sid, "-o", str(tmp_path / "s.md"))
    assert written.returncode == 0 and (tmp_path / "s.md").read_text().startswith("#")
    assert cli_json(home, "usage")["usage"]["group_by"] == "agent"


def test_daemon_unavailable_names_the_command_that_fixes_it(home):
    result = run_cli(home, "session", "list")
    assert result.returncode == 1
    assert result.stderr.startswith("Error: daemon_unavailable: ")
    assert "`compozy daemon start`" in result.stderr


def test_daemon_start_takes_runs_flags_and_reports_a_running_daemon(home, tmp_path):
    socket_path = tmp_path / "elsewhere.sock"
    pid = None
    try:
        started = run_cli(home, "daemon", "start", "--no-http", "--socket", str(socket_path))
        assert started.returncode == 0, started.stdout + started.stderr
        info = json.loads((home / "daemon.json").read_text())
        pid = info["pid"]
        assert info["socket"] == str(socket_path) and not info.get("http")
        assert socket_path.exists()

        again = run_cli(home, "daemon", "start", "--http", f"127.0.0.1:{free_port()}")
        assert again.returncode == 0, again.stdout + again.stderr
        assert again.stdout.strip() == f"compozy daemon already running (pid {pid}) at {socket_path}"
        assert again.stderr == ""
        assert json.loads((home / "daemon.json").read_text())["pid"] == pid  # left alone
    finally:
        if pid is not None:
            terminate_pid(pid)


def test_daemon_start_passes_the_token_outside_argv(home):
    pid = None
    try:
        started = run_cli(home, "daemon", "start", "--http", "127.0.0.1:0", extra_env={"COMPOZY_TOKEN": "s3cret-tok"})
        assert started.returncode == 0, started.stderr
        pid = json.loads((home / "daemon.json").read_text())["pid"]
        with open(f"/proc/{pid}/cmdline", "rb") as handle:
            assert b"s3cret-tok" not in handle.read()
    finally:
        if pid is not None:
            terminate_pid(pid)


def test_daemon_start_failure_prints_the_daemons_own_error_only(home):
    (home / "config.toml").write_text('[session.busy_input]\nqueue_cap = "ten"\n')
    failed = run_cli(home, "daemon", "start", "--http", "127.0.0.1:0")
    assert failed.returncode == 1
    assert "session.busy_input.queue_cap" in failed.stderr
    assert len(failed.stderr.strip().splitlines()) <= 3, failed.stderr


def test_lists_have_a_header_on_a_terminal_and_bare_rows_in_a_pipe(daemon, workspace):
    sid = new_session(daemon.home, workspace)
    shown, status = on_terminal(daemon.home, "session", "list", extra_env={"NO_COLOR": "1"})
    assert status == 0, shown
    header, row = shown.strip().splitlines()
    assert header.split() == ["ID", "STATE", "AGENT", "RUNTIME", "NAME"]
    assert row.startswith(sid)
    piped = run_cli(daemon.home, "session", "list")
    assert piped.stdout.splitlines() == [row]
    quiet = run_cli(daemon.home, "session", "list", "-q")
    assert quiet.stdout == sid + "\n"
    workspaces, _ = on_terminal(daemon.home, "workspace", "list", "-q")
    assert workspaces.strip() == workspace.name


def test_colour_only_on_a_terminal_and_never_with_no_color(daemon, workspace):
    new_session(daemon.home, workspace)
    coloured, _ = on_terminal(daemon.home, "session", "list")
    assert "\x1b[" in coloured
    plain, _ = on_terminal(daemon.home, "session", "list", extra_env={"NO_COLOR": "1"})
    assert "\x1b[" not in plain
    assert "\x1b[" not in run_cli(daemon.home, "session", "list").stdout


def test_a_profile_is_a_daemon_and_home_of_its_own_under_the_main_one(daemon, workspace):
    home = daemon.home
    pid = None
    try:
        started = run_cli(home, "--profile", "work", "daemon", "start")  # a free port: the main daemon runs too
        assert started.returncode == 0, started.stdout + started.stderr
        profile_home = home / "profiles" / "work"
        info = json.loads((profile_home / "daemon.json").read_text())
        pid = info["pid"]
        assert info["socket"] == str(profile_home / "daemon.sock")
        assert oct((home / "profiles").stat().st_mode & 0o777) == "0o700"
        sid = cli_json(home, "--profile", "work", "session", "new", "--cwd", str(workspace))["session"]["id"]
        assert (profile_home / "sessions" / sid).is_dir()
        by_env = run_cli(home, "session", "list", "-q", extra_env={"COMPOZY_PROFILE": "work"})
        assert by_env.stdout.split() == [sid]
        assert run_cli(home, "session", "list", "-q").stdout == ""  # the main daemon knows nothing of it
        assert run_cli(home, "--profile", "../x", "session", "list").returncode == 2
    finally:
        if pid is not None:
            terminate_pid(pid)


def test_history_all_pages_back_to_the_first_message(daemon, workspace):
    sid = new_session(daemon.home, workspace)
    for word in ("one", "two", "three"):
        assert run_cli(daemon.home, "session", "prompt", sid, word).returncode == 0
    newest = cli_json(daemon.home, "session", "history", sid, "--limit", "2")
    assert [m["text"] for m in newest["messages"]] == ["three", "echo: three"] and newest["page"]["has_more"]
    older = cli_json(daemon.home, "session", "history", sid, "--limit", "2",
                     "--before", str(newest["page"]["before_sequence"]))
    assert [m["text"] for m in older["messages"]] == ["two", "echo: two"]
    every = cli_json(daemon.home, "session", "history", sid, "--limit", "2", "--all")
    assert [m["text"] for m in every["messages"]] == ["one", "echo: one", "two", "echo: two", "three", "echo: three"]
    assert every["page"]["has_more"] is False and every["page"]["before_sequence"] == 1
    refused = run_cli(daemon.home, "session", "history", sid, "--all", "--after", "3")
    assert refused.returncode == 2, refused.stderr


# -- first contact (issue 28, item 21) ---------------------------------------------------------------


def test_new_from_a_folder_holding_the_daemons_home_explains_and_suggests_cwd(daemon):
    result = run_cli(daemon.home, "session", "new", cwd=daemon.home.parent)
    assert result.returncode == 1
    assert f"it contains the compozy home {daemon.home}" in result.stderr
    assert "the daemon's sessions, logs and secret" in result.stderr
    assert f"Without --cwd the current directory ({daemon.home.parent}) is the workspace: run this from the " \
           f"project's folder or pass --cwd PATH" in result.stderr


def test_a_chained_command_whose_first_part_failed_never_ends_in_a_generic_404(daemon):
    result = run_cli(daemon.home, "session", "prompt", "", "hello")  # "$(compozy session new -q)" that failed
    assert result.returncode == 2
    assert "SESSION_ID: is empty: if it came from another command" in result.stderr
    for method, path in (("GET", "/api/nope"), ("POST", "/api/workspaces/w/sessions//prompt"), ("GET", "/nope")):
        try:
            daemon.client().call(method, path, body={} if method == "POST" else None)
        except Exception as exc:  # noqa: BLE001 (CompozyError: the daemon's JSON error body)
            assert exc.code in ("endpoint_not_found", "method_not_allowed"), exc
            assert "requested URL" not in exc.message and "/api/openapi.json" in exc.message, exc.message
            assert ("a part of the path is empty" in exc.message) == ("//" in path)
        else:
            raise AssertionError(f"{method} {path} answered")


def test_history_shows_the_message_ids_rewind_and_fork_take(daemon, workspace):
    sid = new_session(daemon.home, workspace)
    assert run_cli(daemon.home, "session", "prompt", sid, "hello", "--message-id", "msg_01M8Z0AAAAAAAAAAAAAAAAAAAA",
                   "--idempotency-key", "k1").returncode == 0
    shown = run_cli(daemon.home, "session", "history", sid).stdout
    assert "[user msg_01M8Z0AAAAAAAAAAAAAAAAAAAA] hello" in shown
    assert "[assistant " in shown and "] echo: hello" in shown


def test_removing_an_active_session_asks_first(daemon, workspace):
    sid = new_session(daemon.home, workspace)
    refused = run_cli(daemon.home, "session", "remove", sid)  # no terminal to ask on
    assert refused.returncode == 2
    assert f"session {sid} is active (general): removing stops it and deletes its history for good; pass --yes" \
        in refused.stderr
    output, status = on_terminal_answering(daemon.home, "n", "session", "remove", sid)
    assert status == 1 and "Remove it? [y/N]" in output and "not removed" in output
    assert cli_json(daemon.home, "session", "get", sid)["session"]["state"] == "active"
    output, status = on_terminal_answering(daemon.home, "y", "session", "remove", sid)
    assert status == 0 and f"removed {sid}" in output
    stopped = new_session(daemon.home, workspace)
    assert run_cli(daemon.home, "session", "stop", stopped, "--wait").returncode == 0
    assert run_cli(daemon.home, "session", "remove", stopped).returncode == 0  # stopped: nothing to confirm
    other = new_session(daemon.home, workspace)
    assert run_cli(daemon.home, "session", "remove", other, "--yes").returncode == 0


def on_terminal_answering(home, answer, *args):
    from tests.harness.cli import spawn_cli
    import pexpect
    child = spawn_cli(home, *args)
    child.expect(r"\[y/N\]")
    child.sendline(answer)
    child.expect(pexpect.EOF)
    child.close()
    return child.logfile_read.getvalue().replace("\r\n", "\n"), child.exitstatus


def test_list_rows_show_the_runtime_the_page_names(daemon, workspace):
    """The RUNTIME column: runtime.display (agent defaults here, then what ran), then the runtime's status."""
    (daemon.home / "config.toml").write_text('[agents.general]\nprovider = "reference"\nmodel = "echo-2"\n')
    assert run_cli(daemon.home, "daemon", "reload").returncode == 0
    sid = new_session(daemon.home, workspace)
    assert "reference echo-2 (unbound)" in run_cli(daemon.home, "session", "list").stdout
    assert run_cli(daemon.home, "session", "prompt", sid, "hi").returncode == 0
    assert "reference echo-2 medium normal (ready)" in run_cli(daemon.home, "session", "list").stdout
