"""`compozy nodes`: the fleet's nodes (generated from the table; presented here).

Layer 6 (surface).
"""

from compozy.cli.generated import PRESENTATION, Presentation
from compozy.cli.output import table

HEADERS = ("NODE", "STATUS", "ADDRESS", "HEARTBEAT", "AGENTS", "SESSIONS", "FREE MEMORY", "VERSION")


def nodes_text(document):
    rows = [(node["name"] + (" *" if node["this_node"] else ""), node["status"], node["address"],
             f"{node['heartbeat_age']:.1f}s ago", f"{node['load']['live_agents']}/{node['capacity']['max_agents']}",
             str(node["load"]["sessions"]), f"{node['capacity']['free_memory'] / 2**30:.1f} GiB", node["version"])
            for node in document["nodes"]]
    return table(rows, HEADERS, "no nodes")


PRESENTATION["fleet.nodes"] = Presentation(
    "The fleet's nodes: status (up; stopped; unreachable after 15 s without a heartbeat), address, last heartbeat, "
    "agents running of the node's max_agents, sessions, free memory (* marks the node that answered).",
    "compozy nodes\ncompozy nodes -o json", nodes_text)
