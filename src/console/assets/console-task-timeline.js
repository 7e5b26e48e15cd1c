// The task page's timeline: every event of the task's log, in order, each with its payload folded away.
import { duration, el, time } from "./console-dom.js";

/**
 * The timeline's panel (`element`), `add(event)` for each event read (one already shown is skipped) and
 * `lastSequence()`, the newest shown (-1 before any), where the live stream picks up.
 */
export function taskTimeline() {
  const timeline = el("ol", { id: "event-log", class: "timeline" });
  const count = el("span", { class: "muted", id: "event-count" });
  const timelineToggle = el(
    "button",
    {
      type: "button",
      class: "secondary small",
      id: "expand-all",
      onclick: () => {
        const open = timelineToggle.getAttribute("aria-pressed") !== "true";
        timelineToggle.setAttribute("aria-pressed", String(open));
        timelineToggle.textContent = open ? "Collapse all" : "Expand all";
        for (const d of timeline.querySelectorAll("details")) d.open = open;
      },
    },
    "Expand all",
  );
  const element = el(
    "section",
    { class: "panel" },
    el("h2", {}, "Timeline ", count, " ", timelineToggle),
    el("div", { class: "log" }, timeline),
  );

  let lastSequence = -1;
  let lastTime;
  const add = (e) => {
    if (e.sequence <= lastSequence) return;
    lastSequence = e.sequence;
    const since = lastTime ? Date.parse(e.timestamp) - lastTime : undefined;
    lastTime = Date.parse(e.timestamp);
    const notes = [];
    if (e.type === "node.started" && e.payload?.attempt !== undefined)
      notes.push(el("span", { class: e.payload.attempt > 1 ? "note retry" : "note" }, `attempt ${e.payload.attempt}`));
    if (e.type === "node.interrupted")
      notes.push(
        el(
          "span",
          { class: "note retry" },
          `died with its instance: ${e.payload?.crashes ?? "?"} of RECOVERY_MAX_ATTEMPTS`,
        ),
      );
    if (e.type === "interrupt.resolved") {
      const value = e.payload?.resumeValue ?? {};
      const what =
        value.action ??
        (Array.isArray(value.answers)
          ? `answers ${value.answers.map((a) => `${a.id}=${JSON.stringify(a.answer)}`).join(", ")}`
          : JSON.stringify(value));
      notes.push(
        el(
          "span",
          { class: "note decision", "data-decided-by": e.payload?.resolvedBy ?? "" },
          `decided by ${e.payload?.resolvedBy ?? "?"}: ${what}`,
        ),
      );
    }
    if (e.type === "interrupt.exchange")
      notes.push(el("span", { class: "note" }, `asked by ${e.payload?.askedBy ?? "?"}: ${e.payload?.question ?? ""}`));
    if (e.type === "run.cancelling") notes.push(el("span", { class: "note" }, `by ${e.payload?.cancelledBy ?? "?"}`));
    // Operator actions name who acted (and why, when they said).
    const actor = {
      "run.paused": "pausedBy",
      "run.resumed": "resumedBy",
      "openwop-a2a-host.run.retried": "retriedBy",
      "openwop-a2a-host.run.restarted": "restartedBy",
    }[e.type];
    if (actor)
      notes.push(
        el(
          "span",
          { class: "note steer", "data-acted-by": e.payload?.[actor] ?? "" },
          `by ${e.payload?.[actor] ?? "?"}${e.payload?.reason ? `: ${e.payload.reason}` : ""}`,
        ),
      );
    timeline.append(
      el(
        "li",
        { "data-type": e.type, "data-sequence": e.sequence },
        el(
          "details",
          {},
          el(
            "summary",
            {},
            el("span", { class: "seq" }, `#${e.sequence}`),
            " ",
            el("span", { class: "mono type" }, e.type),
            " ",
            e.nodeId ? el("span", { class: "mono node" }, e.nodeId) : "",
            " ",
            el(
              "span",
              { class: "muted since", title: e.timestamp },
              since === undefined ? time(e.timestamp) : `+${duration(since)}`,
            ),
            " ",
            notes,
          ),
          el("pre", { class: "payload" }, JSON.stringify(e.payload ?? {}, null, 2)),
        ),
      ),
    );
    count.textContent = `(${lastSequence + 1})`;
  };

  return { element, add, lastSequence: () => lastSequence };
}
