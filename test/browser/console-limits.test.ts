// The console's Tenant limits page in headless Chromium: a tenant's usage against its limits (a full one marked)
// and its refusals by reason, reached from the header's link.
import { randomUUID } from "node:crypto";
import { mkdir } from "node:fs/promises";
import { join } from "node:path";
import { chromium, type Browser, type Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { projectRoot } from "../../src/domain/project-root.js";
import { CHROMIUM_INSTALL, findChromium } from "../support/chromium.js";
import { startTestApp, type TestApp } from "../support/start-server.js";

const executablePath = findChromium();
const ARTIFACTS = join(projectRoot, "test-artifacts", "console");
const OPS = "ops-key-0123456789abcdef0123";
const GLOBEX = "globex-key-0123456789abcdef0123";

describe("the console's tenant limits page in headless Chromium", () => {
  let t: TestApp;
  let browser: Browser;
  let page: Page;

  beforeAll(async () => {
    if (!executablePath) return;
    await mkdir(ARTIFACTS, { recursive: true });
    t = await startTestApp({
      CONSOLE_ENABLED: "true",
      API_KEYS: JSON.stringify([
        { id: "ops", tenant: "acme", scopes: ["console:operate", "console:all-tenants"], key: OPS },
        { id: "globex", tenant: "globex", scopes: ["runs:create", "runs:read"], key: GLOBEX },
      ]),
      TENANT_LIMITS: JSON.stringify({ default: { tasksPerMinute: 60 }, tenants: { globex: { runningTasks: 1 } } }),
    });
    // Globex fills its one place, then is refused twice.
    for (let i = 0; i < 3; i++)
      await fetch(`${t.baseUrl}/a2a/jsonrpc`, {
        method: "POST",
        headers: { "content-type": "application/json", authorization: `Bearer ${GLOBEX}` },
        body: JSON.stringify({
          jsonrpc: "2.0",
          id: 1,
          method: "message/send",
          params: {
            message: {
              kind: "message",
              messageId: randomUUID(),
              role: "user",
              parts: [{ kind: "text", text: "hold" }],
              metadata: { skillId: "approval-gate" },
            },
          },
        }),
      });
    browser = await chromium.launch({
      executablePath,
      headless: true,
      args: ["--no-sandbox", "--disable-dev-shm-usage"],
    });
    page = await browser.newPage({ viewport: { width: 1300, height: 500 } });
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
    await t?.close();
  });

  it("has a Chromium to drive", () => {
    expect(executablePath, `no Chromium found (set CHROMIUM_PATH, or install it: ${CHROMIUM_INSTALL})`).toBeDefined();
  });

  it.runIf(executablePath)("shows each tenant's usage against its limits and its refusals", async () => {
    await page.goto(`${t.baseUrl}/console`);
    await page.fill("#api-key", OPS);
    await page.click("#key-form button");
    await page.click("text=Tenant limits");
    await page.waitForSelector('#limits tr[data-tenant="globex"]');
    expect(new URL(page.url()).pathname).toBe("/console/limits");
    const cell = (tenant: string, limit: string) =>
      page.textContent(`#limits tr[data-tenant="${tenant}"] td[data-limit="${limit}"]`);
    expect(await cell("globex", "runningTasks")).toBe("1 / 1");
    expect(
      await page.locator('#limits tr[data-tenant="globex"] td[data-limit="runningTasks"] [data-full]').count(),
    ).toBe(1);
    expect(await cell("globex", "tasksPerMinute")).toBe("1 / 60");
    expect(await cell("acme", "tasksPerMinute")).toBe("0 / 60");
    expect(await page.textContent('#limits tr[data-tenant="globex"] td[data-refusals]')).toBe("runningTasks: 2");
    expect(await page.textContent("#shedding")).toBe("This instance is not shedding.");
    await page.screenshot({ path: join(ARTIFACTS, "console-limits.png") });
  });
});
