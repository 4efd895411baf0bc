"""Installing a registry distribution into a folder of its own, and the command that runs it from there.

npx packages go through `npm install --prefix FOLDER` (the command is the package's own bin in
FOLDER/node_modules/.bin), uvx packages into a virtual environment FOLDER/venv (uv when on PATH, else the
standard venv and pip; the command is the script named after the package), and a binary archive is
downloaded only from the URL the registry names (http or https), unpacked without leaving FOLDER, and its
`cmd` made executable. Every failure is agent_install_failed with the installer's last words.
"""

import json
import os
import re
import shutil
import stat
import subprocess
import sys
import tarfile
import tempfile
import urllib.error
import urllib.request
import zipfile
from pathlib import Path

from compozy.errors import CompozyError

INSTALL_TIMEOUT = 900.0
DOWNLOAD_TIMEOUT = 60.0
MAX_ARCHIVE = 1024 * 1024 * 1024
OUTPUT_TAIL = 1500


def install(distribution, folder, version):
    """(command, env) of the distribution installed into folder (created)."""
    folder = Path(folder).expanduser().resolve()
    folder.mkdir(parents=True, exist_ok=True)
    if distribution.kind == "npx":
        return [str(_npm(distribution.package, folder)), *distribution.args], dict(distribution.env)
    if distribution.kind == "uvx":
        return [str(_python_package(distribution.package, folder)), *distribution.args], dict(distribution.env)
    return [str(_binary(distribution, folder / version)), *distribution.args], dict(distribution.env)


def package_name(kind, package):
    """The package a spec names, without its version or extras: @scope/name@1.2 -> @scope/name."""
    if kind == "npx":
        scoped = package.startswith("@")
        return ("@" if scoped else "") + (package[1:] if scoped else package).split("@", 1)[0]
    return re.split(r"[\[=<>!~@ ;]", package, maxsplit=1)[0]


def _npm(package, folder):
    npm = shutil.which("npm")
    if npm is None:
        raise CompozyError("agent_install_failed", f"npm is not on PATH: install Node.js (npm) to install {package}",
                           installer="npm")
    _run([npm, "install", "--prefix", str(folder), "--no-audit", "--no-fund", "--loglevel=error", package], package)
    name = package_name("npx", package)
    manifest = folder / "node_modules" / name / "package.json"
    try:
        bins = json.loads(manifest.read_text(encoding="utf-8")).get("bin")
    except (OSError, ValueError) as exc:
        raise CompozyError("agent_install_failed", f"npm installed {package}, but {manifest} is unreadable: {exc}",
                           installer="npm") from None
    unscoped = name.rsplit("/", 1)[-1]
    if isinstance(bins, str):
        bins = {unscoped: bins}
    if not isinstance(bins, dict) or not bins:
        raise CompozyError("agent_install_failed", f"{name} declares no program (package.json has no bin)",
                           installer="npm")
    chosen = unscoped if unscoped in bins else next(iter(bins)) if len(bins) == 1 else None
    if chosen is None:
        raise CompozyError("agent_install_failed", f"{name} has several programs ({', '.join(bins)}) and none named "
                           f"{unscoped}", installer="npm")
    return folder / "node_modules" / ".bin" / chosen


def _python_package(package, folder):
    venv, spec = folder / "venv", pip_spec(package)
    uv = shutil.which("uv")
    if uv is not None:
        _run([uv, "venv", "--allow-existing", str(venv)], package)
        _run([uv, "pip", "install", "--python", str(venv / "bin" / "python"), spec], package)
    else:
        if not (venv / "bin" / "python").exists():
            _run([sys.executable, "-m", "venv", str(venv)], package)
        _run([str(venv / "bin" / "python"), "-m", "pip", "install", "--disable-pip-version-check", "-q", spec],
             package)
    program = venv / "bin" / package_name("uvx", package)
    if not program.exists():
        raise CompozyError("agent_install_failed", f"{package} installed no program named {program.name} in "
                           f"{venv / 'bin'}", installer="pip")
    return program


def pip_spec(package):
    """uvx's exact version (name@1.2.3) as pip and uv pip spell it (name==1.2.3)."""
    return package if "==" in package else package.replace("@", "==", 1)


def _binary(distribution, folder):
    url = distribution.archive
    if not re.match(r"^https?://", url):
        raise CompozyError("agent_install_failed", f"the registry names {url!r}; only http(s) archives are downloaded",
                           installer="download")
    folder.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=folder.parent, prefix=".download-") as scratch:
        archive = Path(scratch) / "archive"
        _download(url, archive)
        unpacked = Path(scratch) / "unpacked"
        unpacked.mkdir()
        _unpack(archive, url, unpacked)
        program = (unpacked / distribution.cmd).resolve()
        if not program.is_relative_to(unpacked.resolve()) or not program.is_file():
            raise CompozyError("agent_install_failed", f"{url} holds no {distribution.cmd}", installer="download")
        program.chmod(program.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
        if folder.exists():
            shutil.rmtree(folder)
        unpacked.rename(folder)
    return (folder / distribution.cmd).resolve()


def _download(url, path):
    request = urllib.request.Request(url, headers={"User-Agent": "compozy"})
    try:
        with urllib.request.urlopen(request, timeout=DOWNLOAD_TIMEOUT) as response, open(path, "wb") as out:
            copied = 0
            while chunk := response.read(1 << 20):
                copied += len(chunk)
                if copied > MAX_ARCHIVE:
                    raise CompozyError("agent_install_failed", f"{url} is over {MAX_ARCHIVE >> 20} MiB",
                                       installer="download")
                out.write(chunk)
    except (urllib.error.URLError, OSError, TimeoutError) as exc:
        reason = getattr(exc, "reason", exc)
        raise CompozyError("agent_install_failed", f"cannot download {url}: {reason}", installer="download") from None


def _unpack(archive, url, target):
    try:
        if zipfile.is_zipfile(archive):
            with zipfile.ZipFile(archive) as bundle:
                for member in bundle.namelist():
                    if not (target / member).resolve().is_relative_to(target.resolve()):
                        raise CompozyError("agent_install_failed", f"{url} holds a path outside its folder: {member}",
                                           installer="download")
                bundle.extractall(target)
                for info in bundle.infolist():  # zip keeps Unix modes in the high bits
                    mode = info.external_attr >> 16
                    if mode & 0o111:
                        (target / info.filename).chmod(mode & 0o777)
        else:
            with tarfile.open(archive) as bundle:
                bundle.extractall(target, filter="data")
    except (tarfile.TarError, zipfile.BadZipFile, OSError) as exc:
        raise CompozyError("agent_install_failed", f"cannot unpack {url}: {exc}", installer="download") from None


def _run(argv, package):
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=INSTALL_TIMEOUT,
                              env={**os.environ, "npm_config_update_notifier": "false"})
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise CompozyError("agent_install_failed", f"{Path(argv[0]).name} could not install {package}: {exc}",
                           installer=Path(argv[0]).name) from None
    if done.returncode != 0:
        said = (done.stderr.strip() or done.stdout.strip())[-OUTPUT_TAIL:]
        raise CompozyError("agent_install_failed", f"{Path(argv[0]).name} could not install {package} (exit "
                           f"{done.returncode}): {said}", installer=Path(argv[0]).name, exit_status=done.returncode)
