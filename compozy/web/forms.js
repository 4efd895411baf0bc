// A question's free form (an agent's elicitation): its fields, and the answer's content from them; the
// inbox and the session's transcript both draw it.
import { el } from "./dom.js";

// An action that takes content (a question's free form) has a field per property of the form it names: text,
// a number, or a checkbox; its button sends their values as the answer's content.
export function formFields(schema) {
  const properties = schema?.properties && typeof schema.properties === "object" ? schema.properties : {};
  return Object.entries(properties).map(([name, spec]) => {
    const type = spec?.type === "boolean" ? "checkbox"
      : spec?.type === "number" || spec?.type === "integer" ? "number" : "text";
    const input = el("input", { type, name, "aria-label": spec?.title || name, placeholder: spec?.title || name });
    if (spec?.default !== undefined) {
      if (type === "checkbox") input.checked = Boolean(spec.default);
      else input.value = String(spec.default);
    }
    return input;
  });
}

// What the page shows of the fields: each with its title beside it (a default fills the field and hides the
// placeholder, so the title cannot live there alone).
export function formControls(fields) {
  return fields.map((input) => el("label", { class: "form-field" }, input.getAttribute("aria-label"), input));
}

// An empty field is left out (the daemon then names a required one missing).
export function contentOf(fields) {
  return Object.fromEntries(fields.filter((input) => input.type === "checkbox" || input.value !== "")
    .map((input) => [input.name, input.type === "checkbox" ? input.checked
      : input.type === "number" ? Number(input.value) : input.value]));
}
