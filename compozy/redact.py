"""Redaction: secret values never reach logs, crash bundles, failure summaries or reads.

Layer 1: stdlib only. A secret is the value of an environment variable whose name contains
KEY, TOKEN, SECRET or PASSWORD (case-insensitive), plus anything shaped like a credential.
"""

import os
import re

SECRET_NAME = re.compile(r"KEY|TOKEN|SECRET|PASSWORD", re.IGNORECASE)
REPLACEMENT = "[redacted]"
# NAME=value and NAME: value pairs whose name looks secret, and bearer tokens.
_ASSIGNMENT = re.compile(r"(?i)\b([A-Z0-9_]*(?:KEY|TOKEN|SECRET|PASSWORD)[A-Z0-9_]*)(\s*[=:]\s*)(\"[^\"]*\"|'[^']*'|\S+)")
_BEARER = re.compile(r"(?i)\b(bearer\s+)[A-Za-z0-9._~+/=-]{8,}")
MIN_SECRET_LENGTH = 4


def is_secret_name(name):
    return bool(SECRET_NAME.search(name))


def secret_values(*environments):
    values = set()
    for env in environments:
        for name, value in (env or {}).items():
            if is_secret_name(name) and value and len(value) >= MIN_SECRET_LENGTH:
                values.add(value)
    return values


def redact(text, extra_env=None):
    """text with secret values and credential-shaped substrings replaced."""
    if not text:
        return text
    for value in sorted(secret_values(os.environ, extra_env), key=len, reverse=True):
        text = text.replace(value, REPLACEMENT)
    text = _ASSIGNMENT.sub(lambda m: m.group(1) + m.group(2) + REPLACEMENT, text)
    return _BEARER.sub(lambda m: m.group(1) + REPLACEMENT, text)


def redact_env(env):
    """An environment for display: secret-named variables keep their names only."""
    return {name: (REPLACEMENT if is_secret_name(name) else value) for name, value in (env or {}).items()}


def bounded(text, limit):
    if text is None or len(text) <= limit:
        return text
    return text[:limit] + f"...[{len(text) - limit} more characters]"
