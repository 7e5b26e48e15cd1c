/* global document, Node */
// DOM helpers shared by the console's views. Data is only ever put into the page as text, never as HTML.

export function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs)) {
    if (value === undefined || value === false || value === null) continue;
    if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
    else if (key === "class") node.className = value;
    else if (key === "value") node.value = value;
    else node.setAttribute(key, value === true ? "" : String(value));
  }
  for (const child of children.flat())
    if (child !== undefined && child !== null && child !== false)
      node.append(child instanceof Node ? child : String(child));
  return node;
}

export const badge = (state) => el("span", { class: `badge ${state}`, "data-a2a-state": state }, state);
const pad = (n) => String(n).padStart(2, "0");
/**
 * Local time as HH:MM:SS (the full instant is in the cell's title). Not toLocaleTimeString / Intl: in a fresh
 * page the first call loads the locale data, which measured 80–100 ms before the first rows could show
 * (bench/console-paging.ts).
 */
export function time(iso) {
  if (!iso) return "";
  const d = new Date(iso);
  return `${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}`;
}
export const taskHref = (id) => `/console/tasks/${encodeURIComponent(id)}`;

/** "3 s", "4 min", "2 h", "5 d". */
export function duration(ms) {
  if (!Number.isFinite(ms) || ms < 0) return "";
  if (ms < 1000) return `${Math.round(ms)} ms`;
  const s = ms / 1000;
  if (s < 60) return `${s < 10 ? s.toFixed(1) : Math.round(s)} s`;
  if (s < 3600) return `${Math.round(s / 60)} min`;
  if (s < 86400) return `${Math.round(s / 3600)} h`;
  return `${Math.round(s / 86400)} d`;
}

export const ageOf = (task) => duration(Date.now() - Date.parse(task.createdAt));

/** An ISO instant as the value of a datetime-local input (local time), and back. */
export function toLocalInput(iso) {
  if (!iso) return "";
  const d = new Date(iso);
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())}T${pad(d.getHours())}:${pad(d.getMinutes())}`;
}

/**
 * A modal confirmation (a native <dialog>: focus stays inside, Escape cancels). Resolves to
 * { ok, reason } — `reason` when asked for one.
 */
export function confirmDialog({ title, message, confirmLabel, danger = true, reason = false }) {
  return new Promise((resolve) => {
    const reasonInput = reason ? el("textarea", { id: "confirm-reason", rows: 2, placeholder: "optional" }) : undefined;
    const dialog = el("dialog", {
      id: "confirm",
      class: "confirm",
      "aria-labelledby": "confirm-title",
      "aria-describedby": "confirm-message",
    });
    const finish = (ok) => {
      const value = { ok, ...(reasonInput && reasonInput.value.trim() ? { reason: reasonInput.value.trim() } : {}) };
      dialog.close();
      dialog.remove();
      resolve(value);
    };
    dialog.append(
      el("h2", { id: "confirm-title" }, title),
      el("p", { id: "confirm-message" }, message),
      reasonInput ? el("label", { for: "confirm-reason", class: "block" }, "Reason", reasonInput) : "",
      el(
        "div",
        { class: "actions" },
        el("button", { type: "button", class: "secondary", id: "confirm-no", onclick: () => finish(false) }, "Keep it"),
        el(
          "button",
          { type: "button", class: danger ? "danger" : "", id: "confirm-yes", onclick: () => finish(true) },
          confirmLabel,
        ),
      ),
    );
    dialog.addEventListener("cancel", (e) => {
      e.preventDefault();
      finish(false);
    });
    document.body.append(dialog);
    dialog.showModal();
    dialog.querySelector("#confirm-no").focus();
  });
}
