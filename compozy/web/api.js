// The page's one client of the daemon's API: every request names its operation as compozy/api.py's table does
// (served from that table as operations.js), never a path spelled by hand. params fill the operation's path
// and, for the rest, its query; body is the JSON body. tests/test_web_api.py fails when the page names an
// operation the table lacks.
import { OPERATIONS } from "./operations.js";
import { api } from "./dom.js";

// The path parameters of a session's scoped operations.
export const sessionOf = (s) => ({ workspace: s.workspace_id, session_id: s.id });

export function address(name, params = {}) {
  const operation = OPERATIONS[name];
  if (!operation) throw new Error(`the page names an unknown operation: ${name}`);
  const rest = { ...params };
  const path = operation.rule.replace(/<(?:\w+:)?(\w+)>/g, (_, key) => {
    const value = rest[key];
    delete rest[key];
    return encodeURIComponent(value);
  });
  const query = new URLSearchParams(Object.entries(rest).filter(([, value]) => value !== undefined && value !== null)
    .map(([key, value]) => [key, String(value)])).toString();
  return { method: operation.method, path: query ? `${path}?${query}` : path };
}

export function call(name, params, body) {
  const { method, path } = address(name, params);
  return api(method, path, body);
}
