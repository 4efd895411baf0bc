"""The whole test suite fails on an illegal state transition in any daemon it starts (issue 20).

A refusal from Machine.check on a live path is a bug even when the daemon settles the session after
it. Every daemon log a test produced is read after the test: the subprocess daemons' `logs/compozy.log`
(under the test's tmp_path, and every DaemonProcess's home wherever it lives) and the log records of
the daemons built in the test process. A test that provokes one on purpose says so with
`@pytest.mark.illegal_transitions("runtime:recovering->binding", ...)`.
"""

import logging
import re
import threading
from pathlib import Path

ILLEGAL = re.compile(r"illegal (\S+) (transition|repair) (\S+) -> (\S+)")
_homes = {}  # a DaemonProcess home -> how much of its log was already read
_homes_lock = threading.Lock()


def watch_home(home):
    """A DaemonProcess started on home: its log is read after every test from here on."""
    with _homes_lock:
        _homes.setdefault(str(Path(home)), 0)


def edge_of(match):
    """The refused edge as scenarios name edges (`runtime:recovering->binding`)."""
    table, kind, current, new = match.groups()
    prefix = ("boot:" if kind == "repair" else "") + ("" if table == "session" else f"{table}:")
    return f"{prefix}{current}->{new}"


class RecordWatch(logging.Handler):
    """The log records of daemons running in the test process (their own threads included)."""

    def __init__(self):
        super().__init__(logging.WARNING)
        self.found = []  # appended under the handler's own lock (logging.Handler.handle holds it)

    def emit(self, record):
        texts = [record.getMessage()]
        if record.exc_info and record.exc_info[1] is not None:
            texts.append(str(record.exc_info[1]))
        for text in texts:
            match = ILLEGAL.search(text)
            if match:
                self.found.append((edge_of(match), f"{record.name}: {text[:300]}"))
                return


def _log_files(tmp_path):
    files = set(Path(tmp_path).glob("**/logs/compozy.log")) if tmp_path is not None else set()
    with _homes_lock:
        files |= {Path(home) / "logs" / "compozy.log" for home in _homes}
    return files


def daemon_log_findings(tmp_path):
    """(edge, line) of every illegal transition logged since the last call, in every daemon log known."""
    found = []
    for path in sorted(_log_files(tmp_path)):
        key = str(path.parent.parent)
        with _homes_lock:
            offset = _homes.get(key, 0)
        try:
            with open(path, "rb") as handle:
                handle.seek(offset)
                text = handle.read().decode("utf-8", "replace")
                end = handle.tell()
        except OSError:
            continue
        with _homes_lock:
            if key in _homes:
                _homes[key] = end
        for line in text.splitlines():
            match = ILLEGAL.search(line)
            if match:
                found.append((edge_of(match), f"{path}: {line[:300]}"))
    return found


def unexpected(findings, allowed):
    return [line for edge, line in findings if edge not in allowed]
