"""Text that is safe to show (control characters and bidi overrides escaped for a terminal or a log),
and JSON lines for peers that read lines.

Layer 0: stdlib only. Text an agent or a client chose (names, messages, method names) may carry
escape sequences that set a terminal's title, clear it or write its clipboard (OSC 52), a CR or LF
that forges a row or a log line, or a right-to-left override that makes text read backwards.
Each such character is shown as its Python escape (\\x1b, \\n, \\u202e), so it is seen, not obeyed.
"""

import json
import json.encoder
import re

# C0 and C1 controls, DEL, the line and paragraph separators, and the bidi embeddings, overrides and isolates.
BIDI_CONTROLS = "\u200e\u200f\u061c\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"
UNSAFE_CHARACTERS = f"\\x00-\\x1f\\x7f-\\x9f\u2028\u2029{BIDI_CONTROLS}"  # a regular expression's class
_UNSAFE = re.compile(f"[{UNSAFE_CHARACTERS}]")
_UNSAFE_KEEP_LINES = re.compile(f"[\\x00-\\x09\\x0b-\\x1f\\x7f-\\x9f\u2028\u2029{BIDI_CONTROLS}]")


def _escape(match):
    return ascii(match.group(0))[1:-1]


def one_line(text):
    """text for one line of output: every control character (CR and LF included) escaped."""
    return _UNSAFE.sub(_escape, str(text))


def multi_line(text):
    """text that may span lines (an agent's message): newlines kept, every other control escaped."""
    return _UNSAFE_KEEP_LINES.sub(_escape, str(text))


# CSI (colours, cursor moves), OSC (titles, clipboard, links; ended by BEL or ST) and the other two-byte escapes.
_ESCAPE_SEQUENCE = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]"  # CSI
                              r"|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?"  # OSC
                              r"|\x1b[@-Z\\-_]|\x9b[0-?]*[ -/]*[@-~]")


def terminal_output(text):
    """What a program wrote for a terminal (an agent's stderr) as plain lines: escape sequences removed,
    carriage returns (progress bars) turned into line breaks, every other control escaped."""
    text = _ESCAPE_SEQUENCE.sub("", str(text)).replace("\r\n", "\n").replace("\r", "\n")
    return multi_line(text)


def json_line(document):
    """document as one line of UTF-8 JSON ending in a newline, for a peer that reads lines (an agent).

    Non-ASCII text is sent as itself (an escaped CJK character is 6 bytes, not 3), so a size cap
    measured on the text holds on the wire; a lone surrogate, which UTF-8 cannot carry, is escaped.
    """
    try:
        return _unicode_json(document).encode("utf-8") + b"\n"
    except UnicodeEncodeError:
        return compact_json(document).encode("ascii") + b"\n"


def _not_serializable(value):
    raise TypeError(f"Object of type {value.__class__.__name__} is not JSON serializable")


def _compact_encoder(ensure_ascii=True):
    """json.JSONEncoder(separators=(",", ":"), ensure_ascii=...).encode without its per-call layers: that method
    builds a new C encoder on every call, two thirds of the time of encoding a short document. No circular
    check: the documents encoded this way are decoded JSON or built from it."""
    make = json.encoder.c_make_encoder
    if make is None:  # no C accelerator (not CPython)
        return json.JSONEncoder(separators=(",", ":"), ensure_ascii=ensure_ascii).encode
    quote = json.encoder.encode_basestring_ascii if ensure_ascii else json.encoder.encode_basestring
    encode = make(None, _not_serializable, quote, None, ":", ",", False, False, True)
    return lambda document: "".join(encode(document, 0))


compact_json = _compact_encoder()  # document as compact JSON, non-ASCII escaped (event rows, stream frames)
_unicode_json = _compact_encoder(ensure_ascii=False)  # the same, non-ASCII as itself (json_line)


class EncodedObject(dict):
    """A JSON object that carries its compact_json text (`json`), built where its shape is known (an agent's text
    chunk: nearly every event of a stream), so that the row that stores it takes the text as is. Never changed."""

    __slots__ = ("json",)

MAX_CONTENT_DEPTH = 64  # nesting an event's content keeps; real updates nest a dozen levels at most
DEPTH_MARKER = "[nested too deep]"


def map_document(value, leaf=None, max_depth=None):
    """A copy of a JSON document with leaf() applied to every value that is neither a dict nor a list,
    and every container more than max_depth levels down replaced by DEPTH_MARKER. Iterative: a document
    an agent nested thousands of levels deep is walked like any other, never through recursion."""
    def copied(node, depth):
        if isinstance(node, dict) or isinstance(node, list):
            return DEPTH_MARKER if max_depth is not None and depth > max_depth else {} if isinstance(node, dict) else []
        return leaf(node) if leaf is not None else node
    root = copied(value, 0)
    pending = [(value, root, 0)] if root is not DEPTH_MARKER and isinstance(root, (dict, list)) else []
    while pending:
        source, target, depth = pending.pop()
        for key, child in (source.items() if isinstance(source, dict) else enumerate(source)):
            copy = copied(child, depth + 1)
            if isinstance(target, dict):
                target[key] = copy
            else:
                target.append(copy)
            if isinstance(copy, (dict, list)):
                pending.append((child, copy, depth + 1))
    return root


def may_nest_deeper(text, max_depth=MAX_CONTENT_DEPTH):
    """Whether a document's JSON text could nest more than max_depth levels (it has that many brackets)."""
    return text.count("[") + text.count("{") > max_depth
