"""The ACP registry's catalog (agentclientprotocol/registry): its entries and the distribution to use.

A source is the combined `registry.json` ({"version", "agents": [...]}), one `agent.json` entry, a folder
laid out as the registry repository (`<id>/agent.json`), or an http(s) URL of either document. An entry is
{id, name, version, description, distribution: {npx|uvx: {package, args?, env?}, binary: {<platform>:
{archive, cmd, args?, env?}}}}; unknown fields are ignored, as the registry's format is still growing.
"""

import difflib
import json
import platform
import re
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

from compozy.errors import CompozyError

DEFAULT_URL = "https://cdn.agentclientprotocol.com/registry/v1/latest/registry.json"
FETCH_TIMEOUT = 20.0
MAX_DOCUMENT = 16 * 1024 * 1024
ID = re.compile(r"^[a-z][a-z0-9-]*$")
KINDS = ("npx", "uvx", "binary")
PLATFORMS = {("linux", "x86_64"): "linux-x86_64", ("linux", "amd64"): "linux-x86_64",
             ("linux", "aarch64"): "linux-aarch64", ("linux", "arm64"): "linux-aarch64",
             ("darwin", "x86_64"): "darwin-x86_64", ("darwin", "arm64"): "darwin-aarch64",
             ("windows", "amd64"): "windows-x86_64", ("windows", "arm64"): "windows-aarch64"}


@dataclass(frozen=True)
class Distribution:
    """How one entry runs: kind npx or uvx (a pinned package) or binary (an archive and the command in it)."""

    kind: str
    package: str | None = None
    args: tuple = ()
    env: dict = field(default_factory=dict)
    archive: str | None = None
    cmd: str | None = None


def read(source=DEFAULT_URL):
    """The entries of the registry at source (a URL, a file or a folder), by id."""
    if re.match(r"^https?://", source):
        document = _fetch(source)
    else:
        path = Path(source).expanduser()
        if path.is_dir():
            return _folder(path)
        document = _load(path)
    return _entries(document, source)


def find(entries, agent_id, source):
    """The entry of agent_id, or registry_agent_not_found naming the closest ids."""
    if agent_id in entries:
        return entries[agent_id]
    close = difflib.get_close_matches(agent_id, list(entries), n=3, cutoff=0.5)
    hint = f"; did you mean {', '.join(close)}?" if close else f"; it lists {len(entries)} agents"
    raise CompozyError("registry_agent_not_found", f"the registry at {source} has no agent {agent_id!r}{hint}",
                       agent_id=agent_id, close=close)


def choose(entry, install, wanted=None):
    """The distribution to use: the one named, else npx, uvx, then this platform's binary. A binary runs
    only once downloaded (install), so a binary-only entry without it is refused, naming --install."""
    offered = [kind for kind in KINDS if kind in entry["distribution"]]
    if wanted is not None and wanted not in offered:
        raise CompozyError("distribution_unavailable", f"{entry['id']} is not distributed as {wanted}; it offers "
                           f"{', '.join(offered)}", offered=offered)
    kind = wanted or next(k for k in offered if k != "binary" or install or offered == ["binary"])
    spec = entry["distribution"][kind]
    if kind != "binary":
        return Distribution(kind, pinned(kind, spec["package"], entry["version"]), tuple(spec.get("args") or ()),
                            dict(spec.get("env") or {}))
    if not install:
        raise CompozyError("invalid_request", f"{entry['id']} is distributed as a binary archive only: add --install "
                           "to download and unpack it", field="install")
    here = platform_key()
    target = spec.get(here)
    if target is None:
        raise CompozyError("distribution_unavailable", f"{entry['id']} has no binary for this platform ({here}); it "
                           f"has {', '.join(sorted(spec))}", platform=here, offered=sorted(spec))
    return Distribution("binary", args=tuple(target.get("args") or ()), env=dict(target.get("env") or {}),
                        archive=target["archive"], cmd=target["cmd"])


def pinned(kind, package, version):
    """The package with the entry's version when it names none: name@1.2.3 (npx's and uvx's spelling of an
    exact version)."""
    name = package[1:] if package.startswith("@") else package
    if "@" in name or "==" in name:
        return package
    return f"{package}@{version}"


def platform_key():
    """This machine as the registry names platforms: linux-x86_64, darwin-aarch64, ..."""
    system, machine = platform.system().lower(), platform.machine().lower()
    return PLATFORMS.get((system, machine), f"{system}-{machine}")


def _fetch(url):
    request = urllib.request.Request(url, headers={"User-Agent": "compozy", "Accept": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=FETCH_TIMEOUT) as response:  # noqa: S310 (http(s) only)
            data = response.read(MAX_DOCUMENT + 1)
    except urllib.error.HTTPError as exc:
        raise CompozyError("registry_unavailable", f"cannot read the registry at {url}: HTTP {exc.code} {exc.reason}",
                           source=url, status=exc.code) from None
    except (urllib.error.URLError, OSError, TimeoutError) as exc:
        reason = getattr(exc, "reason", exc)
        raise CompozyError("registry_unavailable", f"cannot reach the registry at {url}: {reason}. Offline, pass "
                           "--registry FILE (a registry.json or agent.json you have)", source=url) from None
    return _parse(data, url)


def _load(path):
    try:
        with open(path, "rb") as handle:
            data = handle.read(MAX_DOCUMENT + 1)
    except OSError as exc:
        raise CompozyError("registry_unavailable", f"cannot read the registry file {path}: {exc.strerror or exc}",
                           source=str(path)) from None
    return _parse(data, str(path))


def _parse(data, source):
    if len(data) > MAX_DOCUMENT:
        raise CompozyError("registry_invalid", f"the registry at {source} is over {MAX_DOCUMENT // 2**20} MiB",
                           source=source)
    try:
        return json.loads(data)
    except ValueError as exc:
        raise CompozyError("registry_invalid", f"the registry at {source} is not JSON: {exc}", source=source) from None


def _folder(path):
    entries = {}
    for child in sorted(path.iterdir()):
        if child.name.startswith((".", "_")) or not (child / "agent.json").is_file():
            continue
        entry = checked(_load(child / "agent.json"), str(child / "agent.json"))
        entries[entry["id"]] = entry
    if not entries:
        raise CompozyError("registry_invalid", f"{path} holds no <id>/agent.json entry", source=str(path))
    return entries


def _entries(document, source):
    if isinstance(document, dict) and isinstance(document.get("agents"), list):
        items = document["agents"]
    elif isinstance(document, dict) and "distribution" in document:
        items = [document]
    else:
        raise CompozyError("registry_invalid", f"{source} is neither a registry.json ({{\"agents\": [...]}}) nor an "
                           "agent.json entry", source=source)
    entries = {}
    for index, item in enumerate(items):
        entry = checked(item, f"{source} agents[{index}]")
        entries[entry["id"]] = entry
    return entries


def checked(entry, where):
    """The entry with its fields checked (registry_invalid names the first problem)."""
    problem = _problem(entry)
    if problem:
        raise CompozyError("registry_invalid", f"{where}: {problem}", source=where)
    return entry


def _problem(entry):
    if not isinstance(entry, dict):
        return "an entry is not an object"
    for key in ("id", "name", "version"):
        if not isinstance(entry.get(key), str) or not entry[key]:
            return f"{key} is missing or not a string"
    if not ID.match(entry["id"]) or len(entry["id"]) > 64:
        return f"id {entry['id']!r} is not lowercase letters, digits and hyphens"
    distribution = entry.get("distribution")
    if not isinstance(distribution, dict) or not any(kind in distribution for kind in KINDS):
        return f"{entry['id']}: distribution names none of {', '.join(KINDS)}"
    for kind in ("npx", "uvx"):
        spec = distribution.get(kind)
        if spec is not None and not (isinstance(spec, dict) and isinstance(spec.get("package"), str)
                                     and spec["package"].strip() and _strings(spec)):
            return f"{entry['id']}: distribution.{kind} needs a package and string args and env"
    for name, target in (distribution.get("binary") or {}).items():
        if not (isinstance(target, dict) and isinstance(target.get("archive"), str) and
                re.match(r"^https?://", target["archive"]) and isinstance(target.get("cmd"), str) and _strings(target)):
            return f"{entry['id']}: distribution.binary.{name} needs an http(s) archive, a cmd, string args and env"
    return None


def _strings(spec):
    args, env = spec.get("args", []), spec.get("env", {})
    return (isinstance(args, list) and all(isinstance(a, str) for a in args) and isinstance(env, dict)
            and all(isinstance(k, str) and isinstance(v, str) for k, v in env.items()))
