// The console's sign-in in headless Chromium against a real OpenID issuer on loopback: the "Sign in with …"
// button, the IdP's authorization endpoint (auto-approving the test user), back signed in with a session cookie
// (its flags read from the browser), the token's tenant's tasks, an approval (a POST with the CSRF token), sign
// out. And the API-key box: a good key after a refused one leaves no stale error behind.
import { chromium, type Browser, type BrowserContext } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CHROMIUM_INSTALL, findChromium } from "../support/chromium.js";
import { OidcIssuer } from "../support/oidc-issuer.js";
import { openwopClient } from "../support/openwop-client.js";
import { startTestApp, type TestApp } from "../support/start-server.js";

const executablePath = findChromium();
const AUDIENCE = "openwop-host";
const CLIENT_ID = "operator-console";
const API_KEY = "ops-key-0123456789abcdef0123456789";

describe("console sign-in through the IdP, in headless Chromium", () => {
  let idp: OidcIssuer;
  let t: TestApp;
  let browser: Browser;
  const contexts: BrowserContext[] = [];
  const bearer = async (tenant: string) => ({
    authorization: `Bearer ${await idp.token({ sub: "robot", aud: AUDIENCE, tenant, scope: "runs:create runs:read" })}`,
  });
  async function waitingTask(tenant: string): Promise<string> {
    const client = openwopClient(t.baseUrl);
    const runId = await client.startRun("approval-gate", { text: `Ship the ${tenant} release` }, await bearer(tenant));
    await status(runId, tenant, "waiting-approval");
    return runId;
  }
  async function status(runId: string, tenant: string, wanted: string): Promise<void> {
    for (const deadline = Date.now() + 10_000; ; await new Promise((r) => setTimeout(r, 25))) {
      const { body } = await openwopClient(t.baseUrl).call("GET", `/v1/runs/${runId}`, undefined, await bearer(tenant));
      if (body.status === wanted) return;
      if (Date.now() > deadline) throw new Error(`${runId} is ${body.status}, not ${wanted}`);
    }
  }

  beforeAll(async () => {
    if (!executablePath) return;
    idp = await OidcIssuer.start();
    t = await startTestApp({
      AUTH_OIDC_ALLOW_INSECURE_FOR_TESTS: "true",
      AUTH_OIDC_ISSUERS: JSON.stringify([{ issuer: idp.issuer, audience: AUDIENCE }]),
      API_KEYS: JSON.stringify([{ id: "ops", tenant: "acme", scopes: ["console:operate", "runs:read"], key: API_KEY }]),
      CONSOLE_OIDC_CLIENT_ID: CLIENT_ID,
    });
    idp.signIn = {
      clientId: CLIENT_ID,
      redirectUri: `${t.baseUrl}/console/auth/callback`,
      audience: AUDIENCE,
      claims: { sub: "ann", tenant: "acme", scope: "console:operate runs:read approvals:respond" },
    };
    // --no-sandbox: CI runs as root in a container, where Chromium's sandbox cannot start.
    browser = await chromium.launch({
      executablePath,
      headless: true,
      args: ["--no-sandbox", "--disable-dev-shm-usage"],
    });
  }, 60_000);
  afterAll(async () => {
    for (const context of contexts) await context.close();
    await browser?.close();
    await t?.close();
    await idp?.close();
  });
  const newPage = async () => {
    const context = await browser.newContext({ viewport: { width: 1400, height: 900 } });
    contexts.push(context);
    const page = await context.newPage();
    page.on("pageerror", (err) => console.error("page error:", err));
    return { context, page };
  };

  it("has a Chromium to drive", () => {
    expect(executablePath, `no Chromium found (set CHROMIUM_PATH, or install it: ${CHROMIUM_INSTALL})`).toBeDefined();
  });

  it.runIf(executablePath)(
    "signs in with the IdP, sees its tenant's tasks, approves one (CSRF-protected POST), signs out",
    async () => {
      const mine = await waitingTask("acme");
      const theirs = await waitingTask("globex");
      const { context, page } = await newPage();
      await page.goto(`${t.baseUrl}/console`);
      const signIn = page.locator("#sign-in");
      await signIn.waitFor();
      expect(await signIn.textContent()).toBe(`Sign in with ${new URL(idp.issuer).host}`);
      await signIn.click();
      // Through the IdP's /authorize and our callback, back to the console.
      await page.waitForURL(`${t.baseUrl}/console`);
      await page.locator("#signed-in").filter({ hasText: "Signed in · tenant acme" }).waitFor();
      expect(await signIn.isHidden()).toBe(true);

      const cookies = await context.cookies();
      const session = cookies.find((c) => c.name === "console_session")!;
      expect(session).toMatchObject({
        httpOnly: true,
        sameSite: "Strict",
        path: "/console",
        secure: false,
        domain: "127.0.0.1",
      });
      expect(session.value).toMatch(/^[\w-]{43}$/);
      expect(session.expires).toBeGreaterThan(Date.now() / 1000);
      // The sign-in binding cookie is gone; the page's script cannot read the session cookie.
      expect(cookies.map((c) => c.name)).toEqual(["console_session"]);
      expect(await page.evaluate<string>("document.cookie")).toBe("");

      await page.locator(`#tasks tr[data-task-id="${mine}"]`).waitFor();
      expect(await page.locator(`#tasks tr[data-task-id="${theirs}"]`).count()).toBe(0);

      await page.locator(`#tasks tr[data-task-id="${mine}"] td.title a`).click();
      await page.waitForURL(new RegExp(`/console/tasks/${mine}$`));
      const approval = page.waitForRequest(
        (r) => r.method() === "POST" && r.url().endsWith(`/console/api/tasks/${mine}/interrupts/gate`),
      );
      await page.locator("#approve").click();
      const sent = await approval;
      expect((await sent.allHeaders())["x-csrf-token"]).toMatch(/^[\w-]{43}$/);
      await page.locator('#diagram g.state.current[data-state="completed"]').waitFor();
      await status(mine, "acme", "completed");

      await page.locator("#sign-out").click();
      await signIn.waitFor();
      expect((await context.cookies()).map((c) => c.name)).toEqual([]);
      await page
        .locator("#error")
        .filter({ hasText: /missing credentials/ })
        .waitFor();
    },
    60_000,
  );

  it.runIf(executablePath)(
    "a good API key after a refused one clears the stale error",
    async () => {
      const { page } = await newPage();
      await page.goto(`${t.baseUrl}/console`);
      await page
        .locator("#error")
        .filter({ hasText: /unauthenticated/ })
        .waitFor();
      await page.locator("#api-key").fill(API_KEY);
      await page.locator("#api-key").press("Enter");
      await page.waitForSelector("#tasks[data-loaded]");
      expect(await page.locator("#error").isHidden()).toBe(true);
    },
    30_000,
  );
});
