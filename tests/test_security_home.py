"""The home stays the user's (issue 21): a profile's daemon refuses the main home that holds every
profile (medium 3), and every load of config.toml, `daemon reload` included, re-checks the home's and
the file's owner and mode and never follows a link (low).
"""

import json
import os
import signal
import tempfile
from pathlib import Path

import pytest

from compozy.session.records.workspaces import protected_homes
from tests.harness.api import wait_for
from tests.harness.cli import run_cli

VALID = '[permissions]\nmode = "deny-all"\n'


def test_a_profile_protects_the_main_home_that_holds_every_profile(tmp_path):
    main = tmp_path / "main"
    (main / "profiles" / "p").mkdir(parents=True)
    assert str(main.resolve()) in protected_homes(str(main / "profiles" / "p"))
    assert str(tmp_path.resolve()) not in protected_homes(str(main))  # the main home's parent is not special


def test_a_profiles_daemon_refuses_the_main_home_and_everything_in_it(home, tmp_path):
    for folder in ("profiles/q", "sessions/sess_01ARZ3NDEKTSV4RRFFQ69G5FAV", "logs"):
        (home / folder).mkdir(parents=True, mode=0o700)
    started = run_cli(home, "--profile", "p", "daemon", "start")
    assert started.returncode == 0, started.stderr
    try:
        inside = "lies inside the compozy home " + str(home.resolve())  # not the profile's own: the main one
        refused = {home / "profiles" / "q": inside, home / "sessions" / "sess_01ARZ3NDEKTSV4RRFFQ69G5FAV": inside,
                   home / "logs": inside, home: "contains", home.parent: "contains"}
        for folder, why in refused.items():
            result = run_cli(home, "--profile", "p", "session", "new", "--cwd", str(folder))
            assert result.returncode == 1, (folder, result.stdout)
            assert result.stderr.startswith("Error: invalid_request: ") and why in result.stderr, result.stderr
            added = run_cli(home, "--profile", "p", "workspace", "add", "w", str(folder))
            assert added.returncode == 1 and "cannot be a workspace" in added.stderr, added.stderr
        elsewhere = tmp_path / "ws"
        elsewhere.mkdir()
        assert run_cli(home, "--profile", "p", "session", "new", "--cwd", str(elsewhere)).returncode == 0
    finally:
        run_cli(home, "--profile", "p", "daemon", "stop")


def _reload_by_signal(daemon):
    """SIGHUP straight to the daemon (no CLI check first): the daemon's own outcome in daemon.json."""
    before = json.loads((daemon.home / "daemon.json").read_text())
    os.kill(daemon.process.pid, signal.SIGHUP)

    def outcome():
        now = json.loads((daemon.home / "daemon.json").read_text())
        changed = (now.get("config_loaded_at"), now.get("config_failed_at")) != \
                  (before.get("config_loaded_at"), before.get("config_failed_at"))
        return now if changed else None
    return wait_for(outcome, what="the daemon's reload")


@pytest.fixture
def config(daemon):
    path = daemon.home / "config.toml"
    path.write_text(VALID)
    path.chmod(0o600)
    yield path
    daemon.home.chmod(0o700)


def test_reload_rechecks_the_owner_and_mode_of_the_home_and_config(daemon, config):
    assert run_cli(daemon.home, "daemon", "reload").returncode == 0
    for loosen, restore, problem in ((lambda: config.chmod(0o666), lambda: config.chmod(0o600), "writable by group"),
                                     (lambda: daemon.home.chmod(0o777), lambda: daemon.home.chmod(0o700),
                                      "writable by group")):
        loosen()
        try:
            result = run_cli(daemon.home, "daemon", "reload")
            assert result.returncode == 1 and problem in result.stderr, result.stderr
            assert problem in _reload_by_signal(daemon)["config_error"]
        finally:
            restore()
    assert _reload_by_signal(daemon)["config_error"] is None


def test_a_config_that_is_a_link_is_refused_at_reload_and_at_start_without_following_it(daemon, config, tmp_path):
    shared = Path(tempfile.mkdtemp(prefix="compozy-shared-"))  # world-writable, as /tmp is
    shared.chmod(0o1777)
    planted = shared / "config.toml"
    planted.write_text('[[hooks]]\nevent = "session.post_create"\ncommand = "touch /tmp/compozy-pwned"\n')
    planted.chmod(0o600)
    private = tmp_path / "private.toml"  # a link anywhere is refused, even to a file of ours
    private.write_text(VALID)
    private.chmod(0o600)
    try:
        for target in (planted, private):
            config.unlink()
            config.symlink_to(target)
            result = run_cli(daemon.home, "daemon", "reload")
            assert result.returncode == 1 and "symbolic link" in result.stderr, result.stderr
            assert "symbolic link" in _reload_by_signal(daemon)["config_error"]
            checked = run_cli(daemon.home, "config", "check")
            assert checked.returncode == 1 and "symbolic link" in checked.stdout + checked.stderr
        daemon.stop()
        with pytest.raises(RuntimeError) as refused:
            daemon.start()
        assert "symbolic link" in str(refused.value)
    finally:
        planted.unlink()
        shared.rmdir()
