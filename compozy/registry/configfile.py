"""Adding a provider and an agent to config.toml as text: what the file held (comments included) stays as it
was; the new tables are appended. `force` first removes the `[providers.NAME]` and `[agents.NAME]` tables
(and their sub-tables) an earlier add or a person wrote. The result is checked with the daemon's own loader
before it replaces the file (atomically, owner-only).
"""

import json
import re
import tomllib

from compozy.config import ConfigError, from_document
from compozy.errors import CompozyError
from compozy.paths import write_private_file

HEADER = re.compile(r"^\s*\[\[?\s*([^\]\[]+?)\s*\]\]?\s*(#.*)?$")
BARE_KEY = re.compile(r"^[A-Za-z0-9_-]+$")
MARK = "# Added by `compozy agent add"


def existing(text):
    """(providers, agents) names the file defines."""
    document = _parsed(text)
    return set(document.get("providers") or {}), set(document.get("agents") or {})


def add(path, name, provider, agent, comments=(), force=False):
    """Write the provider (a dict of TOML values) and the agent named name into the config.toml at path."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        text = ""
    providers, agents = existing(text)
    if name in providers or name in agents:
        if not force:
            where = ", ".join(f"[{t}.{name}]" for t, names in (("providers", providers), ("agents", agents))
                              if name in names)
            raise CompozyError("agent_conflict", f"{path} already defines {where}; pass --force to replace it, or "
                               "--name to add it under another name", name=name)
        text = without_tables(text, name)
        if name in existing(text)[0] | existing(text)[1]:
            raise CompozyError("agent_conflict", f"{path} defines {name!r} in a form that cannot be replaced "
                               "(not as a [providers.NAME] or [agents.NAME] table); remove it by hand", name=name)
    block = render(name, provider, agent, comments)
    new = (text.rstrip() + "\n\n" if text.strip() else "") + block
    try:
        from_document(_parsed(new), str(path))
    except ConfigError as exc:
        raise CompozyError("invalid_request", f"the agent would leave config.toml invalid:\n{exc}") from None
    path.parent.mkdir(parents=True, exist_ok=True)
    write_private_file(path, new)
    return block


def render(name, provider, agent, comments=()):
    lines = [*(f"# {c}" if c else "#" for c in comments), f"[providers.{name}]"]
    lines += [f"{key} = {value_text(value)}" for key, value in provider.items() if not key.startswith("#")]
    lines += [f"# {line}" for line in provider.get("#", ())]
    lines += ["", f"[agents.{name}]", *(f"{key} = {value_text(value)}" for key, value in agent.items())]
    return "\n".join(lines) + "\n"


def value_text(value):
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, list):
        return "[" + ", ".join(value_text(v) for v in value) + "]"
    if isinstance(value, dict):
        pairs = (f"{k if BARE_KEY.match(k) else json.dumps(k)} = {value_text(v)}" for k, v in value.items())
        return "{ " + ", ".join(pairs) + " }" if value else "{}"
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def without_tables(text, name):
    """text without the [providers.NAME] and [agents.NAME] tables, their sub-tables and the comment block an
    earlier `agent add` wrote above them."""
    lines, kept, dropping = text.splitlines(), [], False
    for line in lines:
        match = HEADER.match(line)
        if match:
            key = re.sub(r"[\s\"']", "", match.group(1))
            dropping = any(key == f"{t}.{name}" or key.startswith(f"{t}.{name}.") for t in ("providers", "agents"))
            if dropping:
                _drop_marked_comments(kept)
        if not dropping:
            kept.append(line)
    return "\n".join(kept) + ("\n" if kept else "")


def _drop_marked_comments(kept):
    end = len(kept)
    while end and not kept[end - 1].strip():
        end -= 1
    start = end
    while start and kept[start - 1].lstrip().startswith("#"):
        start -= 1
    if start < end and kept[start].startswith(MARK):
        del kept[start:]


def _parsed(text):
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise CompozyError("invalid_request", f"config.toml is not valid TOML: {exc}; fix it first") from None
