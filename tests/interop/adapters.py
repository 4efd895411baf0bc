"""The five real adapters as the interop suite configures them: one source for the suite and for the recipes
of docs/agents.md (tests/interop/test_recipes_match.py holds the docs to exactly this).

Each adapter: its registry id in tests/interop/registry.json (npm package at a pinned version), the API of
the fake model server it speaks, the environment that points it at a model endpoint (`{base}` is the
server's address, `{key}` any key), the files it needs under $HOME for that, and the folders it writes
under $HOME by itself.
"""

from dataclasses import dataclass, field

DOC_BASE = "http://127.0.0.1:8080"  # the endpoint the recipes show
DOC_KEY = "sk-your-key"


@dataclass(frozen=True)
class Adapter:
    name: str               # the agent's name in config.toml and the docs' section
    registry_id: str
    package: str
    version: str
    args: tuple
    api: str                # anthropic | openai-responses | openai-chat | gemini
    env: dict               # values with {base} and {key}
    files: dict = field(default_factory=dict)  # path under $HOME -> content with {base} and {key}
    writes: tuple = ()      # what it creates under $HOME by itself
    auth_method: str | None = None  # what the direct driver authenticates with (the daemon finds it itself)

    def environment(self, base, key):
        return {name: value.format(base=base, key=key) for name, value in self.env.items()}

    def home_files(self, base, key):
        return {path: text.format(base=base, key=key) for path, text in self.files.items()}


CODEX_CONFIG = '''openai_base_url = "{base}/v1"
'''

OPENCODE_CONFIG = '''{{
  "$schema": "https://opencode.ai/config.json",
  "model": "custom/custom-model",
  "provider": {{
    "custom": {{
      "npm": "@ai-sdk/openai-compatible",
      "name": "custom",
      "options": {{ "baseURL": "{base}/v1", "apiKey": "{key}" }},
      "models": {{ "custom-model": {{ "name": "custom-model" }} }}
    }}
  }}
}}
'''

ADAPTERS = (
    Adapter("claude", "claude-acp", "@agentclientprotocol/claude-agent-acp", "0.49.0", (), "anthropic",
            {"ANTHROPIC_BASE_URL": "{base}", "ANTHROPIC_API_KEY": "{key}"}, writes=(".claude", ".claude.json")),
    Adapter("codex", "codex-acp", "@zed-industries/codex-acp", "0.16.0", (), "openai-responses",
            {"OPENAI_API_KEY": "{key}"}, {".codex/config.toml": CODEX_CONFIG},
            writes=(".codex",), auth_method="openai-api-key"),
    Adapter("gemini", "gemini", "@google/gemini-cli", "0.61.0", ("--acp",), "gemini",
            {"GEMINI_API_KEY": "{key}", "GOOGLE_GEMINI_BASE_URL": "{base}"}, writes=(".gemini",)),
    Adapter("opencode", "opencode", "opencode-ai", "1.18.33", ("acp",), "openai-chat", {},
            {".config/opencode/opencode.json": OPENCODE_CONFIG}, writes=(".local/share/opencode",)),
    Adapter("qwen", "qwen-code", "@qwen-code/qwen-code", "0.15.10", ("--acp",), "openai-chat",
            {"OPENAI_API_KEY": "{key}", "OPENAI_BASE_URL": "{base}/v1", "OPENAI_MODEL": "custom-model"},
            writes=(".qwen",)),
)
BY_NAME = {adapter.name: adapter for adapter in ADAPTERS}
