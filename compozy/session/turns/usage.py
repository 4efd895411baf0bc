"""A turn's usage, as the agent reported it, kept per turn so that a ledger can sum turns.

Layer 4 (pure functions). ACP gives two reports: the prompt response's `usage` (the turn's own token counts)
and `usage_update` notifications (the context window's fill, `used` of `size`, and the ACP session's
cumulative `cost`). A turn keeps its tokens, its last context report, the cumulative cost and, when the
cost before the turn is known, the turn's own share of it (`turn_cost`).
"""

TOKEN_FIELDS = ("inputTokens", "outputTokens", "totalTokens", "thoughtTokens", "cachedReadTokens",
                "cachedWriteTokens")


def _number(value):
    return isinstance(value, (int, float)) and not isinstance(value, bool) and value >= 0


def cost_of(update):
    """The usage_update's cumulative cost as {"amount", "currency"}, or None."""
    cost = (update or {}).get("cost")
    if isinstance(cost, dict) and _number(cost.get("amount")) and isinstance(cost.get("currency"), str):
        return {"amount": cost["amount"], "currency": cost["currency"][:16]}
    return None


def cost_before(last_seen, acp_session_id, fresh):
    """The cumulative cost an ACP session had before a turn: the last one it reported, or zero for a session
    opened new and not reported yet; None when unknown (a resumed session that never reported)."""
    if last_seen and last_seen.get("acp_session_id") == acp_session_id:
        return {"amount": last_seen["amount"], "currency": last_seen["currency"]}
    return {"amount": 0, "currency": None} if fresh else None


def turn_usage(answered, update, before):
    """The turn's usage document, or None when the agent reported nothing. answered: the prompt response's
    usage; update: the turn's last usage_update; before: cost_before() at the turn's start."""
    document = {}
    tokens = {k: answered[k] for k in TOKEN_FIELDS if _number((answered or {}).get(k))}
    if tokens:
        document["tokens"] = tokens
    if update and _number(update.get("used")) and _number(update.get("size")):
        document["context"] = {"used": update["used"], "size": update["size"]}
    cost = cost_of(update)
    if cost is not None:
        document["cost"] = cost
        if before is not None and before["currency"] in (None, cost["currency"]) and cost["amount"] >= before["amount"]:
            document["turn_cost"] = {"amount": round(cost["amount"] - before["amount"], 9),
                                     "currency": cost["currency"]}
    return document or None


def totals(documents):
    """The sum of turns' usage documents: their tokens, and their turn costs per currency."""
    tokens, costs = {}, {}
    for document in documents:
        for name, value in (document.get("tokens") or {}).items():
            tokens[name] = tokens.get(name, 0) + value
        share = document.get("turn_cost")
        if share:
            costs[share["currency"]] = round(costs.get(share["currency"], 0) + share["amount"], 9)
    return {"turns": len(documents), "tokens": tokens,
            "cost": [{"amount": amount, "currency": currency} for currency, amount in sorted(costs.items())]}

