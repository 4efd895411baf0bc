"""The catalog filters of a session list query.

Layer 4.
"""

from compozy import validate as v
from compozy.errors import invalid
from compozy.ids import validate_id


def list_filters(query, workspaces):
    """The catalog filters of a list query (workspace by name or ID, parent, root, state, agent, archive)."""
    filters = {"archive": query.get("archive", "exclude")}
    if filters["archive"] not in ("exclude", "only", "include"):
        raise invalid("archive must be exclude, only or include", field="archive")
    if query.get("workspace") is not None:
        filters["workspace_id"] = workspaces.resolve(query["workspace"])["id"]
    for name, column in (("parent", "parent_session_id"), ("root", "root_session_id")):
        if query.get(name) is not None:
            filters[column] = validate_id(query[name], "sess", field=name)
    if query.get("state") is not None:
        filters["state"] = v.check_body({"state": query["state"]}, {"state": v.LIST_QUERY["state"]})["state"]
    if query.get("agent") is not None:
        filters["agent_name"] = query["agent"]
    return filters
