"""What every input carries: its text, its message_id and idempotency_key, and its fingerprint.

Layer 4. A retry with the same idempotency_key must be the same request (same fingerprint) to be
replayed; anything else is a conflict.
"""

import hashlib
import json

from compozy.acp.protocol import encoded_size
from compozy.errors import invalid
from compozy.ids import new_id, validate_client_token
from compozy.validate import MAX_MESSAGE_BYTES



def fingerprint(operation, **fields):
    canonical = json.dumps({"operation": operation, **fields}, sort_keys=True, separators=(",", ":"))
    return "sha256:" + hashlib.sha256(canonical.encode()).hexdigest()


def check_identity(body):
    """message_id and idempotency_key come together (both client-chosen) or not at all."""
    if ("message_id" in body) != ("idempotency_key" in body):
        raise invalid("give message_id and idempotency_key together, or neither")
    if "message_id" in body:
        return (validate_client_token(body["message_id"], "message_id"),
                validate_client_token(body["idempotency_key"], "idempotency_key"))
    return new_id("msg"), new_id("idem")


def check_message(message):
    if not message.strip():
        raise invalid("message must not be blank", field="message")
    try:
        message.encode("utf-8")
    except UnicodeEncodeError:
        raise invalid("message is not valid Unicode text (a lone surrogate)", field="message") from None
    if encoded_size(message) > MAX_MESSAGE_BYTES:  # measured as the agent receives it, escapes included
        raise invalid(f"message is over {MAX_MESSAGE_BYTES} bytes once encoded as JSON", field="message")
    return message
