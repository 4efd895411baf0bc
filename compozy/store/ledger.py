"""The usage ledger (compozy.db): one row per turn, summed across sessions, workspaces, agents and days.

Layer 2. A row keeps who served the turn (agent, provider, model), its tokens by kind, its own cost with
its currency when the agent reported one, the context's fill at its end, its duration and the daemon's
time. Rows are never deleted with their session's events: a rewind marks its turns archived (they still
count), a removed session's rows stay (what was spent was spent).

Beside the rows, a daily rollup (one row per day, workspace, agent, provider, model and currency) is kept
in the same transaction: a summary by anything but the session reads whole days from the rollup and
only the partial days at the window's edges from the rows, so a 30-day summary over 10,000 sessions
reads some thousand rows, not tens of thousands (bench/bench_ledger.py).
"""

from datetime import datetime, timedelta

from compozy.store.rows import marks

TOKENS = ("input_tokens", "output_tokens", "thought_tokens", "cached_read_tokens", "cached_write_tokens",
          "total_tokens")
COLUMNS = ("turn_id", "session_id", "workspace_id", "agent", "provider", "model", *TOKENS, "cost_amount",
           "cost_currency", "context_used", "context_size", "duration_ms", "started_at", "ended_at", "day", "end",
           "archived", "budget_override")
ROLLUP_KEY = ("day", "workspace_id", "agent", "provider", "model", "currency")
ADDED = ("turns", "archived", "duration_ms", *TOKENS, "cost")
DDL = (
    "CREATE TABLE IF NOT EXISTS usage_ledger (turn_id TEXT PRIMARY KEY, session_id TEXT NOT NULL, workspace_id "
    "TEXT NOT NULL, agent TEXT NOT NULL, provider TEXT, model TEXT, "
    + ", ".join(f"{name} INTEGER NOT NULL DEFAULT 0" for name in TOKENS)
    + ", cost_amount REAL, cost_currency TEXT, context_used INTEGER, context_size INTEGER, duration_ms INTEGER, "
      "started_at TEXT, ended_at TEXT NOT NULL, day TEXT NOT NULL, end TEXT, archived INTEGER NOT NULL DEFAULT 0, "
      "budget_override TEXT)",
    "CREATE INDEX IF NOT EXISTS usage_by_time ON usage_ledger (ended_at)",
    "CREATE INDEX IF NOT EXISTS usage_by_session ON usage_ledger (session_id)",
    "CREATE TABLE IF NOT EXISTS usage_daily (day TEXT NOT NULL, workspace_id TEXT NOT NULL, agent TEXT NOT NULL, "
    "provider TEXT NOT NULL, model TEXT NOT NULL, currency TEXT NOT NULL, "
    + ", ".join(f"{name} {'REAL' if name == 'cost' else 'INTEGER'} NOT NULL DEFAULT 0" for name in ADDED)
    + ", PRIMARY KEY (day, workspace_id, agent, provider, model, currency))",
)
SESSION_KEY = ("session_id", "workspace_id", "agent", "currency")
SESSIONS_DDL = (
    "CREATE TABLE usage_sessions (session_id TEXT NOT NULL, workspace_id TEXT NOT NULL, agent TEXT NOT NULL, "
    "currency TEXT NOT NULL, first_ended TEXT NOT NULL, last_ended TEXT NOT NULL, "
    + ", ".join(f"{name} {'REAL' if name == 'cost' else 'INTEGER'} NOT NULL DEFAULT 0" for name in ADDED)
    + ", PRIMARY KEY (session_id, workspace_id, agent, currency))",
    "CREATE INDEX usage_sessions_by_first ON usage_sessions (first_ended)",
    "CREATE INDEX usage_sessions_by_last ON usage_sessions (last_ended)",
    # A catalog written before the rollup existed: its rows summed once, as record() would have.
    f"INSERT INTO usage_sessions ({', '.join(SESSION_KEY)}, first_ended, last_ended, {', '.join(ADDED)}) "
    f"SELECT session_id, workspace_id, agent, COALESCE(cost_currency, ''), MIN(ended_at), MAX(ended_at), COUNT(*), "
    f"SUM(archived), SUM(COALESCE(duration_ms, 0)), {', '.join(f'SUM({name})' for name in TOKENS)}, "
    f"SUM(COALESCE(cost_amount, 0)) FROM usage_ledger GROUP BY 1, 2, 3, 4",
)
GROUPS = {"session": "session_id", "workspace": "workspace_id", "agent": "agent", "provider": "provider",
          "model": "model", "day": "day"}
RAW = (f"SELECT session_id, workspace_id, agent, COALESCE(provider, '') AS provider, COALESCE(model, '') AS model, "
       f"day, 1 AS turns, archived, COALESCE(duration_ms, 0) AS duration_ms, {', '.join(TOKENS)}, "
       f"COALESCE(cost_currency, '') AS currency, COALESCE(cost_amount, 0) AS cost FROM usage_ledger")
PER_SESSION = (f"SELECT session_id, workspace_id, agent, '' AS provider, '' AS model, '' AS day, turns, archived, "
               f"duration_ms, {', '.join(TOKENS)}, currency, cost FROM usage_sessions")
DAILY = (f"SELECT '' AS session_id, workspace_id, agent, provider, model, day, turns, archived, duration_ms, "
         f"{', '.join(TOKENS)}, currency, cost FROM usage_daily")
DAY = "%Y-%m-%d"
TOKEN_COLUMNS = {"inputTokens": "input_tokens", "outputTokens": "output_tokens", "thoughtTokens": "thought_tokens",
                 "cachedReadTokens": "cached_read_tokens", "cachedWriteTokens": "cached_write_tokens",
                 "totalTokens": "total_tokens"}


def usage_columns(usage):
    """A turn's usage document (compozy.session.turns.usage) as ledger columns: its tokens by kind (the total,
    when the agent gave none, is input + output + thought), its own cost, the context at its end."""
    usage = usage or {}
    tokens = usage.get("tokens") or {}
    row = {column: int(tokens.get(name, 0)) for name, column in TOKEN_COLUMNS.items()}
    if not tokens.get("totalTokens"):
        row["total_tokens"] = row["input_tokens"] + row["output_tokens"] + row["thought_tokens"]
    share = usage.get("turn_cost")
    if share:
        row["cost_amount"], row["cost_currency"] = share["amount"], share["currency"]
    context = usage.get("context")
    if context:
        row["context_used"], row["context_size"] = context["used"], context["size"]
    return row


def _day_after(day):
    return (datetime.strptime(day, DAY) + timedelta(days=1)).strftime(DAY)


def _whole_days(since, until):
    """(first whole day, the day after the last whole one) of [since, until), as day texts ('' and '~' open)."""
    first = "" if since is None else since[:10] if since[10:].strip("T:.0Z") == "" else _day_after(since[:10])
    end = "~" if until is None else until[:10]
    return first, end


class Ledger:
    """The tables, on the catalog's connection and lock (compozy.store.catalog)."""

    def __init__(self, guard):
        self.guard = guard
        with guard.write() as db:
            for statement in DDL:
                db.execute_sql(statement)
            if not db.execute_sql("SELECT 1 FROM sqlite_master WHERE name = 'usage_sessions'").fetchone():
                for statement in SESSIONS_DDL:
                    db.execute_sql(statement)

    def record(self, row):
        """One turn's row, and its share of the day's rollup; a turn recorded again is ignored."""
        names = [name for name in COLUMNS if name in row]
        with self.guard.write() as db:
            if db.execute_sql("INSERT OR IGNORE INTO usage_ledger (" + ", ".join(names) + f") VALUES ({marks(names)})",
                              [row[name] for name in names]).rowcount:
                self._roll(db, row, turns=1, archived=int(bool(row.get("archived"))))

    def _roll(self, db, row, turns, archived):
        key = [row["day"], row["workspace_id"], row["agent"], row.get("provider") or "", row.get("model") or "",
               row.get("cost_currency") or ""]
        added = [turns, archived, (row.get("duration_ms") or 0) * turns, *(row.get(name, 0) * turns for name in TOKENS),
                 (row.get("cost_amount") or 0) * turns]
        db.execute_sql(f"INSERT INTO usage_daily ({', '.join(ROLLUP_KEY + ADDED)}) VALUES ({marks(ROLLUP_KEY + ADDED)}) "
                       f"ON CONFLICT DO UPDATE SET " + ", ".join(f"{name} = {name} + excluded.{name}" for name in ADDED),
                       key + added)
        ended = row["ended_at"]
        db.execute_sql(f"INSERT INTO usage_sessions ({', '.join(SESSION_KEY)}, first_ended, last_ended, {', '.join(ADDED)}) "
                       f"VALUES ({marks(SESSION_KEY + ('first', 'last') + ADDED)}) ON CONFLICT DO UPDATE SET "
                       "first_ended = MIN(first_ended, excluded.first_ended), "
                       "last_ended = MAX(last_ended, excluded.last_ended), "
                       + ", ".join(f"{name} = {name} + excluded.{name}" for name in ADDED),
                       [row["session_id"], row["workspace_id"], row["agent"], key[-1], ended, ended] + added)

    def mark_archived(self, session_id, turn_ids):
        if not turn_ids:
            return
        with self.guard.write() as db:
            rows = db.execute_sql(f"SELECT {', '.join(COLUMNS)} FROM usage_ledger WHERE session_id = ? AND archived = 0 "
                                  f"AND turn_id IN ({marks(turn_ids)})", (session_id, *turn_ids)).fetchall()
            for values in rows:
                row = dict(zip(COLUMNS, values))
                db.execute_sql("UPDATE usage_ledger SET archived = 1 WHERE turn_id = ?", (row["turn_id"],))
                self._roll(db, row, turns=0, archived=1)

    def sums(self, group=None, since=None, until=None, where="1", params=(), by_session=False):
        """[(key, currency, turns, archived, duration_ms, *TOKENS, cost)] by the group's column (None: one group)
        and currency ('' for turns without a cost) over the turns ended in [since, until). where: an SQL
        condition from the code over the columns both tables share (workspace_id, agent); by_session: it names
        session_id (the rows alone can answer it)."""
        key = GROUPS[group] if group else "''"
        if group == "session" and not by_session:
            source, values = self._by_session(since, until, where, list(params))
        else:
            source, values = self._source(by_session, since, until, where, list(params))
        sql = (f"SELECT {key} AS k, currency, SUM(turns), SUM(archived), SUM(duration_ms), "
               f"{', '.join(f'SUM({name})' for name in TOKENS)}, SUM(cost) FROM ({source}) GROUP BY k, currency "
               "ORDER BY k, currency")
        with self.guard.read() as db:
            return db.execute_sql(sql, values).fetchall()

    def biggest(self, group, limit, since=None, until=None, where="1", params=()):
        """(the keys of the `limit` groups with the most tokens in all, biggest first, then by key; how many groups
        there are), summed in SQL over the same rows as sums(): only the chosen groups are read back."""
        key = GROUPS[group]
        if group == "session":
            source, values = self._by_session(since, until, where, list(params))
        else:
            source, values = self._source(False, since, until, where, list(params))
        sql = (f"SELECT k, COUNT(*) OVER () FROM (SELECT {key} AS k, SUM(total_tokens) AS t FROM ({source}) GROUP BY k) "
               "ORDER BY t DESC, k LIMIT ?")
        with self.guard.read() as db:
            rows = db.execute_sql(sql, [*values, limit]).fetchall()
        return [row[0] for row in rows], rows[0][1] if rows else 0

    def _by_session(self, since, until, where, params):
        """The rows to sum by session, as SQL: a session's rollup rows (usage_sessions: one per session, workspace,
        agent and currency, with the first and last end of its turns) that lie inside [since, until), and only the
        sessions that straddle a bound (few: those working at the window's edges) from their ledger rows in it."""
        edges = [value for value in (since, until) if value is not None]
        if not edges:  # no window: every session whole
            return f"{PER_SESSION} WHERE ({where})", params
        straddling = ("SELECT session_id FROM usage_sessions WHERE "
                      + " OR ".join("(first_ended < ? AND last_ended >= ?)" for _ in edges))
        bounds = [value for edge in edges for value in (edge, edge)]
        inside = " AND ".join(sql for sql, value in (("first_ended >= ?", since), ("last_ended < ?", until))
                              if value is not None)
        window = " AND ".join(f"ended_at {op} ?" for op, value in ((">=", since), ("<", until)) if value is not None)
        return (f"{PER_SESSION} WHERE ({where}) AND {inside} AND session_id NOT IN ({straddling}) UNION ALL "
                f"{RAW} WHERE ({where}) AND {window} AND session_id IN ({straddling})",
                [*params, *edges, *bounds, *params, *edges, *bounds])

    def _source(self, rows_only, since, until, where, params):
        """The rows to sum, as SQL: the ledger's rows in the window, or the rollup's whole days plus the rows of
        the partial days at its edges."""
        def rows(low, high):
            bounds = [("ended_at >= ?", low), ("ended_at < ?", high)]
            return " AND ".join([f"({where})"] + [sql for sql, value in bounds if value is not None]), \
                [*params, *(value for _, value in bounds if value is not None)]
        if rows_only:  # a long window reads every row in order: cheaper than a lookup per row through the index
            condition, values = rows(since, until)
            long = since is None or (until or "~") > _day_after(_day_after(since[:10]))
            return f"{RAW}{' NOT INDEXED' if long else ''} WHERE {condition}", values
        first, end = _whole_days(since, until)
        if first >= end:  # within one day
            condition, values = rows(since, until)
            return f"{RAW} WHERE {condition}", values
        parts = [(f"{DAILY} WHERE ({where}) AND day >= ? AND day < ?", [*params, first, end])]
        if since is not None and since[:10] < first:
            condition, values = rows(since, first + "T00:00:00.000000Z")
            parts.append((f"{RAW} WHERE {condition}", values))
        if until is not None and until[10:].strip("T:.0Z"):
            condition, values = rows(end + "T00:00:00.000000Z", until)
            parts.append((f"{RAW} WHERE {condition}", values))
        return " UNION ALL ".join(sql for sql, _ in parts), [value for _, values in parts for value in values]

    def turns(self, session_id):
        """A session's rows, in the order its turns ended."""
        with self.guard.read() as db:
            rows = db.execute_sql(f"SELECT {', '.join(COLUMNS)} FROM usage_ledger WHERE session_id = ? "
                                  "ORDER BY ended_at, rowid", (session_id,)).fetchall()
        return [dict(zip(COLUMNS, row)) for row in rows]
