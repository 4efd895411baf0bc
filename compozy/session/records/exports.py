"""Exports of a session: Markdown for people, one self-contained HTML file, JSONL of the stored events.

Layer 4. Every format is redacted of the secrets a read knows (LiveSession.read_secrets), in the text
joined from chunks too (replay.assembled, redact.redact_pieces): a value an agent streamed across two
chunks is whole in no export. Markdown and HTML show the active transcript (what a rewind archived is
gone from it); JSONL holds every stored event in sequence order, archived ones marked.
"""

import json

from compozy.errors import invalid
from compozy.redact import redact_pieces, redact_values
from compozy.session.records.replay import assembled
from compozy.text import compact_json

FORMATS = {"md": "text/markdown; charset=utf-8", "html": "text/html; charset=utf-8",
           "jsonl": "application/x-ndjson; charset=utf-8"}
CHUNK_TYPES = ("agent_message", "thought")


def export_format(query):
    """The format a query asks for (md when it names none); invalid_request for anything else."""
    query = dict(query or {})
    unknown = sorted(set(query) - {"format"})
    if unknown:
        raise invalid(f"unknown parameter(s): {', '.join(unknown)}", filters=unknown)
    name = query.get("format") or "md"
    if name not in FORMATS:
        raise invalid("format must be md, html or jsonl", field="format")
    return name


def jsonl(records, secrets):
    """Every stored record (archived ones marked), one compact JSON document a line, in sequence order."""
    return "".join(compact_json(record) + "\n" for record in redacted_records(records, secrets))


def redacted_records(records, secrets):
    """The stored records with the secrets redacted: each run of chunks (one type, one turn) across its
    joined text, every other record (the user's own messages included) in each of its strings."""
    records = [dict(record) for record in records]
    for run in chunk_runs(records):
        texts = redact_pieces([r["content"].get("text", "") for r in run], secrets)
        for record, text in zip(run, texts):
            record["content"] = {**record["content"], "text": text}
    for record in records:
        if record["type"] not in CHUNK_TYPES:
            record["content"] = redact_values(record["content"], secrets)
    return records


def chunk_runs(records):
    """Runs of consecutive chunk records of one type, one turn and one archived mark."""
    runs, key = [], None
    for record in records:
        current = (record["type"], record.get("turn_id"), record.get("archived", False))
        if record["type"] not in CHUNK_TYPES:
            key = None
            continue
        if current != key:
            runs.append([])
            key = current
        runs[-1].append(record)
    return runs


def transcript_entries(records, usage, secrets):
    """The transcript as a person reads it: one entry per prompt, answer, thought, tool call, permission
    request and marker, and the usage each turn recorded after its end. Entries are dicts with `kind`."""
    entries, tools, permissions = [], {}, {}
    usage_of = {row["turn_id"]: row["usage"] for row in usage}
    for record in records:
        kind, content, turn_id = record["type"], record["content"], record.get("turn_id")
        last = entries[-1] if entries else None
        if kind in CHUNK_TYPES:
            role = "assistant" if kind == "agent_message" else "thought"
            if last is not None and last["kind"] == role and last["turn_id"] == turn_id:
                last["parts"].append(content.get("text", ""))
            else:
                entries.append({"kind": role, "turn_id": turn_id, "parts": [content.get("text", "")],
                                "timestamp": record["timestamp"]})
        elif kind == "user_message":
            entries.append({"kind": "user", "turn_id": turn_id, "text": content.get("text", ""),
                            "timestamp": record["timestamp"]})
        elif kind in ("tool_call", "tool_result"):
            _tool(entries, tools, content, turn_id)
        elif kind == "permission":
            _permission(entries, permissions, content, turn_id)
        elif kind == "transcript_marker.created":
            entries.append({"kind": "marker", "turn_id": turn_id, "text": (content.get("marker") or {}).get("summary")})
        elif kind in ("done", "error") and usage_of.get(turn_id):
            entries.append({"kind": "usage", "turn_id": turn_id, "usage": usage_of.pop(turn_id)})
    return [_redacted_entry(entry, secrets) for entry in entries]


def _tool(entries, tools, content, turn_id):
    entry = tools.get(content.get("tool_call_id"))
    if entry is None:
        entry = tools[content.get("tool_call_id")] = {"kind": "tool", "turn_id": turn_id, "title": None,
                                                      "status": None, "output": None}
        entries.append(entry)
    entry["title"] = content.get("title") or entry["title"] or content.get("tool_call_id")
    entry["status"] = content.get("status") or entry["status"]
    if content.get("output"):
        entry["output"] = content["output"]


def _permission(entries, permissions, content, turn_id):
    entry = permissions.get(content.get("request_id"))
    if entry is None:
        entry = permissions[content.get("request_id")] = {"kind": "permission", "turn_id": turn_id,
                                                          "title": None, "answer": None}
        entries.append(entry)
    entry["title"] = content.get("title") or content.get("action") or entry["title"] or content.get("request_id")
    if content.get("decision"):
        option = content.get("option") or {}
        chosen = option.get("name") or option.get("option_id")
        reason = content.get("reason") or "answered"
        entry["answer"] = f"{chosen} ({content['decision']}, {reason})" if chosen else f"{content['decision']} ({reason})"


def _redacted_entry(entry, secrets):
    if "parts" in entry:
        entry = {**{k: v for k, v in entry.items() if k != "parts"}, "text": assembled("".join(entry["parts"]), secrets)}
    return redact_values(entry, secrets)


def usage_line(usage):
    """A turn's usage in words: its tokens and cost, as the agent reported them."""
    tokens = usage.get("tokens") or {}
    words = [f"{tokens[name]} {label}" for name, label in (("inputTokens", "in"), ("outputTokens", "out"),
                                                          ("totalTokens", "total")) if name in tokens]
    cost = usage.get("turn_cost") or usage.get("cost")
    if isinstance(cost, dict) and cost.get("amount") is not None:
        words.append(f"cost {cost['amount']} {cost.get('currency') or ''}".rstrip())
    return "usage: " + (", ".join(words) if words else json.dumps(usage, sort_keys=True))


def heading(resource):
    return resource.get("name") or resource["id"]


def facts(resource):
    """The session's facts a reader of an export wants first, as (label, value) pairs."""
    return [(label, resource.get(key)) for label, key in (
        ("Session", "id"), ("Agent", "agent_name"), ("Workspace", "workspace_id"), ("State", "state"),
        ("Created", "created_at")) if resource.get(key)]


def markdown(resource, entries):
    lines = [f"# {heading(resource)}", ""] + [f"- {label}: `{value}`" for label, value in facts(resource)] + [""]
    for entry in entries:
        lines += _markdown_entry(entry) + [""]
    return "\n".join(lines).rstrip() + "\n"


def _markdown_entry(entry):
    kind = entry["kind"]
    if kind == "user":
        return [f"## User · {entry['timestamp']}", "", entry["text"]]
    if kind == "assistant":
        return ["### Assistant", "", entry["text"]]
    if kind == "thought":
        return ["> *thought:* " + entry["text"].replace("\n", "\n> ")]
    if kind == "tool":
        lines = [f"- **tool call** {entry['title']} ({entry['status'] or 'pending'})"]
        return lines + (["", "```", entry["output"].replace("```", "`\u200b``"), "```"] if entry["output"] else [])
    if kind == "permission":
        return [f"- **permission** {entry['title']}: {entry['answer'] or 'not answered'}"]
    if kind == "usage":
        return [f"*{usage_line(entry['usage'])}*"]
    return [f"*[{entry['text']}]*"]
