"""The usage ledger's side of a turn: its row, the windows reads sum over, and the documents they answer.

Layer 4 (pure functions). compozy.store.ledger keeps the rows and sums them; compozy.session.turns.usage
builds the turn's usage these rows are made from.
"""

import json
from datetime import datetime, timezone

from compozy.clock import iso_from_epoch
from compozy.errors import invalid
from compozy.store.ledger import usage_columns

TOKEN_NAMES = ("input", "output", "thought", "cached_read", "cached_write", "total")


def ledger_row(record, turn, end, usage, ended_at, duration_ms):
    """The usage ledger's row for a finished turn (compozy.store.ledger): who served it, its tokens by kind,
    its own cost, the context at its end (usage_columns)."""
    served = record.runtime.effective or record.runtime.last_known or {}
    return {"turn_id": turn.id, "session_id": record.id, "workspace_id": record.workspace_id,
            "agent": record.agent_name, "provider": served.get("provider"), "model": served.get("model"),
            "started_at": turn.began_at, "ended_at": ended_at, "day": ended_at[:10], "end": end,
            "duration_ms": duration_ms, "budget_override": getattr(turn, "budget_override", None),
            **usage_columns(usage)}


RELATIVE = {"d": 86400, "h": 3600, "m": 60}


def moment(text, name, now):
    """A bound of a usage window as the ledger stores times: `7d`, `24h`, `30m` before now, a day
    (`2026-12-01`, its midnight UTC) or an RFC 3339 UTC time."""
    text = str(text).strip()
    if text[:-1].isdigit() and text[-1:] in RELATIVE:
        return iso_from_epoch(now - int(text[:-1]) * RELATIVE[text[-1]])
    for pattern in ("%Y-%m-%d", "%Y-%m-%dT%H:%M:%SZ", "%Y-%m-%dT%H:%M:%S.%fZ"):
        try:
            return datetime.strptime(text, pattern).replace(tzinfo=timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
        except ValueError:
            continue
    raise invalid(f"{name} must be a span before now (7d, 24h, 30m), a day (2026-12-01) or a UTC time "
                  "(2026-12-01T08:00:00Z)", field=name)


def sums_document(rows):
    """One group's sums from its rows by currency (Ledger.sums without the key): turns, archived turns,
    duration, tokens by kind, and the cost per currency."""
    turns = archived = duration = 0
    tokens, cost = [0] * len(TOKEN_NAMES), []
    for currency, row_turns, row_archived, row_duration, *rest in rows:
        turns, archived, duration = turns + row_turns, archived + (row_archived or 0), duration + (row_duration or 0)
        tokens = [total + (value or 0) for total, value in zip(tokens, rest[:-1])]
        if currency:
            cost.append({"amount": round(rest[-1], 9), "currency": currency})
    return {"turns": turns, "archived_turns": archived, "duration_ms": duration,
            "tokens": dict(zip(TOKEN_NAMES, tokens)), "cost": cost}


def grouped(rows):
    """Ledger.sums' rows as one document per key, in key order."""
    by_key = {}
    for key, *rest in rows:
        by_key.setdefault(key, []).append(rest)
    return [{"key": key, **sums_document(found)} for key, found in by_key.items()]


def total_of(rows):
    """The sums of every row, whatever its key (zeros when no turn matched)."""
    document = sums_document([row[1:] for row in rows])
    costs = {}
    for entry in document["cost"]:
        costs[entry["currency"]] = round(costs.get(entry["currency"], 0) + entry["amount"], 9)
    return {**document, "cost": [{"amount": amount, "currency": currency} for currency, amount in sorted(costs.items())]}


def turn_document(row):
    """A ledger row as reads show it."""
    names = TOKEN_NAMES
    columns = [name + "_tokens" for name in TOKEN_NAMES]
    return {"turn_id": row["turn_id"], "session_id": row["session_id"], "agent": row["agent"],
            "provider": row["provider"], "model": row["model"], "end": row["end"],
            "tokens": {name: row[column] for name, column in zip(names, columns)},
            "cost": {"amount": row["cost_amount"], "currency": row["cost_currency"]} if row["cost_currency"] else None,
            "context": {"used": row["context_used"], "size": row["context_size"]} if row["context_size"] else None,
            "duration_ms": row["duration_ms"], "started_at": row["started_at"], "ended_at": row["ended_at"],
            "archived": bool(row["archived"]),
            "budget_override": json.loads(row["budget_override"]) if row["budget_override"] else None}
