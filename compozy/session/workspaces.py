"""Workspaces: registered by name and absolute path, resolved by name or ID.

Layer 4.
"""

import os
import re

from compozy.errors import CompozyError, invalid
from compozy.ids import is_valid_id, new_id

NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")


def check_directory(path, field="path"):
    """An absolute path to an existing directory, returned in canonical (symlink-free) form."""
    if not isinstance(path, str) or not path:
        raise invalid(f"{field} must be a non-empty string", field=field)
    if "\x00" in path or not os.path.isabs(path):
        raise invalid(f"{field} must be an absolute path", field=field)
    real = os.path.realpath(path)
    if not os.path.isdir(real):
        raise invalid(f"{field} {path!r} is not an existing directory", field=field)
    return real


def check_name(name, field="name"):
    if not isinstance(name, str) or not NAME.match(name):
        raise invalid(f"{field} must be 1-64 letters, digits, _ . or - (starting with a letter or digit)",
                      field=field)
    return name


class Workspaces:
    """Workspace lookups, cached: the catalog is only written through this object."""

    def __init__(self, catalog):
        self.catalog = catalog
        self._by_key = {}

    def _remember(self, workspace):
        if workspace:
            for key in (("id", workspace["id"]), ("name", workspace["name"]), ("path", workspace["path"])):
                self._by_key[key] = workspace
        return workspace

    def _lookup(self, kind, value):
        cached = self._by_key.get((kind, value))
        if cached is not None:
            return cached
        found = self.catalog.workspace(value) if kind == "id" else self.catalog.workspace_by(**{kind: value})
        return self._remember(found)

    def register(self, name, path):
        return self._remember(self.catalog.add_workspace(new_id("ws"), check_name(name), check_directory(path)))

    def resolve(self, reference):
        """By ID or name; anything else is workspace_not_found."""
        if not isinstance(reference, str) or not reference:
            raise invalid("workspace must be a workspace name or ID", field="workspace")
        found = self._lookup("id", reference) if is_valid_id(reference, "ws") else None
        found = found or (NAME.match(reference) and self._lookup("name", reference))
        if not found:
            raise CompozyError("workspace_not_found", f"no workspace {reference[:80]!r}", workspace=reference[:80])
        return found

    def for_path(self, path):
        """The workspace registered at path, or a new one named after the directory."""
        real = check_directory(path, "workspace_path")
        existing = self._lookup("path", real)
        if existing:
            return existing
        try:
            return self._remember(self.catalog.add_workspace(new_id("ws"), self._free_name(real), real))
        except CompozyError as exc:  # a concurrent create registered the same path first
            existing = exc.code == "workspace_conflict" and self._lookup("path", real)
            if existing:
                return existing
            raise

    def _free_name(self, real):
        base = re.sub(r"[^A-Za-z0-9_.-]", "-", os.path.basename(real) or "root").lstrip("-._")[:56] or "workspace"
        name, counter = base, 1
        while self.catalog.workspace_by(name=name):
            counter += 1
            name = f"{base}-{counter}"
        return name

    def list(self):
        return self.catalog.workspaces()
