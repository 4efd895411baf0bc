"""Raw SQL for the catalog's per-prompt rows: peewee's query building costs 0.3-1 ms a call there.

Layer 2. Table and column names come from the code, never from a request; values are bound.
"""

from compozy.clock import now_iso


def update_row(db, table, row_id, fields, guard=None):
    """UPDATE one row by id, stamping updated_at; guard=(column, expected) makes it conditional.

    Returns the number of rows changed (0 when the row is gone or the guard did not match)."""
    fields = {"updated_at": now_iso(), **fields}
    sql = f"UPDATE {table} SET {', '.join(f'{name} = ?' for name in fields)} WHERE id = ?"
    params = [*fields.values(), row_id]
    if guard is not None and guard[1] is not None:
        sql += f" AND {guard[0]} = ?"
        params.append(guard[1])
    return db.execute_sql(sql, params).rowcount


def select_rows(db, table, columns, where, params, order=""):
    """Rows as dicts of their columns, as SQLite holds them (compozy.store.records types them)."""
    sql = f"SELECT {', '.join(columns)} FROM {table} WHERE {where}" + (f" ORDER BY {order}" if order else "")
    return [dict(zip(columns, row)) for row in db.execute_sql(sql, params).fetchall()]


def marks(values):
    """`?, ?, ?` for an IN list."""
    return ", ".join("?" * len(values))
