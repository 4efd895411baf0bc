"""A session exported as one self-contained HTML file: the page's own stylesheet inline, no script, the
transcript in the page's classes, so it reads as the page does, offline and in any browser.

Layer 4. Every text goes through html.escape; the entries come redacted (exports.transcript_entries).
"""

from html import escape
from importlib import resources

from compozy.session.records.exports import facts, heading, usage_line

PAGE_ADDITIONS = ("main { max-width: 60em; margin: 0 auto; } .transcript { height: auto; overflow: visible; } "
                  ".msg .body { white-space: pre-wrap; overflow-wrap: anywhere; }")


def stylesheet():
    return resources.files("compozy").joinpath("web").joinpath("style.css").read_text(encoding="utf-8")


def html_document(resource, entries):
    title = escape(heading(resource))
    rows = "".join(f"<dt>{escape(label)}</dt><dd><code>{escape(str(value))}</code></dd>"
                   for label, value in facts(resource))
    body = "\n".join(_entry(entry) for entry in entries)
    return (f"<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>{title}</title>"
            f"<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
            f"<style>{stylesheet()}\n{PAGE_ADDITIONS}</style></head>\n<body><main>"
            f"<div class=\"session-head\"><h1 class=\"name\">{title}</h1></div>"
            f"<section class=\"side\"><dl>{rows}</dl></section>\n"
            f"<div class=\"transcript\">\n{body}\n</div></main></body></html>\n")


def _entry(entry):
    kind = entry["kind"]
    if kind in ("user", "assistant"):
        who = "You" if kind == "user" else "Agent"
        stamp = f" <span class=\"muted\">{escape(entry['timestamp'])}</span>" if entry.get("timestamp") else ""
        return (f"<article class=\"msg {'user' if kind == 'user' else 'agent'}\"><header>{who}{stamp}</header>"
                f"<div class=\"body\">{escape(entry['text'])}</div></article>")
    if kind == "thought":
        return (f"<details class=\"thought\"><summary>thought</summary>"
                f"<div class=\"body\">{escape(entry['text'])}</div></details>")
    if kind == "tool":
        status = escape(entry["status"] or "pending")
        output = f"<pre><code>{escape(entry['output'])}</code></pre>" if entry["output"] else ""
        return (f"<div class=\"tool\" data-status=\"{status}\"><span class=\"badge status\">{status}</span> "
                f"<strong>{escape(entry['title'] or 'Tool call')}</strong>{output}</div>")
    if kind == "permission":
        return (f"<div class=\"permission\"><p>{escape(entry['title'] or 'Permission')}</p>"
                f"<span class=\"decision\">{escape(entry['answer'] or 'not answered')}</span></div>")
    if kind == "usage":
        return f"<div class=\"marker\">{escape(usage_line(entry['usage']))}</div>"
    return f"<div class=\"marker\">{escape(entry['text'] or '')}</div>"
