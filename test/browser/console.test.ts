// The operator console in a real browser (headless Chromium driven by playwright-core): the real server on
// a free port, an approval task waiting at its gate, the console showing it live with its state highlighted
// in the machine diagram, approved from the page, and the diagram and event log moving to `completed`
// without a reload. Screenshots are kept under test-artifacts/console/.
import { mkdir } from "node:fs/promises";
import { join } from "node:path";
import { chromium, type Browser, type Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { projectRoot } from "../../src/domain/project-root.js";
import { CHROMIUM_INSTALL, findChromium } from "../support/chromium.js";
import { openwopClient } from "../support/openwop-client.js";
import { startTestApp, type TestApp } from "../support/start-server.js";

const ARTIFACTS = join(projectRoot, "test-artifacts", "console");
const executablePath = findChromium();

describe("operator console in headless Chromium", () => {
  let t: TestApp;
  let browser: Browser;
  let page: Page;

  beforeAll(async () => {
    if (!executablePath) return;
    await mkdir(ARTIFACTS, { recursive: true });
    t = await startTestApp();
    // --no-sandbox: CI runs as root in a container, where Chromium's sandbox cannot start.
    browser = await chromium.launch({ executablePath, headless: true, args: ["--no-sandbox", "--disable-dev-shm-usage"] });
    page = await browser.newPage({ viewport: { width: 1500, height: 1000 } });
    page.on("pageerror", (err) => console.error("page error:", err));
  });

  afterAll(async () => {
    await browser?.close();
    await t?.close();
  });

  it("has a Chromium to drive", () => {
    expect(executablePath, `no Chromium found (set CHROMIUM_PATH, or install it: ${CHROMIUM_INSTALL})`).toBeDefined();
  });

  it.runIf(executablePath)("shows a waiting approval task live, approves it from the page, and follows it to completed without reloading", async () => {
    const api = openwopClient(t.baseUrl);
    await page.goto(`${t.baseUrl}/console#/`);
    await page.waitForSelector("#tasks tbody");

    // Created after the list is open: it appears through the live stream, not a reload.
    const runId = await api.startRun("approval-gate", { text: "Send the quarterly report to the board" });
    await api.waitForRun(runId, (s) => s.status === "waiting-approval");
    const row = page.locator(`#tasks tr[data-task-id="${runId}"]`);
    await row.locator('[data-a2a-state="input-required"]').waitFor();
    await page.screenshot({ path: join(ARTIFACTS, "1-task-list.png"), fullPage: true });

    await row.locator("a").click();
    const current = page.locator("#diagram g.state.current");
    await page.locator('#diagram g.state.current[data-state="waiting-approval"]').waitFor();
    expect(await current.count()).toBe(1);
    // The path taken so far: pending → running → waiting-approval.
    for (const [source, target] of [["pending", "running"], ["running", "waiting-approval"]]) {
      expect(await page.locator(`#diagram g.edge.taken[data-source="${source}"][data-target="${target}"]`).count(), `${source} → ${target}`).toBe(1);
    }
    expect(await page.locator('#diagram g.edge.taken[data-source="waiting-approval"]').count()).toBe(0);
    await page.locator('#event-log tr[data-type="interrupt.requested"]').waitFor();
    await page.screenshot({ path: join(ARTIFACTS, "2-waiting-approval.png"), fullPage: true });

    // A marker on the window: a reload would lose it.
    await page.evaluate(() => ((globalThis as unknown as { consoleMarker: number }).consoleMarker = 42));
    await page.locator("#approve").click();

    await page.locator('#diagram g.state.current[data-state="completed"]').waitFor();
    await page.locator('#event-log tr[data-type="run.completed"]').waitFor();
    expect(await page.locator("#machine-state").getAttribute("data-status")).toBe("completed");
    expect(await page.locator('#diagram g.edge.taken[data-source="waiting-approval"][data-target="running"]').count()).toBe(1);
    expect(await page.locator('#diagram g.edge.taken[data-source="running"][data-target="completed"]').count()).toBe(1);
    expect(await page.locator("#interrupt").textContent()).toBe("");
    expect(await page.evaluate(() => (globalThis as unknown as { consoleMarker?: number }).consoleMarker)).toBe(42);
    await page.screenshot({ path: join(ARTIFACTS, "3-completed.png"), fullPage: true });

    // The server agrees: approved by the console's token, and completed.
    const done = await api.waitForRun(runId, (s) => s.status === "completed");
    expect(done.status).toBe("completed");
  }, 60_000);

  it.runIf(executablePath)("asks a question, then rejects, from the page: the task fails and the diagram says so", async () => {
    const api = openwopClient(t.baseUrl);
    const runId = await api.startRun("approval-gate", { text: "Delete the production database" });
    await api.waitForRun(runId, (s) => s.status === "waiting-approval");
    await page.goto(`${t.baseUrl}/console#/tasks/${runId}`);
    await page.locator('#diagram g.state.current[data-state="waiting-approval"]').waitFor();

    // Ask without a question: the page refuses and nothing is sent.
    await page.locator("#ask").click();
    await page.locator("#error").filter({ hasText: "question" }).waitFor();
    await page.locator("#interrupt-text").fill("Which database exactly?");
    await page.locator("#ask").click();
    await page.locator("#interrupt").filter({ hasText: "Which database exactly?" }).waitFor();
    await page.locator('#event-log tr[data-type="interrupt.exchange"]').waitFor();
    expect(await page.locator("#machine-state").getAttribute("data-status")).toBe("waiting-approval");

    await page.locator("#reject").click();
    await page.locator('#diagram g.state.current[data-state="failed"]').waitFor();
    await page.locator('#event-log tr[data-type="run.failed"]').waitFor();
    expect(await page.locator('#diagram g.edge.taken[data-source="waiting-approval"][data-target="failed"]').count()).toBe(1);
    expect(await page.locator("#cancel").isDisabled()).toBe(true);
    await page.screenshot({ path: join(ARTIFACTS, "4-rejected.png"), fullPage: true });
    expect((await api.waitForRun(runId, (s) => s.status === "failed")).status).toBe("failed");
  }, 60_000);
});
