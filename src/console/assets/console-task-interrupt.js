/* global document */
// The task page's interrupt panel: what the task waits for (an approval, answers to questions, or any resume
// value) and the form that sends the decision or the answers.
import { csrfToken, postJson } from "./console-api.js";
import { confirmDialog, el } from "./console-dom.js";
import { artifactView } from "./console-parts.js";

/**
 * The panel's renderer for the task `taskId`, drawing into `interruptBox`: call it with each detail read.
 * `onSent` runs once a decision was accepted (the page reads the task again).
 */
export function interruptPanel(interruptBox, { taskId, onSent }) {
  // The interrupt is re-rendered only when it changes, so typing in its form survives live refreshes.
  let shownInterrupt;
  return (detail) => {
    const pending = detail.interrupt && detail.task.status.startsWith("waiting-") ? detail.interrupt : undefined;
    const key = pending
      ? `${pending.interruptId}:${pending.exchanges.length}:${Boolean(detail.interruptTokens?.resolve)}`
      : "";
    if (key === shownInterrupt) return;
    shownInterrupt = key;
    if (!pending) {
      interruptBox.replaceChildren();
      interruptBox.className = "";
      return;
    }
    interruptBox.className = "panel interrupt";
    const token = detail.interruptTokens?.resolve;
    const form = detail.interruptForm;
    const formError = el("p", { id: "interrupt-form-error", class: "field-error", role: "alert", hidden: true });
    const send = async (resumeValue) => {
      formError.hidden = true;
      try {
        // As the operator (the log records who decided); a peer agent's question through the signed token.
        if (form?.kind === "questions" && form.remote)
          await postJson(`/v1/interrupts/${encodeURIComponent(token)}`, { resumeValue });
        else
          await postJson(
            `/console/api/tasks/${encodeURIComponent(taskId)}/interrupts/${encodeURIComponent(pending.nodeId)}`,
            { resumeValue },
          );
        onSent();
      } catch (err) {
        formError.textContent = err.body?.message ?? String(err.message ?? err);
        formError.hidden = false;
      }
    };
    const fieldError = (input, message) => {
      const box = document.getElementById(`${input.id}-error`);
      box.textContent = message ?? "";
      box.hidden = !message;
      if (message) input.setAttribute("aria-invalid", "true");
      else input.removeAttribute("aria-invalid");
      return !message;
    };
    const labelled = (id, label, input, hint) =>
      el(
        "div",
        { class: "field" },
        el("label", { for: id }, label, hint ? el("span", { class: "muted" }, ` ${hint}`) : ""),
        input,
        el("p", { id: `${id}-error`, class: "field-error", hidden: true }),
      );
    const parts = [];
    parts.push(
      el(
        "h2",
        {},
        pending.kind === "approval"
          ? "Waiting for an approver"
          : form?.remote
            ? "The peer agent asks"
            : "Waiting for an answer",
        " at node ",
        el("code", {}, pending.nodeId),
      ),
    );
    if (pending.expiresAt)
      parts.push(el("p", { class: "muted" }, `Decide before ${new Date(pending.expiresAt).toLocaleString()}`));
    if (pending.exchanges.length)
      parts.push(
        el(
          "ul",
          { class: "exchanges", "aria-label": "Questions asked" },
          pending.exchanges.map((x) => el("li", {}, el("strong", {}, x.askedBy), `: ${x.question}`)),
        ),
      );
    if (form?.kind === "questions") {
      const inputs = form.fields.map((f) =>
        el("textarea", {
          id: `answer-${f.id}`,
          name: f.id,
          rows: 2,
          "aria-describedby": `answer-${f.id}-error`,
          "aria-required": f.required ? "true" : undefined,
        }),
      );
      const f = el(
        "form",
        {
          id: "interrupt-form",
          novalidate: true,
          onsubmit: (e) => {
            e.preventDefault();
            let ok = true;
            form.fields.forEach(
              (field, i) =>
                (ok =
                  fieldError(
                    inputs[i],
                    field.required && !inputs[i].value.trim() ? "An answer is required." : undefined,
                  ) && ok),
            );
            if (!ok) return void f.querySelector("[aria-invalid=true]")?.focus();
            const answers = form.fields
              .map((field, i) => ({ id: field.id, answer: inputs[i].value.trim() }))
              .filter((a) => a.answer);
            void send({ answers });
          },
        },
        form.remote
          ? el("p", { class: "untrusted" }, "The question comes from a remote agent: untrusted content.")
          : "",
        form.fields.map((field, i) =>
          labelled(inputs[i].id, field.label, inputs[i], field.required ? "(required)" : "(optional)"),
        ),
        el(
          "div",
          { class: "actions" },
          el("button", { type: "submit", id: "send-answers", disabled: !token }, "Send answers"),
        ),
      );
      parts.push(f);
    } else if (form?.kind === "approval") {
      parts.push(
        el(
          "p",
          {},
          el("strong", { id: "approval-title" }, form.title),
          form.description ? ` — ${form.description}` : "",
        ),
      );
      parts.push(
        el(
          "div",
          { id: "review-artifacts", class: "review" },
          el("h3", {}, "Under review"),
          form.artifacts.length
            ? form.artifacts.map(artifactView)
            : el("p", { class: "muted" }, "No artifact to review."),
        ),
      );
      const note = el("textarea", { id: "interrupt-text", rows: 2, "aria-describedby": "interrupt-text-error" });
      const needText = (what) =>
        fieldError(note, note.value.trim() ? undefined : `Write the ${what} first.`) || (note.focus(), false);
      const buttons = [];
      const actions = form.actions;
      if (actions.includes("accept"))
        buttons.push(
          el(
            "button",
            { type: "button", id: "approve", disabled: !token, onclick: () => void send({ action: "accept" }) },
            "Approve",
          ),
        );
      if (actions.includes("refine"))
        buttons.push(
          el(
            "button",
            {
              type: "button",
              id: "refine",
              class: "secondary",
              disabled: !token,
              onclick: () =>
                needText("feedback") &&
                void send({ action: "refine", refineFeedback: { scope: "whole", text: note.value.trim() } }),
            },
            "Refine",
          ),
        );
      if (actions.includes("ask"))
        buttons.push(
          el(
            "button",
            {
              type: "button",
              id: "ask",
              class: "secondary",
              disabled: !token,
              onclick: () => needText("question") && void send({ action: "ask", question: note.value.trim() }),
            },
            "Ask",
          ),
        );
      if (actions.includes("reject"))
        buttons.push(
          el(
            "button",
            {
              type: "button",
              id: "reject",
              class: "danger",
              disabled: !token,
              onclick: async () => {
                const answer = await confirmDialog({
                  title: "Reject?",
                  message: `Reject "${form.title}"? The task goes where the workflow sends a rejection (often: it fails).`,
                  confirmLabel: "Reject",
                });
                if (answer.ok)
                  await send({ action: "reject", ...(note.value.trim() ? { feedback: note.value.trim() } : {}) });
              },
            },
            "Reject…",
          ),
        );
      parts.push(labelled("interrupt-text", "Feedback (for Refine) or question (for Ask)", note));
      parts.push(el("div", { class: "actions" }, buttons));
      if (actions.includes("edit-accept"))
        parts.push(
          editAcceptForm(
            form.artifacts[0],
            (editedArtifactData) => send({ action: "edit-accept", editedArtifactData }),
            fieldError,
            labelled,
            !token,
          ),
        );
    } else {
      const raw = el("textarea", { id: "interrupt-json", rows: 3, "aria-describedby": "interrupt-json-error" });
      parts.push(
        el("details", {}, el("summary", {}, "Interrupt data"), el("pre", {}, JSON.stringify(pending.data, null, 2))),
      );
      parts.push(labelled("interrupt-json", "resumeValue (JSON object)", raw));
      parts.push(
        el(
          "div",
          { class: "actions" },
          el(
            "button",
            {
              type: "button",
              id: "resume-json",
              disabled: !token,
              onclick: () => {
                let value;
                try {
                  value = JSON.parse(raw.value);
                } catch {
                  value = undefined;
                }
                if (
                  !fieldError(
                    raw,
                    value && typeof value === "object" && !Array.isArray(value) ? undefined : "Write a JSON object.",
                  )
                )
                  return;
                void send(value);
              },
            },
            "Send",
          ),
        ),
      );
    }
    parts.push(formError);
    if (!token)
      parts.push(
        el(
          "p",
          { class: "muted" },
          `Your ${csrfToken ? "sign-in" : "API key"} lacks the approvals:respond scope: no resolve token was issued.`,
        ),
      );
    interruptBox.replaceChildren(...parts);
  };
}

/**
 * Edit and accept: an editable copy of the proposal under review (its text, or its data as JSON), sent as
 * `editedArtifactData` (a string stays text; JSON is parsed, and must parse).
 */
function editAcceptForm(artifact, send, fieldError, labelled, disabled) {
  const text = (artifact?.parts ?? [])
    .filter((p) => p.kind === "text")
    .map((p) => p.text)
    .join("\n");
  const data = (artifact?.parts ?? []).find((p) => p.kind === "data")?.data;
  const asJson = !text && data !== undefined;
  const copy = el("textarea", {
    id: "edit-copy",
    rows: 4,
    "aria-describedby": "edit-copy-error",
    value: asJson ? JSON.stringify(data.value ?? data, null, 2) : text,
  });
  const submit = () => {
    let value = copy.value;
    if (asJson) {
      try {
        value = JSON.parse(copy.value);
      } catch {
        return void fieldError(copy, "Write valid JSON.");
      }
    } else if (!value.trim()) {
      return void (fieldError(copy, "The edited proposal is empty."), copy.focus());
    }
    fieldError(copy);
    void send(value);
  };
  return el(
    "details",
    { class: "edit-accept", id: "edit-accept-panel" },
    el("summary", {}, "Edit the proposal, then accept it"),
    labelled(
      "edit-copy",
      asJson ? "Edited proposal (JSON)" : "Edited proposal",
      copy,
      "(replaces the artifact under review)",
    ),
    el(
      "div",
      { class: "actions" },
      el("button", { type: "button", id: "edit-accept", disabled, onclick: submit }, "Accept with edits"),
    ),
  );
}
