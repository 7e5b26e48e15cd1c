// The operator console in a real browser (headless Chromium driven by playwright-core): the real server on
// a free port with a few hundred tasks, and a scripted peer agent for a2a.invoke. Each point of the console
// is driven as an operator would, from the keyboard where it matters: the task list paged through its cursor
// with per-state counts and readable rows; a task opened by its deep link, with the workflow's own graph
// (current node, path taken, a remote node linked to its peer task) beside the machine diagram; the timeline's
// events expanded to their redacted payloads; interrupts answered through forms (a clarification's labelled
// fields with errors shown next to them, an approval with the artifact under review; reject and cancel ask
// first); bulk cancel and push retry after a confirmation. Screenshots go to test-artifacts/console/; with
// UPDATE_DOCS_SCREENSHOTS=1 the ones the docs show go to docs/ (console.png, console-list.png, console-task.png,
// console-form.png), so a plain test run leaves the working tree as it was.
import { mkdir, mkdtemp, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { chromium, type Browser, type Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { projectRoot } from "../../src/domain/project-root.js";
import { CHROMIUM_INSTALL, findChromium } from "../support/chromium.js";
import { seedCopies } from "../support/console-seed.js";
import { openwopClient } from "../support/openwop-client.js";
import { startTestPeer, type TestPeer } from "../support/a2a-peer.js";
import { startTestApp, type TestApp } from "../support/start-server.js";

const ARTIFACTS = join(projectRoot, "test-artifacts", "console");
/** Where the screenshots the docs show go: docs/ only when asked to refresh them. */
const DOCS = process.env["UPDATE_DOCS_SCREENSHOTS"] === "1" ? join(projectRoot, "docs") : ARTIFACTS;
const executablePath = findChromium();
const SEEDED = 260;

const PEER_WORKFLOW = `id: peer-review
name: Peer review
description: Asks a peer agent to review the request, then completes.
nodes:
  - { kind: a2a.invoke, id: ask-peer, title: Peer agent reviews, agentCardUrl: "\${A2A_PEER_CARD_URL}" }
  - { kind: task, id: wrap-up, handler: noop }
`;

/** Form controls without an accessible name (label, aria-label or text): none allowed. (A string: tsc has no DOM types here.) */
async function unlabelledControls(page: Page): Promise<string[]> {
  return page.evaluate<string[]>(`[...document.querySelectorAll("input, select, textarea, button")]
    .filter((c) => !c.hidden && c.offsetParent !== null)
    .filter((c) => !(c.labels && c.labels.length > 0) && !c.getAttribute("aria-label") && !(c.textContent ?? "").trim())
    .map((c) => c.outerHTML.slice(0, 120))`);
}

const focusedId = (page: Page) => page.evaluate<string | undefined>("document.activeElement?.id");
/** The computed fill of the first element matching `selector` (an SVG rect). */
const fillOf = (page: Page, selector: string) =>
  page.evaluate<string>(`getComputedStyle(document.querySelector(${JSON.stringify(selector)})).fill`);
const GREEN = "rgb(213, 243, 225)";
const RED = "rgb(253, 226, 226)";
const GREY = "rgb(236, 239, 243)";

describe("operator console in headless Chromium", () => {
  let t: TestApp;
  let peer: TestPeer;
  let browser: Browser;
  let page: Page;
  const api = () => openwopClient(t.baseUrl);

  beforeAll(async () => {
    if (!executablePath) return;
    await mkdir(ARTIFACTS, { recursive: true });
    peer = await startTestPeer();
    const dir = await mkdtemp(join(tmpdir(), "console-browser-"));
    await writeFile(join(dir, "peer-review.yaml"), PEER_WORKFLOW);
    t = await startTestApp({
      WORKFLOWS_DIR: dir,
      A2A_PEER_CARD_URL: peer.cardUrl,
      A2A_PEER_ALLOW_LOOPBACK_FOR_TESTS: "true",
      A2A_PEER_POLL_MS: "25",
    });
    // A few hundred finished tasks: copies of a real one, an hour ago, a second apart.
    const template = await api().startRun("echo", { text: "Summarise the incident report\nfor the weekly review" });
    await api().waitForRun(template, (s) => s.status === "completed");
    const base = Date.now() - 3600_000;
    await seedCopies(t.store, template, SEEDED, { at: (i) => new Date(base + i * 1000).toISOString() });
    // --no-sandbox: CI runs as root in a container, where Chromium's sandbox cannot start.
    browser = await chromium.launch({
      executablePath,
      headless: true,
      args: ["--no-sandbox", "--disable-dev-shm-usage"],
    });
    page = await browser.newPage({ viewport: { width: 1500, height: 1000 } });
    page.on("pageerror", (err) => console.error("page error:", err));
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
    await t?.close();
    await peer?.close();
  });

  it("has a Chromium to drive", () => {
    expect(executablePath, `no Chromium found (set CHROMIUM_PATH, or install it: ${CHROMIUM_INSTALL})`).toBeDefined();
  });

  it.runIf(executablePath)(
    "pages through hundreds of tasks with readable rows, counts per state and filters, from the keyboard",
    async () => {
      const waiting = await api().startRun("approval-gate", {
        text: "Send the quarterly report to the board\nwith the appendix",
      });
      await api().waitForRun(waiting, (s) => s.status === "waiting-approval");
      await page.goto(`${t.baseUrl}/console`);
      const table = page.locator("#tasks");
      await page.waitForSelector('#tasks[data-loaded="50"]');
      expect(await page.locator("#list-status").textContent()).toMatch(new RegExp(`Showing 50 of ${SEEDED + 2} tasks`));
      // Readable: the title (skill name and the request's first line), whom it waits for, the current node.
      const row = page.locator(`#tasks tr[data-task-id="${waiting}"]`);
      expect(await row.locator("td.title a").textContent()).toBe(
        "Approval gate: Send the quarterly report to the board",
      );
      expect(await row.locator("td.waiting").textContent()).toBe("an approver: Approve the proposal");
      expect(await row.locator("td.node").textContent()).toBe("Approve the proposal");
      expect(await page.locator('[data-count-state="completed"] .n').textContent()).toBe(String(SEEDED + 1));
      expect(await page.locator('[data-count-state="input-required"] .n').textContent()).toBe("1");
      expect(await unlabelledControls(page)).toEqual([]);
      await page.screenshot({ path: join(DOCS, "console-list.png") });

      // The next page, from the keyboard: focus "Load more" and press Enter.
      await page.locator("#load-more").focus();
      await page.keyboard.press("Enter");
      await page.waitForSelector('#tasks[data-loaded="100"]');
      const ids = await table
        .locator("tbody tr")
        .evaluateAll((rows) => rows.map((r) => r.getAttribute("data-task-id")));
      expect(new Set(ids).size).toBe(100);
      // …and to the end: every task reachable.
      while (await page.locator("#load-more").isVisible()) {
        const before = Number(await table.getAttribute("data-loaded"));
        await page.locator("#load-more").click();
        await page.waitForSelector(`#tasks:not([data-loaded="${before}"])`);
      }
      expect(Number(await table.getAttribute("data-loaded"))).toBe(SEEDED + 2);

      // A count is a filter: input-required shows the one waiting task.
      await page.locator('[data-count-state="input-required"]').click();
      await page.waitForURL(/state=input-required/);
      await page.waitForSelector('#tasks[data-loaded="1"]');
      expect(await page.locator("#tasks tbody tr").getAttribute("data-task-id")).toBe(waiting);
      // The filter form: a skill that has no such task lists none.
      await page.locator("#f-skill").fill("echo");
      await page.locator("#f-skill").press("Enter");
      await page.waitForURL(/skill=echo/);
      await page.locator("#tasks tr.empty").waitFor();
    },
    90_000,
  );

  it.runIf(executablePath)(
    "a deep link opens the task: the workflow graph beside the machine, the timeline expands, the approval shows what is under review; reject asks first",
    async () => {
      const runId = await api().startRun("approval-gate", { text: "Delete the staging database" });
      await api().waitForRun(runId, (s) => s.status === "waiting-approval");
      await page.goto(`${t.baseUrl}/console/tasks/${runId}`);
      await page.locator('#diagram g.state.current[data-state="waiting-approval"]').waitFor();
      // The workflow's own graph: the current node and the path taken; the refine loop drawn as an edge.
      await page.locator('#workflow-graph g.wf-node.current[data-node="gate"]').waitFor();
      expect(await page.locator('#workflow-graph g.edge.taken[data-from="prepare"][data-to="gate"]').count()).toBe(1);
      expect(await page.locator('#workflow-graph g.edge.refine[data-from="gate"][data-to="prepare"]').count()).toBe(1);
      expect(await page.locator('#workflow-graph g.wf-node.visited[data-node="finalize"]').count()).toBe(0);
      expect(await page.locator("#task-title").textContent()).toBe("Approval gate: Delete the staging database");
      expect(await page.locator("#waiting-for").textContent()).toBe("waits for an approver: Approve the proposal");
      // The artifact under review, in the approval panel.
      expect(await page.locator("#review-artifacts .artifact").count()).toBe(1);
      expect(await page.locator("#review-artifacts").textContent()).toContain("Delete the staging database");
      expect(await unlabelledControls(page)).toEqual([]);
      await page.screenshot({ path: join(DOCS, "console.png") });

      // A timeline event opens to its payload (keyboard: focus the summary, Enter), with the time since the previous one.
      const requested = page.locator('#event-log li[data-type="interrupt.requested"]');
      await requested.locator("summary").focus();
      await page.keyboard.press("Enter");
      await requested.locator("pre.payload").waitFor({ state: "visible" });
      expect(JSON.parse((await requested.locator("pre.payload").textContent())!)).toMatchObject({
        nodeId: "gate",
        kind: "approval",
        data: { title: "Approve the proposal" },
      });
      expect(await requested.locator(".since").textContent()).toMatch(/^\+/);
      expect(await page.locator('#event-log li[data-type="node.started"] .note').first().textContent()).toBe(
        "attempt 1",
      );
      await page.screenshot({ path: join(DOCS, "console-task.png"), fullPage: true });

      // Reject asks first; Escape keeps the task as it was.
      await page.locator("#reject").click();
      await page.locator("dialog#confirm[open]").waitFor();
      expect(await focusedId(page)).toBe("confirm-no");
      await page.keyboard.press("Escape");
      await page.locator("dialog#confirm").waitFor({ state: "detached" });
      expect((await api().waitForRun(runId, () => true)).status).toBe("waiting-approval");
      // Ask needs a question: the error is shown next to the field and nothing is sent.
      await page.locator("#ask").click();
      await page.locator("#interrupt-text-error").filter({ hasText: "question" }).waitFor();
      expect(await page.locator("#interrupt-text").getAttribute("aria-invalid")).toBe("true");
      await page.locator("#interrupt-text").fill("Which database exactly?");
      await page.locator("#ask").click();
      await page.locator("#interrupt .exchanges").filter({ hasText: "Which database exactly?" }).waitFor();
      await page.locator('#event-log li[data-type="interrupt.exchange"]').waitFor();

      // Confirmed, the reject goes through: the gate decided by this operator, the task failed.
      await page.locator("#reject").click();
      await page.locator("#confirm-yes").click();
      await page.locator('#diagram g.state.current[data-state="failed"]').waitFor();
      // Coloured by its outcome: red, not the green of a completed task; the gate where it ended too.
      expect(await page.locator('#diagram g.state.current[data-state="failed"]').getAttribute("data-outcome")).toBe(
        "failed",
      );
      expect(await fillOf(page, '#diagram g.state.current[data-state="failed"] rect')).toBe(RED);
      await page.locator('#workflow-graph g.wf-node.current.outcome-failed[data-node="gate"]').waitFor();
      // The live indicator says why it stopped: the task ended (not an error).
      await page.locator('#live[data-live="ended"]').waitFor();
      expect(await page.locator("#live").textContent()).toBe("● ended");
      expect(await page.locator("#live").getAttribute("title")).toContain("This task has finished");
      const resolved = page.locator('#event-log li[data-type="interrupt.resolved"]');
      await resolved.waitFor();
      expect(await resolved.locator(".note.decision").textContent()).toBe("decided by anonymous: reject");
      expect(await page.locator("#cancel").isDisabled()).toBe(true);
      await page.screenshot({ path: join(ARTIFACTS, "rejected.png"), fullPage: true });
      expect((await api().waitForRun(runId, (s) => s.status === "failed")).status).toBe("failed");
    },
    60_000,
  );

  it.runIf(executablePath)(
    "shows a waiting approval live from the list, approves it, and follows it to completed without reloading",
    async () => {
      await page.goto(`${t.baseUrl}/console`);
      await page.waitForSelector("#tasks[data-loaded]");
      // Created after the list is open: it appears through the live stream, not a reload.
      const runId = await api().startRun("approval-gate", { text: "Send the quarterly report to the board" });
      await api().waitForRun(runId, (s) => s.status === "waiting-approval");
      const row = page.locator(`#tasks tr[data-task-id="${runId}"]`);
      await row.locator('[data-a2a-state="input-required"]').waitFor();
      await row.locator("td.title a").click();
      await page.waitForURL(new RegExp(`/console/tasks/${runId}$`));
      await page.locator('#diagram g.state.current[data-state="waiting-approval"]').waitFor();
      for (const [source, target] of [
        ["pending", "running"],
        ["running", "waiting-approval"],
      ]) {
        expect(
          await page.locator(`#diagram g.edge.taken[data-source="${source}"][data-target="${target}"]`).count(),
          `${source} → ${target}`,
        ).toBe(1);
      }
      // A marker on the window: a reload would lose it.
      await page.evaluate(() => ((globalThis as unknown as { consoleMarker: number }).consoleMarker = 42));
      expect(await page.locator("#live").getAttribute("data-live")).toBe("live");
      await page.locator("#approve").click();
      await page.locator('#diagram g.state.current[data-state="completed"]').waitFor();
      expect(await fillOf(page, '#diagram g.state.current[data-state="completed"] rect')).toBe(GREEN);
      await page.locator('#event-log li[data-type="run.completed"]').waitFor();
      await page.locator('#workflow-graph g.wf-node.current[data-node="$end"]').waitFor();
      expect(await page.locator('#workflow-graph g.edge.taken[data-from="gate"][data-to="finalize"]').count()).toBe(1);
      expect(await page.locator("#interrupt").textContent()).toBe("");
      expect(await page.evaluate(() => (globalThis as unknown as { consoleMarker?: number }).consoleMarker)).toBe(42);
      expect((await api().waitForRun(runId, (s) => s.status === "completed")).status).toBe("completed");
    },
    60_000,
  );

  it.runIf(executablePath)(
    "the approval form offers every action the gate offers: edit-accept sends an edited copy of the proposal",
    async () => {
      const runId = await api().startRun("approval-gate", { text: "Rename the staging database" });
      await api().waitForRun(runId, (s) => s.status === "waiting-approval");
      await page.goto(`${t.baseUrl}/console/tasks/${runId}`);
      await page.locator("#review-artifacts .artifact").waitFor();
      // Every action the interrupt offers (accept, reject, refine, edit-accept, ask) has its control.
      for (const id of ["approve", "reject", "refine", "ask", "edit-accept"])
        expect(await page.locator(`#${id}`).count(), id).toBe(1);
      // The copy starts as the proposal under review, and is editable from the keyboard.
      await page.locator("#edit-accept-panel summary").focus();
      await page.keyboard.press("Enter");
      const copy = page.getByLabel("Edited proposal");
      await copy.waitFor();
      expect(await copy.inputValue()).toContain("Rename the staging database");
      expect(await unlabelledControls(page)).toEqual([]);
      // Empty: the error is shown next to the field and nothing is sent.
      await copy.fill("  ");
      await page.locator("#edit-accept").click();
      await page.locator("#edit-copy-error").filter({ hasText: "empty" }).waitFor();
      expect((await api().waitForRun(runId, () => true)).status).toBe("waiting-approval");
      await copy.fill("Rename the staging database to staging-2024 (edited by the operator)");
      await page.locator("#edit-accept").click();
      await page.locator('#diagram g.state.current[data-state="completed"]').waitFor();
      const resolved = page.locator('#event-log li[data-type="interrupt.resolved"]');
      await resolved.waitFor();
      expect(await resolved.locator(".note.decision").textContent()).toBe("decided by anonymous: edit-accept");
      await page.locator("#artifacts").filter({ hasText: "edited by the operator" }).waitFor();
      expect((await api().waitForRun(runId, (s) => s.status === "completed")).status).toBe("completed");
    },
    60_000,
  );

  it.runIf(executablePath)(
    "a clarification's questions are a labelled form: a missing answer is shown next to its field and nothing is sent",
    async () => {
      const runId = await api().startRun("clarify", { text: "Announce the new office hours" });
      await api().waitForRun(runId, (s) => s.status === "waiting-input");
      await page.goto(`${t.baseUrl}/console/tasks/${runId}`);
      const field = page.getByLabel("Who is the audience for this message?");
      await field.waitFor();
      expect(await unlabelledControls(page)).toEqual([]);
      await page.locator("#send-answers").click();
      await page.locator("#answer-audience-error").filter({ hasText: "An answer is required." }).waitFor();
      expect(await field.getAttribute("aria-invalid")).toBe("true");
      expect(await focusedId(page)).toBe("answer-audience");
      await page.screenshot({ path: join(DOCS, "console-form.png") });
      expect((await api().waitForRun(runId, () => true)).status).toBe("waiting-input");
      await field.fill("Everyone in the Berlin office");
      await page.keyboard.press("Tab");
      await page.keyboard.press("Enter");
      await page.locator('#diagram g.state.current[data-state="completed"]').waitFor();
      const resolved = page.locator('#event-log li[data-type="interrupt.resolved"]');
      expect(await resolved.locator(".note.decision").textContent()).toBe(
        'decided by anonymous: answers audience="Everyone in the Berlin office"',
      );
      expect((await api().waitForRun(runId, (s) => s.status === "completed")).status).toBe("completed");
    },
    60_000,
  );

  it.runIf(executablePath)(
    "marks an a2a.invoke node as remote and links it to the peer task; the peer's question is a form too",
    async () => {
      const runId = await api().startRun("peer-review", { text: "scenario:input-required please" });
      await api().waitForRun(runId, (s) => s.status === "waiting-input");
      await page.goto(`${t.baseUrl}/console/tasks/${runId}`);
      const node = page.locator('#workflow-graph g.wf-node.remote.current[data-node="ask-peer"]');
      await node.waitFor();
      const [peerTaskId] = [...peer.taskStates().keys()].slice(-1);
      const link = page.locator("#workflow-graph a.peer-link");
      expect(await link.getAttribute("href")).toBe(
        `${new URL(peer.cardUrl).origin}/console/tasks/${encodeURIComponent(peerTaskId!)}`,
      );
      expect(await page.locator("#interrupt h2").textContent()).toContain("The peer agent asks");
      expect(await page.locator("#interrupt .untrusted").count()).toBe(1);
      expect(await page.locator("#interrupt textarea").count()).toBe(1);
    },
    60_000,
  );

  it.runIf(executablePath)(
    "selects tasks and cancels them in bulk after a confirmation; retries their pushes; cancels one task after asking",
    async () => {
      const ids = [
        await api().startRun("approval-gate", { text: "bulk one" }),
        await api().startRun("approval-gate", { text: "bulk two" }),
        await api().startRun("approval-gate", { text: "single" }),
      ];
      for (const id of ids) await api().waitForRun(id, (s) => s.status === "waiting-approval");
      await page.goto(`${t.baseUrl}/console?state=input-required`);
      await page.waitForSelector("#tasks[data-loaded]");
      // Keyboard: focus a row's checkbox, Space selects it.
      for (const id of ids.slice(0, 2)) {
        await page.locator(`#tasks tr[data-task-id="${id}"] input.select`).focus();
        await page.keyboard.press("Space");
      }
      expect(await page.locator("#bulk-cancel").textContent()).toBe("Cancel selected (2)…");
      await page.locator("#bulk-retry").click();
      await page.locator("#confirm-yes").click();
      await page.locator("#bulk-status").filter({ hasText: "Retried" }).waitFor();
      expect(await page.locator("#bulk-cancel").isDisabled()).toBe(true);
      for (const id of ids.slice(0, 2)) await page.locator(`#tasks tr[data-task-id="${id}"] input.select`).check();
      await page.locator("#bulk-cancel").click();
      await page.locator("dialog#confirm[open]").waitFor();
      await page.locator("#confirm-reason").fill("duplicates");
      await page.locator("#confirm-yes").click();
      await page.locator("#bulk-status").filter({ hasText: "Cancelled 2 of 2." }).waitFor();
      for (const id of ids.slice(0, 2))
        expect((await api().waitForRun(id, (s) => s.status === "cancelled")).status).toBe("cancelled");
      expect((await api().waitForRun(ids[2]!, () => true)).status).toBe("waiting-approval");

      // One task, from its page: Cancel asks first.
      await page.goto(`${t.baseUrl}/console/tasks/${ids[2]}`);
      await page.locator("#cancel").click();
      await page.locator("#confirm-no").click();
      expect((await api().waitForRun(ids[2]!, () => true)).status).toBe("waiting-approval");
      await page.locator("#cancel").click();
      await page.locator("#confirm-yes").click();
      await page.locator('#diagram g.state.current[data-state="cancelled"]').waitFor();
      expect(await page.locator('#diagram g.state.current[data-state="cancelled"]').getAttribute("data-outcome")).toBe(
        "canceled",
      );
      expect(await fillOf(page, '#diagram g.state.current[data-state="cancelled"] rect')).toBe(GREY);
      // A link of the first console (#/tasks/{id}) still opens the task, under its path.
      await page.goto(`${t.baseUrl}/console#/tasks/${ids[2]}`);
      await page.waitForURL(new RegExp(`/console/tasks/${ids[2]}$`));
      await page.locator('#diagram g.state.current[data-state="cancelled"]').waitFor();
      // A deep link to a task that is not there says so.
      await page.goto(`${t.baseUrl}/console/tasks/no-such-task`);
      await page.locator("#not-found").waitFor();
    },
    60_000,
  );

  it.runIf(executablePath)(
    "steers a task from its page: pause with a reason, the timeline names who, resume back to the gate, restart",
    async () => {
      const id = await api().startRun("approval-gate", { text: "Steer me" });
      await api().waitForRun(id, (s) => s.status === "waiting-approval");
      await page.goto(`${t.baseUrl}/console/tasks/${id}`);
      await page.locator("#pause").click();
      await page.locator("dialog#confirm[open]").waitFor();
      await page.locator("#confirm-reason").fill("checking the budget");
      await page.locator("#confirm-yes").click();
      await page.locator('#machine-state[data-status="paused"]').waitFor();
      await page.locator('#diagram g.state.current[data-state="paused"]').waitFor();
      const note = page.locator('#event-log li[data-type="run.paused"] .note.steer');
      expect(await note.textContent()).toBe("by anonymous: checking the budget");
      expect(await unlabelledControls(page)).toEqual([]);
      await page.locator("#resume").click();
      await page.locator("#confirm-yes").click();
      await page.locator('#machine-state[data-status="waiting-approval"]').waitFor();
      await page.locator("#restart-node").selectOption("prepare");
      await page.locator("#restart").click();
      await page.locator("#confirm-yes").click();
      await page.locator('#event-log li[data-type="openwop-a2a-host.run.restarted"]').waitFor();
      expect((await api().waitForRun(id, (s) => s.status === "waiting-approval")).status).toBe("waiting-approval");
    },
    60_000,
  );
});
