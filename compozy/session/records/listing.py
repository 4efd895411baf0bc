"""The catalog filters of a session list query.

Layer 4.
"""

DEFAULT_LIST_LIMIT = 100  # a page of the list (this node's or the fleet's) when the query names no limit


def list_filters(query, workspaces):
    """The catalog filters of a list query (workspace by name or ID, parent, root, state, agent, archive);
    query: the parsed request of session.list (compozy/parsing.py)."""
    filters = {"archive": query.get("archive", "exclude")}
    if query.get("workspace") is not None:
        filters["workspace_id"] = workspaces.resolve(query["workspace"])["id"]
    for name, column in (("parent", "parent_session_id"), ("root", "root_session_id")):
        if query.get(name) is not None:
            filters[column] = query[name]
    if query.get("state") is not None:
        filters["state"] = query["state"]
    if query.get("agent") is not None:
        filters["agent_name"] = query["agent"]
    return filters
