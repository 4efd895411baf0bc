// A small Markdown renderer for agent text that builds DOM nodes, never HTML: code fences, inline
// code, emphasis, links (http and https only), lists, headings and paragraphs. Anything else stays
// literal text, so hostile text can at worst look odd.
import { el } from "./dom.js";

const FENCE = /^\s*(```|~~~)/;
const HEADING = /^(#{1,6})\s+(.*)$/;
const ITEM = /^\s*([-*+]|\d+[.)])\s+(.*)$/;
const INLINE = /`([^`\n]+)`|\*\*([^*\n]+)\*\*|__([^_\n]+)__|\*([^*\n]+)\*|\b_([^_\n]+)_\b|\[([^\]\n]+)\]\(([^)\s]+)\)/;

export function renderMarkdown(text) {
  const lines = String(text).split("\n");
  const blocks = [];
  let i = 0;
  while (i < lines.length) {
    const line = lines[i];
    if (FENCE.test(line)) {
      const marker = line.trim().slice(0, 3);
      const body = [];
      for (i += 1; i < lines.length && !lines[i].trim().startsWith(marker); i += 1) body.push(lines[i]);
      blocks.push(el("pre", {}, el("code", {}, body.join("\n"))));
      i += 1;
    } else if (HEADING.test(line)) {
      const [, hashes, title] = line.match(HEADING);
      blocks.push(el(`h${Math.min(hashes.length + 2, 6)}`, {}, inline(title)));
      i += 1;
    } else if (ITEM.test(line)) {
      const ordered = /^\s*\d/.test(line);
      const list = el(ordered ? "ol" : "ul");
      for (; i < lines.length && ITEM.test(lines[i]) && /^\s*\d/.test(lines[i]) === ordered; i += 1) {
        list.append(el("li", {}, inline(lines[i].match(ITEM)[2])));
      }
      blocks.push(list);
    } else if (line.trim() === "") {
      i += 1;
    } else {
      const paragraph = [];
      for (; i < lines.length && lines[i].trim() && !startsBlock(lines[i]); i += 1) paragraph.push(lines[i]);
      blocks.push(el("p", {}, inline(paragraph.join("\n"))));
    }
  }
  return blocks;
}

// Plain text with its `code` spans as <code> (the daemon's own advice names commands that way).
export function withCode(text) {
  return String(text).split(/`([^`\n]+)`/).map((part, i) => (i % 2 ? el("code", {}, part) : part));
}

const startsBlock = (line) => FENCE.test(line) || HEADING.test(line) || ITEM.test(line);

function inline(text) {
  const parts = [];
  let rest = text;
  let match;
  while ((match = rest.match(INLINE))) {
    parts.push(rest.slice(0, match.index));
    parts.push(inlineNode(match));
    rest = rest.slice(match.index + match[0].length);
  }
  parts.push(rest);
  return parts;
}

function inlineNode([whole, code, strong, strong2, em, em2, label, url]) {
  if (code !== undefined) return el("code", {}, code);
  if (strong !== undefined || strong2 !== undefined) return el("strong", {}, inline(strong ?? strong2));
  if (em !== undefined || em2 !== undefined) return el("em", {}, inline(em ?? em2));
  if (/^https?:\/\//i.test(url)) return el("a", { href: url, rel: "noopener noreferrer", target: "_blank" }, inline(label));
  return whole;
}
