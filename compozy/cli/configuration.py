"""`compozy config check`: validate config.toml and print what it resolves to.

Layer 6 (surface). It reads the file the daemon of this home reads, with the daemon's own loader,
so what it accepts the daemon accepts (`daemon reload` checks the same way before it signals). `config settings`
and `config set` are generated from the table (compozy/cli/generated.py) with their words here.
"""

import os
import shutil
import sys

from compozy.cli.generated import PRESENTATION, Presentation
from compozy.cli.main import cli
from compozy.cli.output import emit, output_option


@cli.group("config")
def config_group():
    """The daemon's configuration (config.toml in the home folder).

    \b
    Example:
      compozy config check
    """


def load_checked():
    """(config, None) when config.toml is valid, else (None, the problems, one a line)."""
    from compozy.config import ConfigError, load
    from compozy.paths import Home, UnsafeHome
    try:
        return load(Home().check().config_file), None
    except (ConfigError, UnsafeHome) as exc:
        return None, str(exc)


@config_group.command("check")
@output_option()
def check(output):
    """Validate config.toml (every key, value, provider and agent name) and print what it resolved.

    \b
    Example:
      compozy config check
      COMPOZY_HOME=~/.compozy-work compozy config check -o json
    """
    from compozy.paths import Home
    config, problems = load_checked()
    if problems:
        emit({"valid": False, "path": str(Home().config_file), "problems": problems.splitlines()}, output,
             lambda d: "\n".join(d["problems"]))
        sys.exit(1)
    emit(resolved(config, Home().config_file), output, _text)


def resolved(config, path):
    from compozy.config_settings import SETTINGS
    from compozy.registry.installed import state
    return {"valid": True, "path": str(path), "exists": path.exists(), "default_agent": config["default_agent"],
            "agents": {name: {"provider": a.provider, "runtime": a.defaults(),
                              "fallback_chain": [r.runtime() for r in a.fallback_chain]}
                       for name, a in sorted(config.agents.items())},
            "providers": {name: {"command": list(p.command), "found": shutil.which(p.command[0]) is not None,
                                 "installed": state(list(p.command), {**os.environ, **p.env}),
                                 "env": sorted(p.env), "handshake_timeout": p.handshake_timeout,
                                 "auth_method": p.auth_method}
                          for name, p in sorted(config.providers.items())},
            "settings": {s.name: config.values.get(s.name, s.default) for s in SETTINGS}}


def _text(document):
    lines = [f"{document['path']}: valid" + ("" if document["exists"] else " (no file: the defaults)"),
             f"default agent  {document['default_agent']}", "agents"]
    lines += [f"  {name:<16} provider {a['provider']}  " + " ".join(f"{k}={v}" for k, v in a["runtime"].items()
                                                                    if k != "provider")
              for name, a in document["agents"].items()]
    lines.append("providers")
    for name, p in document["providers"].items():
        found = "" if p["found"] else f"   (NOT FOUND on PATH: {p['command'][0]})"
        installed = "" if p["installed"]["installed"] or not p["found"] else \
            f"   (NOT INSTALLED: {p['installed']['detail']})"
        lines.append(f"  {name:<16} {' '.join(p['command'])}{found}{installed}")
    return "\n".join(lines)


def _settings_text(document):
    lines = [f"{s['name']} = {s['value']}" + ("" if s["set"] else "  (default)")
             + f"\n    {s['title']}: {s['description']}" for s in document["settings"]]
    return "\n".join(lines + [f"in {document['path']}"])


PRESENTATION.update({
    "settings.list": Presentation(
        "The settings the running daemon changes for you (here and on the page): value, default, help.",
        "compozy config settings\ncompozy config settings -o json", _settings_text),
    "settings.set": Presentation(
        "Change one of those settings: written into config.toml (its other lines and comments kept) and\n"
        "applied at once, as `compozy daemon reload` applies it. Validated as config.toml is.",
        "compozy config set session.supervision.idle_release_after 10m\n"
        "compozy config set session.supervision.idle_release_after 0    # never pause idle agents",
        lambda d: f"{d['setting']['name']} = {d['setting']['value']} (applied)"),
})
