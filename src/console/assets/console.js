/* global document, window, location, history, URLSearchParams, AbortController, performance, Element */
// The operator console (served at /console, and at /console/tasks/{id} for one task): a task list paged
// through a keyset cursor and a task page, both live. Plain browser JavaScript in ES modules, no framework and no
// build step: this one routes between the views; console-api.js makes the requests, console-task-list.js and
// console-task-page.js (with its sections, console-task-*.js) draw the views, console-sign-in.js reads the
// session. Data is only ever put into the page as text, never as HTML. Every control has a label and works from
// the keyboard.
import { api, apiKey, ApiError, postJson, setApiKey } from "./console-api.js";
import { el, taskHref } from "./console-dom.js";
import { loadSession } from "./console-sign-in.js";
import { clearError, setLive, showError } from "./console-status.js";
import { showList } from "./console-task-list.js";
import { showTask } from "./console-task-page.js";

performance.mark("console-start"); // for bench/console-paging.ts: the script runs
const view = document.getElementById("view");
/** Aborted when the view changes: stops the streams the previous view opened. */
let viewScope = new AbortController();

// ------------------------------------------------------------------ routing

/** Same-origin navigation without a reload: /console (the list, filters in the query) and /console/tasks/{id}. */
function navigate(url) {
  history.pushState(null, "", url);
  void route();
}

async function route() {
  clearError();
  viewScope.abort();
  viewScope = new AbortController();
  setLive("live");
  // Links of the first console (#/tasks/{id}, #/?filters) still open what they named.
  const legacy = /^#\/(tasks\/(.+)|\?(.*))?$/.exec(location.hash);
  if (legacy)
    history.replaceState(
      null,
      "",
      legacy[2] ? taskHref(decodeURIComponent(legacy[2])) : `/console${legacy[3] ? `?${legacy[3]}` : ""}`,
    );
  try {
    const task = /^\/console\/tasks\/([^/]+)$/.exec(location.pathname);
    const signal = viewScope.signal;
    if (task) await showTask(decodeURIComponent(task[1]), { signal });
    else if (location.pathname === "/console/limits")
      await (await import("/console/assets/console-limits.js")).showLimits({ view, api, el });
    else await showList(new URLSearchParams(location.search), { signal, navigate });
    view.focus({ preventScroll: true });
  } catch (err) {
    if (err instanceof ApiError && err.status === 404) {
      view.replaceChildren(
        el(
          "section",
          { class: "panel", id: "not-found" },
          el("h1", {}, "Not found"),
          el("p", {}, err.body?.message ?? "There is no such task."),
          el("a", { href: "/console", "data-nav": "" }, "← all tasks"),
        ),
      );
    }
    // The session may have ended (its token expired): offer the sign-in again.
    if (err instanceof ApiError && err.status === 401) void loadSession();
    showError(err);
  }
}

document.addEventListener("click", (e) => {
  const link = e.target instanceof Element ? e.target.closest("a[data-nav]") : null;
  if (!link || e.defaultPrevented || e.button !== 0 || e.metaKey || e.ctrlKey || e.shiftKey || e.altKey) return;
  e.preventDefault();
  navigate(link.getAttribute("href"));
});
document.getElementById("api-key").value = apiKey();
document.getElementById("key-form").addEventListener("submit", (e) => {
  e.preventDefault();
  setApiKey(document.getElementById("api-key").value.trim());
  void route();
});
document.getElementById("sign-out").addEventListener("click", async () => {
  try {
    const out = await postJson("/console/auth/logout");
    if (out.endSessionUrl) return location.assign(out.endSessionUrl);
  } catch (err) {
    showError(err);
  }
  await loadSession();
  void route();
});
window.addEventListener("popstate", () => void route());
// Only the first console's links (#/…) route; other fragments (the skip link) stay in-page.
window.addEventListener("hashchange", () => {
  if (location.hash.startsWith("#/")) void route();
});
void loadSession().finally(() => void route());
