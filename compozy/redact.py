"""Redaction: secret values never reach logs, crash bundles, failure summaries or reads.

Layer 1: the stdlib and compozy.text. A secret is the value of an environment variable whose name
contains KEY, TOKEN, SECRET or PASSWORD (case-insensitive), plus anything shaped like a credential.
"""

import os
import re
from json.encoder import encode_basestring_ascii as _quote

from compozy.text import map_document

SECRET_NAME = re.compile(r"KEY|TOKEN|SECRET|PASSWORD", re.IGNORECASE)
REPLACEMENT = "[redacted]"
# NAME=value and NAME: value pairs whose name looks secret, and bearer tokens.
_ASSIGNMENT = re.compile(r"(?i)\b([A-Z0-9_]*(?:KEY|TOKEN|SECRET|PASSWORD)[A-Z0-9_]*)(\s*[=:]\s*)(\"[^\"]*\"|'[^']*'|\S+)")
_BEARER = re.compile(r"(?i)\b(bearer\s+)[A-Za-z0-9._~+/=-]{8,}")
MIN_SECRET_LENGTH = 4
MIN_CONTENT_SECRET = 8  # event content is redacted of known values at least this long


def is_secret_name(name):
    return bool(SECRET_NAME.search(name))


def secret_values(*environments):
    values = set()
    for env in environments:
        for name, value in (env or {}).items():
            if is_secret_name(name) and value and len(value) >= MIN_SECRET_LENGTH:
                values.add(value)
    return values


def is_daemon_secret(name):
    """The daemon's own credentials (COMPOZY_TOKEN and any other secret-named COMPOZY_* variable):
    kept from the agents it runs, which get every other variable (API keys included)."""
    return name.upper().startswith("COMPOZY_") and is_secret_name(name)


def without_daemon_secrets(env):
    return {name: value for name, value in env.items() if not is_daemon_secret(name)}


def without_secrets(env):
    """env without any secret-named variable: for a child that needs none of them (a hook)."""
    return {name: value for name, value in env.items() if not is_secret_name(name)}


_daemon_values = None


def known_secret_values(*environments):
    """The secret values of the daemon's environment (read once: it does not change) and of the given ones."""
    global _daemon_values
    if _daemon_values is None:
        _daemon_values = frozenset(secret_values(os.environ))
    # A short value ("true", "1234") would blank ordinary words out of every transcript.
    return {value for value in _daemon_values | secret_values(*environments) if len(value) >= MIN_CONTENT_SECRET}


def redact_values(value, secrets):
    """value (a string, or a JSON document of them) with every occurrence of the given secret
    values replaced; exact values only, so ordinary text that merely looks like an assignment stays.
    A document is walked without recursion, however deep an agent nested it."""
    if not secrets:
        return value
    ordered = sorted(secrets, key=len, reverse=True)

    def scrub(item):
        if isinstance(item, str):
            for secret in ordered:
                if secret in item:
                    item = item.replace(secret, REPLACEMENT)
        return item
    return scrub(value) if isinstance(value, str) else map_document(value, scrub)


def redact_pieces(pieces, secrets):
    """pieces (the texts of consecutive chunks) with every secret value that their joined text holds
    replaced, where it starts, however the chunks split it: the first piece a value touches carries the
    replacement, the rest of the value is cut from the pieces after it. The pieces stay as many as they
    were, so each can stay one record (an export's JSONL, a compacted store)."""
    joined = "".join(pieces)
    spans = _secret_spans(joined, secrets)
    if not spans:
        return list(pieces)
    result, start = [], 0
    for piece in pieces:
        end = start + len(piece)
        kept, cursor = [], start
        for first, last in spans:
            if last <= cursor or first >= end:
                continue
            kept.append(joined[cursor:max(cursor, first)])
            if first >= start:
                kept.append(REPLACEMENT)
            cursor = min(last, end)
        kept.append(joined[cursor:end])
        result.append("".join(kept))
        start = end
    return result


def _secret_spans(text, secrets):
    """The (start, end) of every secret value in text, merged where they overlap, in order."""
    spans = []
    for secret in secrets or ():
        index = text.find(secret)
        while index >= 0:
            spans.append((index, index + len(secret)))
            index = text.find(secret, index + 1)
    merged = []
    for first, last in sorted(spans):
        if merged and first < merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], last))
        else:
            merged.append((first, last))
    return merged


class EncodedRedaction:
    """redact_values for documents whose JSON text (ensure_ascii) is at hand: that encoding maps each
    character on its own, so a secret inside any string of a document shows in its text as the secret's
    own encoding. A document whose text shows none is kept as is, without walking it."""

    def __init__(self, secrets, encode):
        self.secrets, self.encode = secrets, encode
        self._encoded = [_quote(secret)[1:-1] for secret in secrets]

    def apply(self, value, text):
        """(value, text) with the secret values redacted; text is encode(value)."""
        if not any(secret in text for secret in self._encoded):
            return value, text
        value = redact_values(value, self.secrets)
        return value, self.encode(value)


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
