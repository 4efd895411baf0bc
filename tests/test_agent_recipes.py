"""docs/agents.md: every recipe is a config.toml fragment the daemon's loader accepts. The recipes run for real
in the opt-in interop suite (tests/interop, COMPOZY_INTEROP=1), which also holds them to its configuration."""

import re
import tomllib
from pathlib import Path

import pytest

from compozy.config import from_document
from compozy.launch_aliases import resolve

ROOT = Path(__file__).resolve().parents[1]
AGENTS_DOC = (ROOT / "docs" / "agents.md").read_text(encoding="utf-8")
RECIPE = re.compile(r"```toml\n(\[providers\..*?)```", re.S)
RECIPES = {body.split("\n", 1)[0]: RECIPE.search(body).group(1)
           for body in re.split(r"^## ", AGENTS_DOC, flags=re.M)[1:] if RECIPE.search(body)}


def test_the_doc_has_a_recipe_for_each_agent_the_issue_names():
    assert set(RECIPES) == {"Claude Code", "Codex", "Gemini CLI", "opencode", "Qwen Code", "Any other ACP agent",
                            "Launch aliases (Cursor)"}


@pytest.mark.parametrize("title", sorted(RECIPES))
def test_every_recipe_is_a_config_the_daemon_accepts(title):
    config = from_document(tomllib.loads(RECIPES[title]), f"docs/agents.md ({title})")
    added = set(config.agents) - {"general"}
    assert len(added) == 1, added
    agent = config.agent(added.pop())
    assert config.provider(agent.provider).command


def test_the_launch_alias_example_resolves_as_documented():
    config = from_document(tomllib.loads(RECIPES["Launch aliases (Cursor)"]))
    cursor = config.provider("cursor")
    assert resolve(cursor, {"model": "grok-4.6", "speed": "fast"}).args == ("--model", "grok-4.6-fast")
    assert resolve(cursor, {"model": "grok-4.6", "reasoning_effort": "high"}).args == ("--model", "grok-4.6")
