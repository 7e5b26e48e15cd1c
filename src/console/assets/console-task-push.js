// The task page's push notifications: each config's delivery (cursor, attempts, next retry, lease) and the
// dead letters, with a button to retry a config now.
import { api, postJson } from "./console-api.js";
import { el, time } from "./console-dom.js";

/** Reads the task's push state and draws it into `pushBox`; `act(call)` runs a retry and refreshes the page. */
export async function renderPush(pushBox, taskId, act) {
  const push = await api(`/console/api/tasks/${encodeURIComponent(taskId)}/push`);
  if (!push.enabled)
    return pushBox.replaceChildren(el("p", { class: "muted" }, "Push notifications are disabled on this host."));
  if (push.configs.length === 0 && push.deadLetters.length === 0)
    return pushBox.replaceChildren(el("p", { class: "muted" }, "No push configs."));
  pushBox.replaceChildren(
    el(
      "table",
      {},
      el(
        "thead",
        {},
        el(
          "tr",
          {},
          [
            "Config",
            "Target",
            "Delivered up to",
            "Attempts",
            "Next retry",
            "Last error",
            "Delivering instance",
            "",
          ].map((h) => el("th", { scope: "col" }, h)),
        ),
      ),
      el(
        "tbody",
        {},
        push.configs.map((c) =>
          el(
            "tr",
            {},
            el("td", { class: "mono" }, c.configId),
            el("td", { class: "mono" }, c.target),
            el("td", {}, c.delivery.settled ? "settled" : `#${c.delivery.cursor}`),
            el("td", {}, c.delivery.attempts),
            el("td", {}, time(c.delivery.nextAttemptAt) || "—"),
            el("td", { class: "mono" }, c.delivery.lastError ?? ""),
            el("td", { class: "mono" }, c.lease ? `${c.lease.owner} (until ${time(c.lease.expiresAt)})` : "—"),
            el(
              "td",
              {},
              c.delivery.settled
                ? ""
                : el(
                    "button",
                    {
                      type: "button",
                      class: "secondary",
                      onclick: () =>
                        act(() =>
                          postJson(
                            `/console/api/tasks/${encodeURIComponent(taskId)}/push/${encodeURIComponent(c.configId)}/retry`,
                          ),
                        ),
                    },
                    "Retry now",
                  ),
            ),
          ),
        ),
      ),
    ),
    push.deadLetters.length ? el("h3", {}, "Dead letters") : "",
    push.deadLetters.map((d) =>
      el(
        "p",
        { class: "mono" },
        `#${d.sequence} ${d.state} → ${d.target}: ${d.reason} after ${d.attempts} attempts (${d.lastError})`,
      ),
    ),
  );
}
