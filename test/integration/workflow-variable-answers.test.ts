// The configured values of `${NAME}` references (WORKFLOW_VARIABLES, A2A_PEER_CARD_URL) may hold secrets (a
// key in a card URL): the answers that show a definition show it as written, never the values.
import { randomBytes } from "node:crypto";
import { mkdtemp, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestApp, type TestApp } from "../support/start-server.js";

const KEY = "variables-key-0123456789abcdef";
const SCOPES = ["runs:create", "runs:read", "manifest:read", "console:operate"];
const SECRET = `s3cr3t-${randomBytes(8).toString("hex")}`;
const BUILTIN_SECRET = `b1lt1n-${randomBytes(8).toString("hex")}`;

describe("WORKFLOW_VARIABLES values stay out of answers", () => {
  let t: TestApp;
  const auth = { authorization: `Bearer ${KEY}` };
  beforeAll(async () => {
    const dir = await mkdtemp(join(tmpdir(), "variable-answers-"));
    await writeFile(
      join(dir, "keyed-peer.yaml"),
      'id: keyed-peer\nname: Keyed peer\ndescription: Calls a peer whose card URL holds a key.\nnodes:\n  - { kind: a2a.invoke, id: call, agentCardUrl: "${PEER_CARD}" }\n',
    );
    t = await startTestApp({
      WORKFLOWS_DIR: dir,
      WORKFLOW_VARIABLES: "PEER_CARD",
      PEER_CARD: `https://peer.example/agents/${SECRET}/agent-card.json?key=${SECRET}`,
      A2A_PEER_CARD_URL: `https://peer.example/${BUILTIN_SECRET}/agent-card.json`,
      API_KEYS: JSON.stringify([{ id: "ops", tenant: "acme", scopes: SCOPES, key: KEY }]),
    });
  });
  afterAll(async () => {
    await t?.close();
  });

  async function text(path: string): Promise<string> {
    const res = await fetch(`${t.baseUrl}${path}`, { headers: auth });
    const body = await res.text();
    expect(res.status, `${path}: ${body}`).toBe(200);
    return body;
  }

  it("GET /v1/workflows/{id} answers the definition as written: the reference, not its value", async () => {
    const keyed = JSON.parse(await text("/v1/workflows/keyed-peer")) as { nodes: Array<Record<string, unknown>> };
    expect(keyed.nodes[0]).toMatchObject({ kind: "a2a.invoke", agentCardUrl: "${PEER_CARD}" });
    const builtin = await text("/v1/workflows/conformance-a2a-task-roundtrip");
    expect(builtin).toContain("${A2A_PEER_CARD_URL}");
    for (const [what, body] of [
      ["keyed-peer", JSON.stringify(keyed)],
      ["conformance-a2a-task-roundtrip", builtin],
    ] as const) {
      expect(body, what).not.toContain(SECRET);
      expect(body, what).not.toContain(BUILTIN_SECRET);
    }
  });

  it("the workflow list, the agent cards and the console's workflow graph carry no variable value", async () => {
    for (const path of [
      "/v1/workflows",
      "/.well-known/agent-card.json",
      "/console/api/workflows/keyed-peer",
      "/console/api/workflows/conformance-a2a-task-roundtrip",
    ]) {
      const body = await text(path);
      expect(body, path).not.toContain(SECRET);
      expect(body, path).not.toContain(BUILTIN_SECRET);
    }
  });
});
