// The console's tenant limits page (/console/limits): each tenant the caller sees, its usage on this instance
// against its limits (TENANT_LIMITS), and what was refused, by reason. Loaded on demand by console.js.

const FIGURES = [
  ["runningTasks", "Unfinished tasks", (u) => u.runningTasks],
  ["tasksPerMinute", "New tasks, last minute", (u) => u.tasksLastMinute],
  ["requestsPerSecond", "Requests, last second", (u) => u.requestsLastSecond],
  ["streams", "Open streams", (u) => u.streams],
];
const REASONS = ["requestsPerSecond", "tasksPerMinute", "runningTasks", "streams", "pushConfigsPerTask", "overload"];

/** "3 / 10" (used against its limit), "3" when unlimited, "–" when not counted (requests of an unlimited tenant); full marked. */
function against(el, used, limit) {
  const shown = used === undefined ? "–" : String(used);
  if (limit === undefined) return el("span", { title: "no limit" }, shown);
  const full = used !== undefined && used >= limit;
  return el(
    "span",
    { class: full ? "limit-full" : undefined, "data-full": full ? "" : undefined },
    `${shown} / ${limit}`,
  );
}

export async function showLimits({ view, api, el }) {
  const data = await api("/console/api/limits");
  const rows = data.tenants.map((t) => {
    const refused = REASONS.filter((r) => t.refusals[r] > 0).map((r) => `${r}: ${t.refusals[r]}`);
    return el(
      "tr",
      { "data-tenant": t.tenant },
      el("td", {}, t.tenant),
      FIGURES.map(([limit, , figure]) =>
        el("td", { "data-limit": limit }, against(el, figure(t.usage), t.limits[limit])),
      ),
      el("td", {}, t.limits.pushConfigsPerTask ?? "–"),
      el("td", { "data-refusals": "" }, refused.length > 0 ? refused.join(", ") : "none"),
    );
  });
  const instance = data.shedding
    ? el("p", { id: "shedding", class: "error-text" }, `This instance is shedding new tasks: ${data.shedding}`)
    : el("p", { id: "shedding", class: "muted" }, "This instance is not shedding.");
  view.replaceChildren(
    el(
      "section",
      { class: "panel", id: "limits" },
      el("h1", {}, "Tenant limits"),
      el(
        "p",
        { class: "muted" },
        `Usage on this instance, one of ${data.liveInstances} sharing the rates; unfinished tasks as the store counted them at the tenant's last new task. `,
        el("a", { href: "/console", "data-nav": "" }, "← all tasks"),
      ),
      instance,
      el(
        "table",
        { "aria-label": "Tenant limits" },
        el(
          "thead",
          {},
          el(
            "tr",
            {},
            el("th", {}, "Tenant"),
            FIGURES.map(([, title]) => el("th", {}, title)),
            el("th", {}, "Push configs per task"),
            el("th", {}, "Refused since start"),
          ),
        ),
        el("tbody", {}, rows),
      ),
    ),
  );
}
