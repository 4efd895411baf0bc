"""The settings a person changes from the page or `compozy config set`: read, and written into config.toml.

Layer 4. Only the settings in EDITABLE can be changed this way, each one the daemon reads afresh whenever it
needs it, so a reload applies it at once. A change is validated as config.toml is (the same loader), written
into the file with every other line kept (config_edit), and then the file is loaded again and applied as
`compozy daemon reload` applies it: new sessions and the supervision timers read the new value, live
bindings keep their process.
"""

import os
import threading

from compozy.config import SETTINGS_BY_NAME, ConfigError, from_document, load
from compozy.errors import CompozyError, invalid
from compozy.paths import UnsafeHome, write_private_file
from compozy.session.records.config_edit import NotEditable, set_key

# name -> (title, description): how the page names it and says what it does. Each is read from the running
# configuration whenever it is used.
EDITABLE = {
    "session.supervision.idle_release_after": (
        "Pause idle agents after",
        "An agent with nothing to do is stopped after this long, to free its memory; the session stays, and its "
        "next message starts the agent again where it left off (agents that can reload a session only). \"0\" "
        "never pauses."),
    "session.supervision.quiet_after": (
        "Warn when a turn has been quiet for",
        "A turn with no output from the agent for this long shows a quiet warning. \"0\" turns the watch off."),
    "session.supervision.stop_grace": (
        "Stop a quiet turn after a further",
        "After the warning, a turn that stays silent this much longer is stopped. \"0\" only warns."),
    "session.busy_input.default_mode": (
        "A message sent while the agent works",
        "queue: it waits for the current turn; steer: it joins the running turn; interrupt: it stops the turn and "
        "starts in its place."),
}


def setting_view(config, name):
    setting = SETTINGS_BY_NAME[name]
    title, description = EDITABLE[name]
    view = {"name": name, "title": title, "description": description, "value": config.values.get(name, setting.default),
            "default": setting.default, "set": name in config.values, "kind": setting.kind, "help": setting.help}
    if setting.choices:
        view["choices"] = list(setting.choices)
    return view


def checked_value(name, value):
    """The value as config.toml would hold it, checked by config.toml's own rules (invalid_request if not)."""
    table, leaf = name.rsplit(".", 1)
    document = {}
    inner = document
    for part in table.split("."):
        inner = inner.setdefault(part, {})
    inner[leaf] = value
    try:
        from_document(document)
    except ConfigError as exc:
        raise invalid(str(exc).split(": ", 1)[-1], field="value") from None  # "KEY: problem", without the file
    return value


def _read_text(path):
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    except FileNotFoundError:
        return ""
    with os.fdopen(fd, encoding="utf-8") as handle:
        return handle.read()


class SettingsViews:
    """Façade methods over the editable settings (mixed into SessionManager)."""

    _settings_lock = threading.Lock()

    def list_settings(self):
        config = self.services.config
        return {"settings": [setting_view(config, name) for name in EDITABLE], "path": str(self.home.config_file)}

    def set_setting(self, setting, body):
        name = setting
        if name not in EDITABLE:
            raise CompozyError("setting_not_editable", f"{name!r} cannot be changed here; the page and "
                               f"`compozy config set` change {', '.join(EDITABLE)} (edit config.toml by hand for the "
                               f"rest, then `compozy daemon reload`)", name=name[:200], editable=list(EDITABLE))
        value = checked_value(name, body["value"])
        path = self.home.config_file
        with self._settings_lock:
            try:
                self.home.check()
                load(path)  # as it stands: a file with problems is fixed by hand first
                text = set_key(_read_text(path), name, value)
            except (ConfigError, NotEditable, UnsafeHome, OSError) as exc:
                raise CompozyError("config_not_editable", f"{path} cannot be changed safely: {exc}",
                                   path=str(path)) from None
            write_private_file(path, text)
            self.reload_config(load(path))
        return {"setting": setting_view(self.services.config, name)}
