#!/usr/bin/env python3
"""Build dist/compozy.pyz: the daemon, its CLI, the reference agent and the web page in one file.

    python3 tools/build_pyz.py [--output PATH]

The standard library's zipapp over a `pip install --target` tree of the runtime dependencies
(setup.cfg install_requires), with compozy.py as __main__.py. The archive holds Python source
only: compiled extensions (markupsafe's optional speedups) are left out so it runs on any
CPython 3.11+, and package metadata (*.dist-info) is left out so nothing can come to depend on
it; the dependencies' licence files go to licenses/<distribution>/ instead.
"""

import argparse
import configparser
import shutil
import subprocess
import sys
import tempfile
import zipapp
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_OUTPUT = ROOT / "dist" / "compozy.pyz"
COMPILED_SUFFIXES = (".so", ".pyd", ".dylib")
LEFT_OUT_FOLDERS = ("__pycache__", "bin")
PIP_FAILED = 3  # tests skip on it: no package index reachable is not a bug


def runtime_requirements():
    """setup.cfg's install_requires: the one list of what the daemon needs to run."""
    config = configparser.ConfigParser()
    config.read(ROOT / "setup.cfg")
    return config["options"]["install_requires"].split()


def install_dependencies(target):
    pip = subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
                          "--no-compile", "--target", str(target), *runtime_requirements()])
    if pip.returncode:
        print("build_pyz: pip could not install the runtime dependencies (see above)", file=sys.stderr)
        sys.exit(PIP_FAILED)


def copy_compozy(target):
    shutil.copytree(ROOT / "compozy", target / "compozy", ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    shutil.copyfile(ROOT / "compozy.py", target / "__main__.py")


def keep_licenses(target):
    """Move each dependency's licence files out of its metadata folder, which the archive leaves out."""
    for metadata in target.glob("*.dist-info"):
        distribution = metadata.name.removesuffix(".dist-info")
        for licence in [p for p in metadata.rglob("*") if p.is_file() and p.name.upper().startswith(("LICEN", "COPYING"))]:
            destination = target / "licenses" / distribution / licence.name
            destination.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(licence, destination)


def belongs_in_archive(relative):
    """zipapp's filter: Python source and data, no metadata, no compiled code, no console scripts."""
    if relative.parts[0] in LEFT_OUT_FOLDERS or relative.parts[0].endswith((".dist-info", "-stubs")):
        return False
    return "__pycache__" not in relative.parts and relative.suffix not in COMPILED_SUFFIXES


def build(output):
    output.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="compozy-pyz-") as staging:
        tree = Path(staging)
        install_dependencies(tree)
        copy_compozy(tree)
        keep_licenses(tree)
        zipapp.create_archive(tree, output, interpreter="/usr/bin/env python3",
                              filter=belongs_in_archive, compressed=True)
    return output


def compiled_members(archive):
    with zipfile.ZipFile(archive) as bundle:
        return [name for name in bundle.namelist() if name.endswith(COMPILED_SUFFIXES)]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--output", type=Path, default=DEFAULT_OUTPUT, help=f"default: {DEFAULT_OUTPUT.relative_to(ROOT)}")
    output = build(parser.parse_args(argv).output)
    if compiled_members(output):
        sys.exit(f"{output}: compiled extensions slipped in: {compiled_members(output)}")
    print(f"built {output} ({output.stat().st_size // 1024} KiB); run: python3 {output} daemon start")


if __name__ == "__main__":
    main()
