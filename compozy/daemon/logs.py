"""The daemon's log: logs/compozy.log (mode 0600), secrets redacted from every line.

Layer 6 (surface).
"""

import logging
import logging.handlers
import os

from compozy.paths import FILE_MODE
from compozy.redact import redact
from compozy.text import one_line


class RedactingFormatter(logging.Formatter):
    """Secrets redacted; control characters of the message escaped, so that text an agent chose
    (logged with %r, and anywhere else) can never forge a line or drive a terminal that tails the log."""

    def formatMessage(self, record):
        record.message = one_line(record.message)
        return super().formatMessage(record)

    def format(self, record):
        return redact(super().format(record))


def setup_logging(home, foreground=True):
    # Watched: when retention rotates compozy.log, the next line opens a new one (logs/compozy.log.1 keeps the old).
    handler = logging.handlers.WatchedFileHandler(home.log_file, encoding="utf-8")
    os.chmod(home.log_file, FILE_MODE)
    formatter = RedactingFormatter("%(asctime)s %(levelname)s %(name)s %(message)s")
    handlers = [handler] + ([logging.StreamHandler()] if foreground else [])
    root = logging.getLogger()
    for h in handlers:
        h.setFormatter(formatter)
        root.addHandler(h)
    root.setLevel(logging.INFO)
    logging.getLogger("waitress.queue").setLevel(logging.ERROR)  # "task queue depth" noise under SSE load
    return handlers
