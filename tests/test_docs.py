"""Docs that cannot lag: every setting, every error code and every CLI command is documented where a
user looks for it, and every registered error code is one the daemon can actually answer."""

import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from compozy.config_settings import SETTINGS
from compozy.errors import ERRORS
from compozy.cli.main import cli
from tests.harness.commands import cli_commands, cli_groups

ROOT = Path(__file__).resolve().parents[1]
SOURCES = {path: path.read_text(encoding="utf-8") for path in (ROOT / "compozy").rglob("*.py")
           if path.name != "errors.py"}
COMMANDS = cli_commands()
ERROR_ROWS = re.compile(r"^\| `([a-z_]+)` \| (\d{3}) \|", re.MULTILINE)


@pytest.mark.parametrize("setting", SETTINGS, ids=[s.name for s in SETTINGS])
def test_every_setting_is_documented(setting):
    assert f"`{setting.name}`" in (ROOT / "docs" / "configuration.md").read_text(encoding="utf-8")


@pytest.mark.parametrize("code", sorted(ERRORS))
def test_every_registered_error_code_is_raised_somewhere(code):
    assert any(f'"{code}"' in text for text in SOURCES.values()), f"nothing in compozy/ answers {code}"


def test_the_errors_table_lists_every_code_with_its_status():
    rows = {code: int(status) for code, status in ERROR_ROWS.findall((ROOT / "docs" / "errors.md").read_text())}
    assert rows == {code: kind.status for code, kind in ERRORS.items()}


@pytest.mark.parametrize("path", sorted(COMMANDS))
def test_every_cli_command_help_has_an_example(path):
    result = CliRunner().invoke(cli, [*path.split(), "--help"], prog_name="compozy")
    assert result.exit_code == 0, result.output
    _, found, example = result.output.partition("Example:\n")
    assert found, f"compozy {path} --help has no Example: block"
    assert f"    compozy {path}" in example.split("\n\n")[0], f"the example of compozy {path} does not run it"


@pytest.mark.parametrize("path", sorted(cli_groups()))
def test_every_cli_group_help_has_an_example(path):
    result = CliRunner().invoke(cli, [*path.split(), "--help"], prog_name="compozy")
    assert result.exit_code == 0, result.output
    _, found, example = result.output.partition("Example:\n")
    assert found, f"compozy {path} --help has no Example: block"
    assert f"compozy {path}".strip() in example.split("\n\n")[0], f"the example of compozy {path} does not use it"


def test_ci_runs_exactly_the_readme_test_command_in_a_fresh_environment():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    commands = re.findall(r"^    (python3 -m venv \.venv .*)$", readme, re.MULTILINE)
    assert len(commands) == 2, "the first screen has two one-line commands, each making its own .venv"
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()
    assert commands[1] in ci, "CI must call exactly the README's test command"
    assert ci.index("rm -rf .venv") < ci.index(commands[1]), "CI starts from a new virtual environment"
