"""docs/agents.md says exactly what the interop suite configures (tests/interop/adapters.py): each recipe runs
the pinned package the suite installs (tests/interop/registry.json), points the agent at a model endpoint
with the same env and the same files under $HOME, and names what it writes there. Runs in CI (no npm)."""

import json
import re
import tomllib
from pathlib import Path

import pytest

from tests.interop.adapters import ADAPTERS, DOC_BASE, DOC_KEY

ROOT = Path(__file__).resolve().parents[2]
DOC = (ROOT / "docs" / "agents.md").read_text(encoding="utf-8")
SECTIONS = {"claude": "Claude Code", "codex": "Codex", "gemini": "Gemini CLI", "opencode": "opencode",
            "qwen": "Qwen Code"}
REGISTRY = json.loads((Path(__file__).resolve().parent / "registry.json").read_text())


def section(title):
    match = re.search(rf"^## {re.escape(title)}\n(.*?)(?=^## |\Z)", DOC, re.S | re.M)
    assert match, f"docs/agents.md has no section {title!r}"
    return match.group(1)


@pytest.mark.parametrize("adapter", ADAPTERS, ids=lambda a: a.name)
def test_the_recipe_runs_the_pinned_package_the_suite_installs(adapter):
    blocks = re.findall(r"```toml\n(.*?)```", section(SECTIONS[adapter.name]), re.S)
    recipe = tomllib.loads(blocks[0])
    assert recipe["providers"][adapter.name]["command"] == ["npx", "-y", f"{adapter.package}@{adapter.version}",
                                                            *adapter.args]
    entry = next(e for e in REGISTRY["agents"] if e["id"] == adapter.registry_id)
    assert entry["version"] == adapter.version
    assert entry["distribution"]["npx"] == {"package": f"{adapter.package}@{adapter.version}",
                                            **({"args": list(adapter.args)} if adapter.args else {})}


@pytest.mark.parametrize("adapter", ADAPTERS, ids=lambda a: a.name)
def test_the_endpoint_settings_are_the_suites(adapter):
    text = section(SECTIONS[adapter.name])
    envs = [tomllib.loads(block)["env"] for block in re.findall(r"```toml\n(env = .*?)```", text, re.S)]
    assert envs == ([adapter.environment(DOC_BASE, DOC_KEY)] if adapter.env else [])
    files = dict(re.findall(r"File `~/(.+?)`:\n\n```\w*\n(.*?)```", text, re.S))
    assert files == adapter.home_files(DOC_BASE, DOC_KEY)


@pytest.mark.parametrize("adapter", ADAPTERS, ids=lambda a: a.name)
def test_what_it_writes_under_home_is_named(adapter):
    line = re.search(r"^Writes under `\$HOME`: (.+)$", section(SECTIONS[adapter.name]), re.M)
    assert line and re.findall(r"`~/([^`]+)`", line.group(1)) == list(adapter.writes)


def test_the_table_of_measured_adapters_lists_each_one_at_its_version():
    table = section("Tested with the real adapters")
    for adapter in ADAPTERS:
        assert re.search(rf"^\| {adapter.name} {re.escape(adapter.version)} \|", table, re.M), adapter.name
