// Search every session from the list (GET /api/search): a hit opens its session at the message found
// (/sessions/<id>?at=<sequence>; the session view scrolls to that block and marks it).
import { $, el, replace, ago, withProfile } from "./dom.js";
import { call } from "./api.js";

export class Search {
  constructor({ alert, navigate }) {
    this.alert = alert;
    this.navigate = navigate;
    $("search").addEventListener("submit", (e) => { e.preventDefault(); this.run(); });
  }

  async run() {
    const q = $("search-q").value.trim();
    const results = $("search-results");
    results.hidden = !q;
    if (!q) return replace(results);
    try {
      const { search } = await call("search.query", { q, limit: 20 });
      replace(results, search.hits.length ? search.hits.map((hit) => this.row(hit))
        : el("li", { class: "muted" }, "No messages match."));
    } catch (error) {
      replace(results);
      results.hidden = true;
      this.alert(error);
    }
  }

  row(hit) {
    const target = `/sessions/${encodeURIComponent(hit.session_id)}?at=${hit.sequence}`;
    const open = (e) => {
      if (e.button !== 0 || e.ctrlKey || e.metaKey || e.shiftKey) return;
      e.preventDefault();
      this.navigate(target);
    };
    return el("li", { "data-session-id": hit.session_id },
      el("a", { href: withProfile(target), class: "snippet", onclick: open }, ...marked(hit.snippet)),
      el("span", { class: "muted hit-where" }, `${hit.kind} · ${hit.session_id} · `, ago(hit.timestamp)));
  }
}

// The daemon marks each match **like this**: text stays text, the matches become <mark>.
function marked(snippet) {
  return snippet.split("**").map((part, i) => (i % 2 ? el("mark", {}, part) : part));
}

// The sequence a search hit asked the session view to show, or null.
export function requestedSequence() {
  const at = new URLSearchParams(location.search).get("at");
  return at && /^\d+$/.test(at) ? Number(at) : null;
}
