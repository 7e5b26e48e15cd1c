// The console's sign-in through an identity provider: a real OpenID issuer on loopback (discovery, /authorize,
// /token with PKCE S256 and single-use codes, ES256 tokens), the real app, plain HTTP with redirects followed by
// hand so every hop is seen. Each bad input is refused with its reason and changes nothing.
import { createHash, randomBytes } from "node:crypto";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { OidcIssuer } from "../support/oidc-issuer.js";
import { openwopClient } from "../support/openwop-client.js";
import { startTestApp, type TestApp } from "../support/start-server.js";

const AUDIENCE = "openwop-host";
const CLIENT_ID = "operator-console";
const API_KEY = "ops-key-0123456789abcdef0123456789";
/** Its answers' shapes are what the assertions check. */
const json = (res: Response): Promise<any> => res.json();

describe("console sign-in through the IdP (authorization code + PKCE, session cookie, CSRF)", () => {
  let idp: OidcIssuer;
  let t: TestApp;
  const operatorToken = async (tenant: string) =>
    idp.token({ sub: "robot", aud: AUDIENCE, tenant, scope: "runs:create runs:read runs:cancel approvals:respond" });

  beforeAll(async () => {
    idp = await OidcIssuer.start();
    t = await startTestApp({
      AUTH_OIDC_ALLOW_INSECURE_FOR_TESTS: "true",
      AUTH_OIDC_ISSUERS: JSON.stringify([{ issuer: idp.issuer, audience: AUDIENCE }]),
      API_KEYS: JSON.stringify([
        { id: "ops", tenant: "acme", scopes: ["console:operate", "runs:read", "runs:cancel"], key: API_KEY },
      ]),
      CONSOLE_OIDC_CLIENT_ID: CLIENT_ID,
    });
  });
  afterAll(async () => {
    await t?.close();
    await idp?.close();
  });
  beforeEach(() => {
    idp.signIn = {
      clientId: CLIENT_ID,
      redirectUri: `${t.baseUrl}/console/auth/callback`,
      audience: AUDIENCE,
      claims: { sub: "ann", tenant: "acme", scope: "console:operate runs:read approvals:respond runs:cancel" },
    };
  });

  /** GET /console/auth/login: the IdP's authorization URL and the browser-binding cookie. */
  async function startSignIn(): Promise<{ authorize: URL; bindCookie: string }> {
    const res = await fetch(`${t.baseUrl}/console/auth/login`, { redirect: "manual" });
    expect(res.status).toBe(302);
    const bindCookie = res.headers.getSetCookie().find((c) => c.startsWith("console_sign_in="))!;
    expect(bindCookie).toMatch(/HttpOnly/);
    return { authorize: new URL(res.headers.get("location")!), bindCookie: bindCookie.split(";")[0]! };
  }
  /** The IdP approves at once: the callback URL it redirects to (code and state). */
  async function approve(authorize: URL): Promise<URL> {
    const res = await fetch(authorize, { redirect: "manual" });
    expect(res.status).toBe(302);
    return new URL(res.headers.get("location")!);
  }
  async function callback(url: URL | string, cookie: string): Promise<Response> {
    return fetch(url, { redirect: "manual", headers: { cookie } });
  }
  async function signIn(): Promise<{ cookie: string; csrf: string; setCookie: string }> {
    const { authorize, bindCookie } = await startSignIn();
    const res = await callback(await approve(authorize), bindCookie);
    expect(res.status, await res.clone().text()).toBe(303);
    expect(res.headers.get("location")).toBe("/console");
    const setCookie = res.headers.getSetCookie().find((c) => c.startsWith("console_session="))!;
    const cookie = setCookie.split(";")[0]!;
    const session = await json(await fetch(`${t.baseUrl}/console/auth/session`, { headers: { cookie } }));
    expect(session).toMatchObject({ signedIn: true, tenant: "acme", signIn: { issuer: idp.issuer } });
    return { cookie, csrf: session.csrfToken, setCookie };
  }
  const post = (path: string, headers: Record<string, string>, body: unknown = {}) =>
    fetch(`${t.baseUrl}${path}`, {
      method: "POST",
      headers: { "content-type": "application/json", ...headers },
      body: JSON.stringify(body),
    });
  async function waitingTask(tenant = "acme"): Promise<string> {
    const token = await operatorToken(tenant);
    const client = openwopClient(t.baseUrl);
    const runId = await client.startRun("approval-gate", { text: "ship it" }, { authorization: `Bearer ${token}` });
    for (const deadline = Date.now() + 10_000; Date.now() < deadline; await new Promise((r) => setTimeout(r, 25))) {
      const { body } = await client.call("GET", `/v1/runs/${runId}`, undefined, { authorization: `Bearer ${token}` });
      if (body.status === "waiting-approval") return runId;
    }
    throw new Error("the task never waited for approval");
  }
  const stateOf = async (taskId: string) =>
    (
      await openwopClient(t.baseUrl).call("GET", `/v1/runs/${taskId}`, undefined, {
        authorization: `Bearer ${await operatorToken("acme")}`,
      })
    ).body.status as string;

  it("signs in with PKCE S256: an opaque HttpOnly SameSite=Strict cookie on /console; the console API sees the token's tenant; logout ends it", async () => {
    const { authorize } = await startSignIn();
    expect(authorize.origin + authorize.pathname).toBe(`${idp.issuer}/authorize`);
    expect(Object.fromEntries(authorize.searchParams)).toMatchObject({
      response_type: "code",
      client_id: CLIENT_ID,
      redirect_uri: `${t.baseUrl}/console/auth/callback`,
      code_challenge_method: "S256",
    });
    expect(authorize.searchParams.get("code_challenge")).toMatch(/^[\w-]{43}$/);

    const mine = await waitingTask("acme");
    const theirs = await waitingTask("globex");
    const { cookie, setCookie } = await signIn();
    expect(setCookie).toMatch(/^console_session=[\w-]{43}; Path=\/console; Max-Age=\d+; HttpOnly; SameSite=Strict$/);
    // The cookie is no token: nothing in it is a JWT.
    expect(cookie).not.toMatch(/\./);
    const list = await json(await fetch(`${t.baseUrl}/console/api/tasks?limit=500`, { headers: { cookie } }));
    const ids = list.tasks.map((task: { taskId: string }) => task.taskId);
    expect(ids).toContain(mine);
    expect(ids).not.toContain(theirs);

    const { csrf } = await signIn();
    const logout = await post("/console/auth/logout", { cookie, origin: t.baseUrl, "x-csrf-token": csrf });
    // Another session's CSRF token does not sign this one out.
    expect(logout.status).toBe(403);
    const session = await json(await fetch(`${t.baseUrl}/console/auth/session`, { headers: { cookie } }));
    const out = await post("/console/auth/logout", { cookie, origin: t.baseUrl, "x-csrf-token": session.csrfToken });
    expect(out.status).toBe(200);
    expect(out.headers.getSetCookie()[0]).toMatch(/^console_session=; Path=\/console; Max-Age=0/);
    const after = await fetch(`${t.baseUrl}/console/api/tasks`, { headers: { cookie } });
    expect(after.status).toBe(401);
    expect((await json(after)).message).toMatch(/console session has ended/);
  });

  it("a callback with a wrong state is refused and the real sign-in still completes", async () => {
    const { authorize, bindCookie } = await startSignIn();
    const back = await approve(authorize);
    const forged = new URL(back);
    forged.searchParams.set("state", "forged-state-0123456789");
    const res = await callback(forged, bindCookie);
    expect(res.status).toBe(400);
    expect(await res.text()).toBe(
      "Console sign-in failed: the state does not match a sign-in started in this browser.\nStart again at /console.\n",
    );
    expect(res.headers.getSetCookie().some((c) => c.startsWith("console_session="))).toBe(false);
    // Without the browser-binding cookie (a login CSRF: someone else's code and state pushed into this browser).
    expect((await callback(back, "")).status).toBe(400);
    // Nothing changed: the genuine callback works.
    expect((await callback(back, bindCookie)).status).toBe(303);
  });

  it("a replayed callback (same code and state) is refused here, and the issuer refuses a second use of a code", async () => {
    const { authorize, bindCookie } = await startSignIn();
    const back = await approve(authorize);
    expect((await callback(back, bindCookie)).status).toBe(303);
    const answers = idp.tokenAnswers.length;
    const replay = await callback(back, bindCookie);
    expect(replay.status).toBe(400);
    expect(await replay.text()).toMatch(/the state is unknown, expired or already used/);
    // Refused before any token request: the state was taken by the first callback.
    expect(idp.tokenAnswers.length).toBe(answers);
    // The same state with a fresh code (the IdP asked again with the old authorization URL): still refused.
    const again = await approve(authorize);
    expect((await callback(again, bindCookie)).status).toBe(400);
    expect(idp.tokenAnswers.length).toBe(answers);

    // The issuer itself: a code works once, with its verifier.
    const verifier = randomBytes(32).toString("base64url");
    const url = new URL(`${idp.issuer}/authorize`);
    for (const [k, v] of Object.entries({
      response_type: "code",
      client_id: CLIENT_ID,
      redirect_uri: `${t.baseUrl}/console/auth/callback`,
      state: "s",
      code_challenge: createHash("sha256").update(verifier).digest("base64url"),
      code_challenge_method: "S256",
    }))
      url.searchParams.set(k, v);
    const code = (await approve(url)).searchParams.get("code")!;
    const exchange = () =>
      fetch(`${idp.issuer}/token`, {
        method: "POST",
        headers: { "content-type": "application/x-www-form-urlencoded" },
        body: new URLSearchParams({
          grant_type: "authorization_code",
          code,
          client_id: CLIENT_ID,
          redirect_uri: `${t.baseUrl}/console/auth/callback`,
          code_verifier: verifier,
        }).toString(),
      });
    expect((await exchange()).status).toBe(200);
    const second = await exchange();
    expect(second.status).toBe(400);
    expect(await second.json()).toEqual({ error: "invalid_grant" });
  });

  it("a code exchanged without its PKCE verifier is refused by the issuer: a code injected into another sign-in gives no session", async () => {
    // The issuer: no verifier, or another one, no token.
    const verifier = randomBytes(32).toString("base64url");
    const url = new URL(`${idp.issuer}/authorize`);
    for (const [k, v] of Object.entries({
      response_type: "code",
      client_id: CLIENT_ID,
      redirect_uri: `${t.baseUrl}/console/auth/callback`,
      state: "s",
      code_challenge: createHash("sha256").update(verifier).digest("base64url"),
      code_challenge_method: "S256",
    }))
      url.searchParams.set(k, v);
    const form = (code: string, extra: Record<string, string>) =>
      new URLSearchParams({
        grant_type: "authorization_code",
        code,
        client_id: CLIENT_ID,
        redirect_uri: `${t.baseUrl}/console/auth/callback`,
        ...extra,
      }).toString();
    const token = (body: string) =>
      fetch(`${idp.issuer}/token`, {
        method: "POST",
        headers: { "content-type": "application/x-www-form-urlencoded" },
        body,
      });
    const noVerifier = await token(form((await approve(url)).searchParams.get("code")!, {}));
    expect(noVerifier.status).toBe(400);
    expect(await noVerifier.json()).toEqual({ error: "invalid_grant" });
    const wrongVerifier = await token(
      form((await approve(url)).searchParams.get("code")!, { code_verifier: randomBytes(32).toString("base64url") }),
    );
    expect(await wrongVerifier.json()).toEqual({ error: "invalid_grant" });
    // An authorization request without a challenge gets no code at all.
    const plain = new URL(url);
    plain.searchParams.delete("code_challenge");
    plain.searchParams.delete("code_challenge_method");
    expect((await approve(plain)).searchParams.get("error")).toBe("invalid_request");

    // Our side: a code stolen from someone else's authorization (its challenge is not ours) put into our own
    // sign-in's callback: the host exchanges it with this sign-in's verifier, the issuer refuses, no session.
    const stolen = (await approve(url)).searchParams.get("code")!;
    const { authorize, bindCookie } = await startSignIn();
    const back = new URL(`${t.baseUrl}/console/auth/callback`);
    back.searchParams.set("code", stolen);
    back.searchParams.set("state", authorize.searchParams.get("state")!);
    const res = await callback(back, bindCookie);
    expect(res.status).toBe(502);
    expect(await res.text()).toBe(
      "Console sign-in failed: the identity provider refused the code (invalid_grant).\nStart again at /console.\n",
    );
    expect(res.headers.getSetCookie().some((c) => c.startsWith("console_session="))).toBe(false);
  });

  it("a cookie call that changes state needs this session's CSRF token and the console's origin; an API key needs neither", async () => {
    const taskId = await waitingTask();
    const { cookie, csrf } = await signIn();
    const cancel = `/console/api/tasks/${taskId}/cancel`;
    const refusals: Array<[string, Record<string, string>, RegExp]> = [
      [
        "absent CSRF token",
        { cookie, origin: t.baseUrl },
        /x-csrf-token header is absent or is not this session's CSRF token/,
      ],
      [
        "forged CSRF token",
        { cookie, origin: t.baseUrl, "x-csrf-token": "A".repeat(43) },
        /x-csrf-token header is absent or is not this session's CSRF token/,
      ],
      [
        "another origin",
        { cookie, origin: "https://evil.example", "x-csrf-token": csrf },
        /must come from http:\/\/127\.0\.0\.1:\d+ \(Origin: "https:\/\/evil\.example"\)/,
      ],
      ["no origin", { cookie, "x-csrf-token": csrf }, /\(Origin: absent\)/],
    ];
    for (const [what, headers, message] of refusals) {
      const res = await post(cancel, headers);
      expect(res.status, what).toBe(403);
      const body = await json(res);
      expect(body.error, what).toBe("forbidden");
      expect(body.message, what).toMatch(message);
    }
    // Nothing changed.
    expect(await stateOf(taskId)).toBe("waiting-approval");
    // A GET needs no CSRF token.
    expect((await fetch(`${t.baseUrl}/console/api/tasks/${taskId}`, { headers: { cookie } })).status).toBe(200);
    // The API key (a header, not a cookie): no CSRF token, and a cookie beside it is ignored.
    const other = await waitingTask();
    expect(
      (
        await post(`/console/api/tasks/${other}/cancel`, {
          authorization: `Bearer ${API_KEY}`,
          cookie: "console_session=nonsense",
        })
      ).status,
    ).toBe(202);
    // With both: the cancel goes through.
    const ok = await post(cancel, { cookie, origin: t.baseUrl, "x-csrf-token": csrf });
    expect(ok.status).toBe(202);
  });

  it("a cookie whose access token expired is refused (and cleared); the token is checked by the host's authenticator on each call", async () => {
    idp.signIn = { ...idp.signIn!, lifetimeSeconds: 2 };
    const { cookie, setCookie } = await signIn();
    expect(Number(/Max-Age=(\d+)/.exec(setCookie)![1])).toBeLessThanOrEqual(2);
    expect((await fetch(`${t.baseUrl}/console/api/tasks`, { headers: { cookie } })).status).toBe(200);
    await new Promise((r) => setTimeout(r, 2_100));
    const res = await fetch(`${t.baseUrl}/console/api/tasks`, { headers: { cookie } });
    expect(res.status).toBe(401);
    expect((await json(res)).message).toBe(
      "the console session has ended (its access token expired, or it was signed out, or another instance made it): sign in again",
    );
    expect(res.headers.getSetCookie()[0]).toMatch(/^console_session=; Path=\/console; Max-Age=0/);
    expect(await json(await fetch(`${t.baseUrl}/console/auth/session`, { headers: { cookie } }))).toMatchObject({
      signedIn: false,
    });
  });

  it("a token without console:operate makes no session", async () => {
    idp.signIn = { ...idp.signIn!, claims: { sub: "bob", tenant: "acme", scope: "runs:read" } };
    const { authorize, bindCookie } = await startSignIn();
    const res = await callback(await approve(authorize), bindCookie);
    expect(res.status).toBe(403);
    expect(await res.text()).toMatch(/lacks the "console:operate" scope/);
    expect(res.headers.getSetCookie().some((c) => c.startsWith("console_session="))).toBe(false);
  });
});

describe("console sign-in behind an https:// PUBLIC_URL", () => {
  it("marks its cookies Secure and registers the redirect URI under PUBLIC_URL", async () => {
    const idp = await OidcIssuer.start();
    const t = await startTestApp({
      AUTH_OIDC_ALLOW_INSECURE_FOR_TESTS: "true",
      AUTH_OIDC_ISSUER: idp.issuer,
      AUTH_OIDC_AUDIENCE: AUDIENCE,
      CONSOLE_OIDC_CLIENT_ID: CLIENT_ID,
      PUBLIC_URL: "https://console.example.com",
    });
    try {
      const res = await fetch(`${t.baseUrl}/console/auth/login`, { redirect: "manual" });
      expect(res.status).toBe(302);
      expect(new URL(res.headers.get("location")!).searchParams.get("redirect_uri")).toBe(
        "https://console.example.com/console/auth/callback",
      );
      expect(res.headers.getSetCookie()[0]).toMatch(
        /^console_sign_in=[\w-]{43}; Path=\/console\/auth\/callback; Max-Age=600; HttpOnly; SameSite=Lax; Secure$/,
      );
    } finally {
      await t.close();
      await idp.close();
    }
  });
});
