"""The home stays the user's (issue 21): a profile's daemon refuses the main home that holds every
profile (medium 3).
"""

from compozy.session.records.workspaces import protected_homes
from tests.harness.cli import run_cli


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
