"""`compozy agent add ID`: one registry entry made a provider and an agent of config.toml, installed when asked.

The provider runs the entry's pinned package (`npx -y PKG@VERSION ARGS`, `uvx PKG@VERSION ARGS`) or, once
installed, the installed program itself; its env is the distribution's env. The auth methods the agent
declares (the entry's own `authMethods`, else what the installed agent answers to initialize) are written
as comments beside a commented `auth_method` line, for a person to choose.
"""

import re
from dataclasses import dataclass
from pathlib import Path

from compozy.config import Provider, parse_duration
from compozy.errors import CompozyError
from compozy.registry import catalog, configfile, install, installed

NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$")
DOWNLOADING_HANDSHAKE = "3m"  # a first `npx -y` or `uvx` downloads the package before it answers
INSTALLED_HANDSHAKE = "1m"


@dataclass
class Request:
    agent_id: str
    registry: str = catalog.DEFAULT_URL
    name: str | None = None
    install: bool = False
    prefix: str | None = None
    distribution: str | None = None
    auth_method: str | None = None
    force: bool = False


def add(request, config_path, default_prefix, environment, probe=None):
    """The document `agent add` reports. probe(provider) -> the agent's authMethods (it starts the agent)."""
    name = request.name or request.agent_id
    if not NAME.match(name):
        raise CompozyError("invalid_request", f"agent name {name!r}: use letters, digits, _ and - (at most 64)",
                           field="name")
    entries = catalog.read(request.registry)
    entry = catalog.find(entries, request.agent_id, request.registry)
    distribution = catalog.choose(entry, request.install, request.distribution)
    _refuse_conflict(config_path, name, request.force)
    folder = None
    if request.install:
        folder = Path(request.prefix or default_prefix).expanduser() / entry["id"]
        command, env = install.install(distribution, folder, entry["version"])
    else:
        command, env = [distribution.kind, *(["-y"] if distribution.kind == "npx" else []), distribution.package,
                        *distribution.args], dict(distribution.env)
    state = installed.state(command, {**environment, **env})
    handshake = INSTALLED_HANDSHAKE if state["installed"] else DOWNLOADING_HANDSHAKE
    methods, asked = _auth_methods(entry, name, command, env, handshake, state, probe)
    _check_auth_method(request.auth_method, methods)
    provider = {"command": command, "handshake_timeout": handshake, **({"env": env} if env else {}),
                **({"auth_method": request.auth_method} if request.auth_method else {}),
                "#": _auth_lines(methods, asked, request.auth_method)}
    comments = [f"Added by `compozy agent add {entry['id']}`: {entry['name']} {entry['version']} ({distribution.kind})"
                f" from {request.registry}"]
    configfile.add(config_path, name, provider, {"provider": name}, comments, request.force)
    return {"name": name, "registry_id": entry["id"], "version": entry["version"], "title": entry["name"],
            "distribution": distribution.kind, "command": command, "env": sorted(env), "config_file": str(config_path),
            "install_folder": str(folder) if folder else None, "installed": state["installed"],
            "install_detail": state["detail"], "auth_methods": methods, "auth_methods_from": asked,
            "auth_method": request.auth_method}


def _refuse_conflict(config_path, name, force):
    try:
        text = config_path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return
    providers, agents = configfile.existing(text)
    if (name in providers or name in agents) and not force:
        raise CompozyError("agent_conflict", f"{config_path} already defines {name!r}; pass --force to replace it, "
                           "or --name to add it under another name", name=name)


def _auth_methods(entry, name, command, env, handshake, state, probe):
    """(methods, where they come from): the entry's, the installed agent's answer, or none known."""
    declared = entry.get("authMethods")
    if isinstance(declared, list):
        return [m for m in declared if isinstance(m, dict) and isinstance(m.get("id"), str)], "registry"
    if probe is None or not state["installed"]:
        return [], None
    try:
        return probe(Provider(name, tuple(command), env, parse_duration(handshake))), "agent"
    except CompozyError as exc:
        return [], f"not known: the agent did not answer initialize ({exc.message[:300]})"


def _check_auth_method(wanted, methods):
    if wanted and methods and wanted not in {m["id"] for m in methods}:
        raise CompozyError("invalid_request", f"--auth-method {wanted!r} is not one the agent declares: "
                           f"{', '.join(m['id'] for m in methods)}", field="auth_method")


def _auth_lines(methods, asked, chosen):
    if not methods:
        return [f"auth methods: {asked}"] if asked and asked not in ("registry", "agent") else []
    lines = ["auth methods it declares (auth_method authenticates with one before the first session):"]
    for method in methods:
        kind = method.get("type") or "agent"
        names = [v.get("name") if isinstance(v, dict) else str(v) for v in method.get("vars") or []]
        needs = f", needs {', '.join(str(n) for n in names)}" if names else ""
        lines.append(f"  {method['id']} ({kind}{needs}): {method.get('name', '')}".rstrip(": "))
    if not chosen:
        usable = next((m for m in methods if (m.get("type") or "agent") != "terminal"), None)
        if usable is not None:
            lines.append(f'auth_method = "{usable["id"]}"')
    return lines
