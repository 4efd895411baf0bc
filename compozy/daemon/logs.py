"""The daemon's log: logs/compozy.log (mode 0600), secrets redacted from every line.

Layer 6 (surface).
"""

import logging
import os

from compozy.paths import FILE_MODE
from compozy.redact import redact


class RedactingFormatter(logging.Formatter):
    def format(self, record):
        return redact(super().format(record))


def setup_logging(home, foreground=True):
    handler = logging.FileHandler(home.log_file, encoding="utf-8")
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
