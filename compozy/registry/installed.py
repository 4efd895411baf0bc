"""Whether a provider's command is really installed: its program resolvable and runnable, not only on PATH.

A program is found on the agent's PATH (or at its path), must be an executable file, and a script's
interpreter (`#!/usr/bin/env node`, `#!/path/python`) must be found too. A package launcher is followed to
its package: `npx -y PKG` is installed only when npm's cache already holds PKG (at its pinned version),
since npx would otherwise download it on the first start; `uvx PKG` always resolves PKG when it starts,
so it is reported as not installed with what `compozy agent add --install` does instead. A Node package
whose `engines.node` asks for a newer Node.js than the `node` on PATH does not run either.
"""

import functools
import json
import os
import re
import shutil
import subprocess
from pathlib import Path

SHEBANG_LIMIT = 256
NPX_PACKAGE_FLAGS = ("-p", "--package")
AT_LEAST = re.compile(r"^\s*>=\s*v?(\d+)(?:\.(\d+))?(?:\.(\d+))?\s*$")  # the engines.node form checked
NODE_VERSION_TIMEOUT = 5.0


def state(command, env):
    """{"installed": bool, "detail": str, "program": the resolved path or None}."""
    if not command:
        return _answer(False, "no command")
    path_var = env.get("PATH", os.defpath)
    program = _resolve(command[0], path_var)
    if program is None:
        return _answer(False, f"{command[0]} is not on PATH" if "/" not in command[0] else
                       f"{command[0]} does not exist")
    if not os.access(program, os.X_OK) or not Path(program).is_file():
        return _answer(False, f"{program} is not an executable file", program)
    missing = _missing_interpreter(program, path_var)
    if missing:
        return _answer(False, f"{program} needs {missing}, which is not on PATH", program)
    too_old = _node_too_old(_package_manifest(Path(program).resolve()), path_var)
    if too_old:
        return _answer(False, f"{program} {too_old}", program)
    launcher = Path(command[0]).name
    if launcher == "npx":
        return _npx(command[1:], env, program)
    if launcher == "uvx":
        package = next((a for a in command[1:] if not a.startswith("-")), "?")
        return _answer(False, f"uvx resolves {package} when it starts (compozy agent add --install installs it)",
                       program)
    return _answer(True, f"runs {program}", program)


def _answer(installed, detail, program=None):
    return {"installed": installed, "detail": detail, "program": str(program) if program else None}


def _resolve(name, path_var):
    if "/" in name:
        return name if os.path.exists(name) else None
    return shutil.which(name, path=path_var)


def _missing_interpreter(program, path_var):
    """The interpreter a script names that cannot be found, else None."""
    try:
        with open(program, "rb") as handle:
            first = handle.readline(SHEBANG_LIMIT)
    except OSError:
        return None
    if not first.startswith(b"#!"):
        return None
    words = first[2:].decode("utf-8", "replace").split()
    if not words:
        return None
    if Path(words[0]).name == "env":
        names = [w for w in words[1:] if not w.startswith("-") and "=" not in w]
        return None if not names or shutil.which(names[0], path=path_var) else names[0]
    return None if os.access(words[0], os.X_OK) else words[0]


def _npx(args, env, program):
    package = _npx_package(args)
    if package is None:
        return _answer(False, "npx names no package", program)
    name, version = _split_npm(package)
    for manifest in _npx_cache(env).glob("*/node_modules/" + name + "/package.json"):
        try:
            found = json.loads(manifest.read_text(encoding="utf-8")).get("version")
        except (OSError, ValueError):
            continue
        if version in (None, found):
            too_old = _node_too_old(json.loads(manifest.read_text(encoding="utf-8")), env.get("PATH", os.defpath))
            if too_old:
                return _answer(False, f"{name}@{found} {too_old}", program)
            return _answer(True, f"npx runs {name}@{found} from npm's cache ({manifest.parents[2]})", program)
    return _answer(False, f"npx downloads {package} on its first start (it is not in npm's cache; compozy agent "
                   "add --install installs it)", program)


def _npx_package(args):
    """The package `npx ARGS` runs: --package's value, else the first word that is not an option."""
    for index, arg in enumerate(args):
        if arg in NPX_PACKAGE_FLAGS:
            return args[index + 1] if index + 1 < len(args) else None
        if arg.startswith("--package="):
            return arg.split("=", 1)[1]
        if not arg.startswith("-"):
            return arg
    return None


def _split_npm(package):
    scoped = package.startswith("@")
    name, _, version = (package[1:] if scoped else package).partition("@")
    return ("@" if scoped else "") + name, version or None


def _npx_cache(env):
    cache = env.get("npm_config_cache") or env.get("NPM_CONFIG_CACHE")
    home = env.get("HOME") or os.path.expanduser("~")
    return Path(cache or Path(home) / ".npm") / "_npx"


def _package_manifest(path):
    """The package.json of the Node package a program (resolved) belongs to, if it lies in node_modules."""
    if "node_modules" not in path.parts:
        return None
    for parent in path.parents:
        if parent.name == "node_modules":
            return None
        if (parent / "package.json").is_file():
            try:
                return json.loads((parent / "package.json").read_text(encoding="utf-8"))
            except (OSError, ValueError):
                return None
    return None


def _node_too_old(manifest, path_var):
    """Why the node on PATH cannot run a package whose engines.node is `>=X.Y.Z`, else None."""
    wanted = ((manifest or {}).get("engines") or {}).get("node") if isinstance(manifest, dict) else None
    match = AT_LEAST.match(wanted) if isinstance(wanted, str) else None
    node = shutil.which("node", path=path_var) if match else None
    if node is None:
        return None
    have = _node_version(node, os.stat(node).st_mtime)
    need = tuple(int(part or 0) for part in match.groups())
    if have is None or have >= need:
        return None
    return f"needs Node.js {wanted.strip()}, and {node} is v{'.'.join(map(str, have))}"


@functools.lru_cache(maxsize=16)
def _node_version(node, mtime):
    """(major, minor, patch) of `node --version` (cached per binary and its mtime), or None."""
    try:
        said = subprocess.run([node, "--version"], capture_output=True, text=True, timeout=NODE_VERSION_TIMEOUT,
                              check=False).stdout
    except (OSError, subprocess.TimeoutExpired):
        return None
    match = re.match(r"^v?(\d+)\.(\d+)\.(\d+)", said.strip())
    return tuple(int(part) for part in match.groups()) if match else None

