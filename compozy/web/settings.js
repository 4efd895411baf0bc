// The settings view (/settings): the settings the daemon lets a person change here (GET /api/settings), each
// with its value, default and help; saving one writes it into config.toml and applies it (PUT /api/settings/X).
import { $, el, replace } from "./dom.js";
import { call } from "./api.js";

export class SettingsView {
  constructor({ alert }) {
    this.alert = alert;
  }

  async show() {
    document.title = "Settings · compozy";
    try {
      const { settings, path } = await call("settings.list");
      replace($("settings-list"), settings.map((setting) => this.form(setting)));
      replace($("settings-path"), "Saved into ", el("code", {}, path), " and applied at once, as ",
        el("code", {}, "compozy daemon reload"), " would; every other line of the file stays as it is.");
    } catch (error) {
      this.alert(error);
    }
  }

  form(setting) {
    const id = `setting-${setting.name.replaceAll(".", "-")}`;
    const input = setting.kind === "choice"
      ? el("select", { id, name: "value" }, setting.choices.map((c) => el("option", { value: c, selected: c === setting.value }, c)))
      : el("input", { id, name: "value", value: setting.value, required: true, inputmode: "text", autocomplete: "off",
        placeholder: setting.default, "aria-describedby": `${id}-help` });
    const status = el("span", { class: "setting-status", role: "status" });
    const form = el("form", { class: "setting", "data-setting": setting.name, "aria-label": setting.title },
      el("label", { for: id }, setting.title),
      el("div", { class: "setting-input" }, input, el("button", { type: "submit" }, "Save"), status),
      el("p", { id: `${id}-help`, class: "muted help" }, help(setting), " In config.toml: ",
        el("code", {}, setting.name), "."));
    form.addEventListener("submit", async (e) => {
      e.preventDefault();
      replace(status, "Saving…");
      status.className = "setting-status";
      try {
        const { setting: saved } = await call("settings.set", { setting: setting.name },
          { value: input.value.trim() });
        input.value = saved.value;
        replace(status, "Saved and applied");
        status.classList.add("ok");
      } catch (error) {
        replace(status, error.body?.error || error.message);
        status.classList.add("bad");
      }
    });
    return form;
  }
}

function help(setting) {
  const example = setting.kind === "duration" ? ' Durations read like "90s", "30m" or "2h".' : "";
  return `${setting.description}${example} Default: ${setting.default}.`;
}
