"""`compozy config set` and `config settings` (PUT and GET /api/settings) against a real daemon: the one key
changes in config.toml and every other line stays, the change applies without a restart, and what cannot be
changed safely is refused with the file left as it was."""

import json

from tests.harness.cli import cli_json, run_cli
from tests.test_cli_agents import write_config

HAND_WRITTEN = '''# my daemon
default_agent = "coder"   # the one I use

[providers.ref2]
command = ["python3", "-m", "compozy.agents.reference"]  # built in
env = {EXAMPLE_API_KEY = "s3cret-value"}

[agents.coder]
provider = "ref2"

[session.supervision]
# an hour: my agents start slowly
idle_release_after = "1h"   # keep them
quiet_after = '45m'
'''


def test_set_changes_one_line_and_applies_at_once(home, daemon):
    path = write_config(home, HAND_WRITTEN)
    run_cli(home, "daemon", "reload")
    changed = cli_json(home, "config", "set", "session.supervision.idle_release_after", "10m")
    assert changed["setting"] == {**changed["setting"], "value": "10m", "set": True, "title": "Pause idle agents after"}
    assert path.read_text() == HAND_WRITTEN.replace('idle_release_after = "1h"', 'idle_release_after = "10m"')
    assert path.stat().st_mode & 0o777 == 0o600

    added = run_cli(home, "config", "set", "session.busy_input.default_mode", "queue")
    assert added.returncode == 0 and added.stdout == "session.busy_input.default_mode = queue (applied)\n"
    assert path.read_text() == HAND_WRITTEN.replace('idle_release_after = "1h"', 'idle_release_after = "10m"') \
        + '\n[session.busy_input]\ndefault_mode = "queue"\n'
    listed = {s["name"]: s for s in cli_json(home, "config", "settings")["settings"]}
    assert listed["session.supervision.quiet_after"]["value"] == "45m"
    assert listed["session.busy_input.default_mode"]["value"] == "queue"
    assert run_cli(home, "config", "check").returncode == 0
    text = run_cli(home, "config", "settings").stdout
    assert "session.supervision.stop_grace = 10m  (default)" in text and "Pause idle agents after" in text


def test_what_cannot_be_changed_safely_is_refused_and_the_file_stays(home, daemon):
    inline = '[session]\nsupervision = { idle_release_after = "1h" }\n'
    path = write_config(home, inline)
    refused = run_cli(home, "config", "set", "session.supervision.idle_release_after", "5m")
    assert refused.returncode == 1 and refused.stderr.startswith("Error: config_not_editable: ")
    assert "change it by hand" in refused.stderr and path.read_text() == inline

    broken = inline + "oops = \n"
    write_config(home, broken)  # changed on disk after the daemon loaded it, and not valid
    refused = run_cli(home, "config", "set", "session.supervision.idle_release_after", "5m")
    assert refused.returncode == 1 and "config_not_editable" in refused.stderr and path.read_text() == broken

    path.unlink()
    wrong = run_cli(home, "config", "set", "permissions.mode", "approve-all")
    assert wrong.returncode == 1 and wrong.stderr.startswith("Error: setting_not_editable: ")
    assert not path.exists()
    made = run_cli(home, "config", "set", "session.supervision.stop_grace", "0")
    assert made.returncode == 0 and path.read_text() == '[session.supervision]\nstop_grace = "0"\n'
    _, document = daemon.client().call("GET", "/api/settings")
    assert [s["value"] for s in document["settings"] if s["name"].endswith("stop_grace")] == ["0"]
    assert json.loads(run_cli(home, "config", "check", "-o", "json").stdout)["settings"][
        "session.supervision.stop_grace"] == "0"
