// The operator console and workflow versions (docs/workflows.md "Changing a workflow"), driven in headless Chromium:
// a task on an earlier version shows that version and its graph; a task whose node needs a handler this deploy
// dropped shows as blocked with the reason; a waiting task is moved to the deployed version from its page.
import { mkdir } from "node:fs/promises";
import { join } from "node:path";
import { chromium, type Browser, type Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { projectRoot } from "../../src/domain/project-root.js";
import { MemoryTaskStore } from "../../src/store/memory-task-store.js";
import type { NodeBase, TaskHandler, WorkflowDefinition } from "../../src/workflows/workflow-types.js";
import { CHROMIUM_INSTALL, findChromium } from "../support/chromium.js";
import { openwopClient } from "../support/openwop-client.js";
import { startTestApp, type TestApp } from "../support/start-server.js";

const ARTIFACTS = join(projectRoot, "test-artifacts", "console");
const executablePath = findChromium();

const step: TaskHandler = async () => ({ output: { ok: true } });
const quote = (version: string, gate: string, send: string): WorkflowDefinition<NodeBase> => ({
  id: "quote",
  version,
  name: "Quote",
  description: "draft, a gate, send",
  nodes: [
    { kind: "task", id: "draft", handler: "step" },
    { kind: "approval", id: gate, title: "Approve the quote" },
    { kind: "task", id: "send", handler: send },
  ] as unknown as NodeBase[],
});

describe("the console shows workflow versions", () => {
  // One store, two deploys one after the other: version 1 (with the `send-v1` handler), then version 2 without it.
  const store = new MemoryTaskStore();
  let deployed: TestApp;
  let browser: Browser;
  let page: Page;
  let blocked: string;
  let waiting: string;

  beforeAll(async () => {
    if (!executablePath) return;
    await mkdir(ARTIFACTS, { recursive: true });
    const first = await startTestApp(
      {},
      store,
      { step, "send-v1": step },
      { workflows: [quote("1", "approve", "send-v1")] },
    );
    const api1 = openwopClient(first.baseUrl);
    blocked = await api1.startRun("quote");
    waiting = await api1.startRun("quote");
    for (const id of [blocked, waiting]) await api1.waitForRun(id, (s) => s.status === "waiting-approval");
    await first.close();
    deployed = await startTestApp({}, store, { step }, { workflows: [quote("2", "review", "step")] });
    const api2 = openwopClient(deployed.baseUrl);
    expect(
      (await api2.call("POST", `/v1/runs/${blocked}/interrupts/approve`, { resumeValue: { action: "accept" } })).status,
    ).toBe(200);
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
    await deployed?.close();
  });

  it("has a Chromium to drive", () => {
    expect(executablePath, `no Chromium found (set CHROMIUM_PATH, or install it: ${CHROMIUM_INSTALL})`).toBeDefined();
  });

  it.runIf(executablePath)(
    "a task blocked at a node whose handler this deploy dropped: its version, its own graph, and the reason",
    async () => {
      await page.goto(`${deployed.baseUrl}/console/tasks/${blocked}`);
      await page.locator("#blocked").waitFor();
      expect(await page.locator("#blocked").textContent()).toMatch(/^blocked: node "send": no handler named "send-v1"/);
      expect(await page.locator("#workflow-version").textContent()).toBe(" (workflow version 1)");
      await page.locator("#wf-title", { hasText: "version 1 (not the deployed one)" }).waitFor();
      expect(await page.locator("#wf-title").textContent()).toContain("versions in use: 1: 2 live");
      await page.screenshot({ path: join(ARTIFACTS, "blocked-on-version.png"), fullPage: true });
      // In the list, the row says it is blocked.
      await page.goto(`${deployed.baseUrl}/console`);
      await page.locator(`[data-waiting="blocked"]`).first().waitFor();
    },
    60_000,
  );

  it.runIf(executablePath)(
    "moves a waiting task to the deployed version from its page, mapping its gate to the new one",
    async () => {
      await page.goto(`${deployed.baseUrl}/console/tasks/${waiting}`);
      await page.locator("#move-version").selectOption("2");
      await page.locator("#move-node").fill("review");
      await page.locator("#move").click();
      await page.locator("dialog#confirm[open]").waitFor();
      await page.locator("#confirm-reason").fill("gate renamed");
      await page.locator("#confirm-yes").click();
      await page.locator('#event-log li[data-type="openwop-a2a-host.run.moved"]').waitFor();
      await page.locator("#workflow-version", { hasText: "workflow version 2" }).waitFor();
      // The graph is drawn again as version 2 has it, the task at its new gate.
      await page.locator("#wf-title", { hasText: "version 2 (deployed)" }).waitFor();
      const run = await openwopClient(deployed.baseUrl).waitForRun(waiting, (s) => s.currentNodeId === "review");
      expect(run).toMatchObject({ status: "waiting-approval", workflowVersion: "2" });
      await page.screenshot({ path: join(ARTIFACTS, "moved-to-version.png"), fullPage: true });
    },
    60_000,
  );
});
