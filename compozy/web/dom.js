// DOM building, text cleaning, time formatting, the JSON API and event streams.
// Every string reaches the page as a text node: nothing here (or anywhere) sets innerHTML.

// Controls and bidi overrides would hide or reorder text; they are shown as \uXXXX instead.
const HIDDEN_CHARACTERS = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/g;

function visible(text) {
  return String(text ?? "").replace(HIDDEN_CHARACTERS,
    (c) => "\\u" + c.charCodeAt(0).toString(16).padStart(4, "0"));
}

export function el(tag, props = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(props)) {
    if (value == null || value === false) continue;
    if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
    else if (key === "value") node.value = value;
    else node.setAttribute(key, value === true ? "" : visible(value));
  }
  append(node, children);
  return node;
}

function append(node, children) {
  for (const child of [children].flat(Infinity)) {
    if (child == null || child === false) continue;
    node.append(child instanceof Node ? child : visible(child));
  }
  return node;
}

export function replace(node, ...children) {
  node.replaceChildren();
  return append(node, children);
}

export const $ = (id) => document.getElementById(id);

export function duration(seconds) {
  const s = Math.max(0, Math.floor(seconds));
  if (s < 60) return `${s}s`;
  const m = Math.floor(s / 60);
  return m < 60 ? `${m}m` : `${Math.floor(m / 60)}h ${m % 60}m`;
}

export const secondsSince = (iso) => (Date.now() - Date.parse(iso)) / 1000;
export const secondsBetween = (from, to) => (Date.parse(to) - Date.parse(from)) / 1000;

// How long something took: "0.8s", "42s", "3m 04s", "1h 02m".
export function took(seconds) {
  if (seconds < 0.1) return "<0.1s";
  if (seconds < 10) return `${seconds.toFixed(1)}s`;
  const s = Math.round(seconds);
  const two = (n) => String(n).padStart(2, "0");
  if (s < 60) return `${s}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m ${two(s % 60)}s`;
  return `${Math.floor(s / 3600)}h ${two(Math.floor(s / 60) % 60)}m`;
}

// When something happened, as a <time>: "14:02" today, "3 Dec 14:02" before; the full timestamp on hover.
export function clock(iso) {
  if (!iso) return null;
  const date = new Date(iso);
  const time = date.toLocaleTimeString([], { hour: "2-digit", minute: "2-digit" });
  const day = date.toDateString() === new Date().toDateString() ? ""
    : date.toLocaleDateString([], { day: "numeric", month: "short" }) + " ";
  return el("time", { datetime: iso, title: date.toLocaleString() }, day + time);
}

// A <time> element kept current by refreshTimes(), which the page calls every second.
export function ago(iso) {
  return iso ? el("time", { datetime: iso, title: iso, "data-ago": true }, duration(secondsSince(iso)) + " ago")
    : "never";
}

export function refreshTimes() {
  for (const node of document.querySelectorAll("time[data-ago]")) {
    node.textContent = duration(secondsSince(node.dateTime)) + " ago";
  }
}

// The profile the page was opened for (`/?profile=NAME`): every request and every page address keeps it, so the
// main daemon relays each one to that profile's daemon (docs/web.md).
export const profile = new URLSearchParams(location.search).get("profile");

export function withProfile(path) {
  if (!profile) return path;
  return `${path}${path.includes("?") ? "&" : "?"}profile=${encodeURIComponent(profile)}`;
}

export const sessionHref = (id) => withProfile(`/sessions/${encodeURIComponent(id)}`);

// Every write carries a JSON body (an empty object when there is nothing to say).
export async function api(method, path, body) {
  const init = { method, headers: { Accept: "application/json" } };
  if (method !== "GET") {
    init.headers["Content-Type"] = "application/json";
    init.body = JSON.stringify(body ?? {});
  }
  const response = await fetch(withProfile(path), init);
  const text = await response.text();
  const answer = text ? JSON.parse(text) : {};
  if (!response.ok) {
    const error = new Error(`${answer.code || response.status}: ${answer.error || "request failed"}`);
    error.body = answer; // the error document: its code, details and fields such as child_session_id
    throw error;
  }
  return answer;
}

// Follows a Server-Sent Events route with fetch, so every event type arrives (EventSource delivers
// only the names one subscribes to). After a dropped connection it reconnects with backoff; with
// `resume` it asks for what came after the last sequence it saw (from the start the first time).
export function follow(path, { onEvent, onOpen, onDrop, resume = false }) {
  let controller = null;
  let closed = false;
  let last = 0;
  (async () => {
    let delay = 500;
    while (!closed) {
      controller = new AbortController();
      try {
        const target = withProfile(resume ? `${path}?after_sequence=${last}` : path);
        const response = await fetch(target, { headers: { Accept: "text/event-stream" }, signal: controller.signal });
        if (!response.ok) throw new Error(`the stream answered ${response.status}`);
        delay = 500;
        onOpen?.();
        await readFrames(response.body, (frame) => {
          if (frame.id) last = Number(frame.id);
          onEvent(JSON.parse(frame.data)); // the record names its own type
        });
      } catch {
        // a dropped connection or a refused request: try again after a pause
      }
      if (closed) return;
      onDrop?.();
      await new Promise((resolve) => setTimeout(resolve, delay));
      delay = Math.min(delay * 2, 8000);
    }
  })();
  return { close() { closed = true; controller?.abort(); } };
}

async function readFrames(body, onFrame) {
  const reader = body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    buffer += value;
    let end;
    while ((end = buffer.indexOf("\n\n")) >= 0) {
      const frame = parseFrame(buffer.slice(0, end));
      buffer = buffer.slice(end + 2);
      if (frame.data !== undefined) onFrame(frame);
    }
  }
}

function parseFrame(block) {
  const frame = {};
  for (const line of block.split("\n")) {
    if (!line || line.startsWith(":")) continue;
    const colon = line.indexOf(":");
    const name = colon < 0 ? line : line.slice(0, colon);
    const value = colon < 0 ? "" : line.slice(colon + 1).replace(/^ /, "");
    frame[name] = name === "data" && frame.data !== undefined ? `${frame.data}\n${value}` : value;
  }
  return frame;
}
