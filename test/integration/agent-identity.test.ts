// The agent's identity (AGENT_*) on the A2A 0.3 card, the 1.0 card and the OpenWOP discovery document, and
// which skills a real server lists and runs (BUILTIN_WORKFLOWS next to WORKFLOWS_DIR): a skill that is not
// loaded answers exactly like an unknown one, on every binding.
import { randomUUID } from "node:crypto";
import { mkdtemp, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ConnectError, createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ConfigError } from "../../src/config/config.js";
import { packageVersion } from "../../src/core.js";
import { projectRoot } from "../../src/domain/project-root.js";
import { builtinHandlers } from "../../src/workflows/builtin-handlers.js";
import { readWorkflowDirectory } from "../../src/engine/workflow-catalog.js";
import { A2AService as V03Service, Role as V03Role } from "../../src/gen/a2a/v1/a2a_pb.js";
import { A2AService as V10Service, Role as V10Role } from "../../src/gen/lf/a2a/v1/a2a_pb.js";
import { validateCapabilities } from "../../src/schemas/schema-validator.js";
import { startTestApp, type TestApp } from "../support/start-server.js";

type Obj = Record<string, any>;

const IDENTITY = {
  AGENT_NAME: "Acme travel agent",
  AGENT_DESCRIPTION: "Books flights and hotels for Acme staff.",
  AGENT_VERSION: "2.1.0",
  AGENT_PROVIDER_ORGANIZATION: "Acme Corp",
  AGENT_PROVIDER_URL: "https://acme.example",
  AGENT_DOCUMENTATION_URL: "https://acme.example/docs/travel-agent",
  AGENT_ICON_URL: "https://acme.example/icon.png",
};

const getJson = async (url: string, headers: Record<string, string> = {}): Promise<Obj> => {
  const res = await fetch(url, { headers });
  expect(res.status).toBe(200);
  return (await res.json()) as Obj;
};

describe("the agent's identity (AGENT_*)", () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp(IDENTITY);
  });
  afterAll(() => t.close());

  it("is on the A2A 0.3 card (the bare path and /v1/card)", async () => {
    const card = await getJson(`${t.baseUrl}/.well-known/agent-card.json`, { "A2A-Version": "0.3" });
    expect(card).toMatchObject({
      protocolVersion: "0.3.0",
      name: "Acme travel agent",
      description: "Books flights and hotels for Acme staff.",
      version: "2.1.0",
      provider: { organization: "Acme Corp", url: "https://acme.example" },
      documentationUrl: "https://acme.example/docs/travel-agent",
      iconUrl: "https://acme.example/icon.png",
    });
    const proto = await getJson(`${t.baseUrl}/v1/card`);
    expect(proto).toMatchObject({
      name: "Acme travel agent",
      version: "2.1.0",
      provider: { organization: "Acme Corp", url: "https://acme.example" },
      documentationUrl: "https://acme.example/docs/travel-agent",
      iconUrl: "https://acme.example/icon.png",
    });
  });

  it("is on the A2A 1.0 card (A2A-Version: 1.0) and in the 0.3 and 1.0 gRPC GetAgentCard / GetExtendedAgentCard", async () => {
    const card = await getJson(`${t.baseUrl}/.well-known/agent-card.json`, { "A2A-Version": "1.0" });
    expect(card).toMatchObject({
      name: "Acme travel agent",
      description: "Books flights and hotels for Acme staff.",
      version: "2.1.0",
      provider: { organization: "Acme Corp", url: "https://acme.example" },
      documentationUrl: "https://acme.example/docs/travel-agent",
      iconUrl: "https://acme.example/icon.png",
    });
    expect(card).not.toHaveProperty("protocolVersion");
    const v03 = await createClient(V03Service, createGrpcTransport({ baseUrl: t.baseUrl })).getAgentCard({});
    expect({
      name: v03.name,
      version: v03.version,
      iconUrl: v03.iconUrl,
      provider: { organization: v03.provider?.organization, url: v03.provider?.url },
    }).toEqual({
      name: "Acme travel agent",
      version: "2.1.0",
      iconUrl: "https://acme.example/icon.png",
      provider: { organization: "Acme Corp", url: "https://acme.example" },
    });
  });

  it("is in the OpenWOP discovery document, next to the software's own name and version", async () => {
    const doc = await getJson(`${t.baseUrl}/.well-known/openwop`);
    validateCapabilities(doc);
    expect(doc["implementation"]).toEqual({
      name: "openwop-a2a-host",
      version: packageVersion,
      agent: {
        name: "Acme travel agent",
        description: "Books flights and hotels for Acme staff.",
        version: "2.1.0",
        provider: { organization: "Acme Corp", url: "https://acme.example" },
        documentationUrl: "https://acme.example/docs/travel-agent",
        iconUrl: "https://acme.example/icon.png",
      },
    });
  });
});

describe("without AGENT_*", () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp();
  });
  afterAll(() => t.close());

  it("the cards and the discovery document look as they always did", async () => {
    for (const headers of [{ "A2A-Version": "0.3" }, { "A2A-Version": "1.0" }]) {
      const card = await getJson(`${t.baseUrl}/.well-known/agent-card.json`, headers);
      expect(card["name"]).toBe("OpenWOP A2A host");
      expect(card["description"]).toMatch(/^Durable A2A tasks backed by OpenWOP workflow runs\. Skills: /);
      expect(card["version"]).toBe(packageVersion);
      for (const field of ["provider", "documentationUrl", "iconUrl"]) expect(card).not.toHaveProperty(field);
    }
    const doc = await getJson(`${t.baseUrl}/.well-known/openwop`);
    expect(doc["implementation"]).toEqual({ name: "openwop-a2a-host", version: packageVersion });
  });
});

describe("bad AGENT_* values", () => {
  it("a bad URL and a half provider are reported together in one ConfigError", async () => {
    const error = await startTestApp({
      AGENT_PROVIDER_ORGANIZATION: "Acme Corp",
      AGENT_ICON_URL: "icon.png",
      AGENT_DOCUMENTATION_URL: "mailto:docs@acme.example",
    }).then(
      async (app) => {
        await app.close();
        return undefined;
      },
      (err: unknown) => err,
    );
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as ConfigError).problems).toEqual([
      "AGENT_PROVIDER_ORGANIZATION needs AGENT_PROVIDER_URL too (the card's provider has both or neither)",
      'AGENT_DOCUMENTATION_URL must be an absolute http(s) URL (got "mailto:docs@acme.example")',
      'AGENT_ICON_URL must be an absolute http(s) URL (got "icon.png")',
    ]);
  });
});

// ------------------------------------------------------------------------------------------ skills

const setIds = async (set: string) =>
  (await readWorkflowDirectory(join(projectRoot, "workflows", set), builtinHandlers)).map((w) => w.id).sort();
const DEMOS = await setIds("demo");
const FIXTURES = await setIds("conformance");

const TRIP = `
id: plan-trip
name: Plan a trip
description: Plans a trip.
nodes:
  - { kind: task, id: plan, handler: echo }
`;

async function userWorkflows(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), "agent-skills-"));
  await writeFile(join(dir, "plan-trip.yaml"), TRIP);
  return dir;
}

const skillsOn = async (t: TestApp, headers: Record<string, string>) =>
  ((await getJson(`${t.baseUrl}/.well-known/agent-card.json`, headers))["skills"] as Obj[])
    .map((s) => s["id"] as string)
    .sort();

describe("which skills a real server lists and runs", () => {
  it("by default (the product's: no BUILTIN_WORKFLOWS, no WORKFLOWS_DIR): the demos, no conformance fixture", async () => {
    // The test helpers load every built-in set unless told otherwise; "" is unset, the product's default.
    const t = await startTestApp({ BUILTIN_WORKFLOWS: "" });
    try {
      expect(await skillsOn(t, { "A2A-Version": "0.3" })).toEqual(DEMOS);
      expect(await skillsOn(t, { "A2A-Version": "1.0" })).toEqual(DEMOS);
      const doc = await getJson(`${t.baseUrl}/.well-known/openwop`);
      expect(doc["fixtures"]).toEqual([]);
      expect((await fetch(`${t.baseUrl}/v1/workflows/conformance-noop`)).status).toBe(404);
      expect((await fetch(`${t.baseUrl}/v1/workflows/echo`)).status).toBe(200);
    } finally {
      await t.close();
    }
  });

  it("BUILTIN_WORKFLOWS=demo,conformance with WORKFLOWS_DIR: all of them; discovery lists the fixtures", async () => {
    const t = await startTestApp({ BUILTIN_WORKFLOWS: "demo,conformance", WORKFLOWS_DIR: await userWorkflows() });
    try {
      expect(await skillsOn(t, {})).toEqual([...DEMOS, ...FIXTURES, "plan-trip"].sort());
      const doc = await getJson(`${t.baseUrl}/.well-known/openwop`);
      expect([...(doc["fixtures"] as string[])].sort()).toEqual(FIXTURES);
    } finally {
      await t.close();
    }
  });

  describe("WORKFLOWS_DIR given (no BUILTIN_WORKFLOWS): only the user's skills", () => {
    let t: TestApp;
    beforeAll(async () => {
      t = await startTestApp({ BUILTIN_WORKFLOWS: "", WORKFLOWS_DIR: await userWorkflows() });
    });
    afterAll(() => t.close());

    it("are on both cards and in discovery (no fixtures); a message without a skillId runs the first one", async () => {
      expect(await skillsOn(t, { "A2A-Version": "0.3" })).toEqual(["plan-trip"]);
      expect(await skillsOn(t, { "A2A-Version": "1.0" })).toEqual(["plan-trip"]);
      expect((await getJson(`${t.baseUrl}/.well-known/openwop`))["fixtures"]).toEqual([]);
      const res = await fetch(`${t.baseUrl}/a2a/jsonrpc`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({
          jsonrpc: "2.0",
          id: 1,
          method: "message/send",
          params: {
            message: {
              kind: "message",
              messageId: randomUUID(),
              role: "user",
              parts: [{ kind: "text", text: "Lisbon" }],
            },
            configuration: { blocking: true },
          },
        }),
      });
      const body = (await res.json()) as Obj;
      expect(body["result"]).toMatchObject({ kind: "task", status: { state: "completed" } });
      expect(await getJson(`${t.baseUrl}/v1/runs/${body["result"]["id"]}`)).toMatchObject({
        workflowId: "plan-trip",
        status: "completed",
      });
    });

    /** One send of `skillId` on each binding: what the caller sees, with the skill id masked so answers compare. */
    const answers = async (skillId: string): Promise<Record<string, unknown>> => {
      const mask = (text: string) => text.split(skillId).join("<skill>");
      const jsonRpc = async (headers: Record<string, string>, method: string, message: Obj) => {
        const res = await fetch(`${t.baseUrl}/a2a/jsonrpc`, {
          method: "POST",
          headers: { "content-type": "application/json", ...headers },
          body: JSON.stringify({ jsonrpc: "2.0", id: 1, method, params: { message } }),
        });
        const body = (await res.json()) as Obj;
        return { status: res.status, code: body["error"]?.["code"], message: mask(String(body["error"]?.["message"])) };
      };
      const grpc = async (call: () => Promise<unknown>) => {
        try {
          await call();
          return "no error";
        } catch (err) {
          const e = ConnectError.from(err);
          return { code: e.code, message: mask(e.rawMessage) };
        }
      };
      const rest = await fetch(`${t.baseUrl}/v1/message:send`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({
          message: { messageId: randomUUID(), role: "ROLE_USER", content: [{ text: "hi" }], metadata: { skillId } },
        }),
      });
      const runs = await fetch(`${t.baseUrl}/v1/runs`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ workflowId: skillId }),
      });
      const workflow = await fetch(`${t.baseUrl}/v1/workflows/${skillId}`);
      return {
        "JSON-RPC 0.3": await jsonRpc({}, "message/send", {
          kind: "message",
          messageId: randomUUID(),
          role: "user",
          parts: [{ kind: "text", text: "hi" }],
          metadata: { skillId },
        }),
        "JSON-RPC 1.0": await jsonRpc({ "A2A-Version": "1.0" }, "SendMessage", {
          messageId: randomUUID(),
          role: "ROLE_USER",
          parts: [{ text: "hi" }],
          metadata: { skillId },
        }),
        "HTTP+JSON 0.3": { status: rest.status, body: mask(await rest.text()) },
        "gRPC 0.3": await grpc(() =>
          createClient(V03Service, createGrpcTransport({ baseUrl: t.baseUrl })).sendMessage({
            request: {
              messageId: randomUUID(),
              role: V03Role.USER,
              content: [{ part: { case: "text", value: "hi" } }],
              metadata: { skillId },
            },
          }),
        ),
        "gRPC 1.0": await grpc(() =>
          createClient(V10Service, createGrpcTransport({ baseUrl: t.baseUrl })).sendMessage(
            {
              message: {
                messageId: randomUUID(),
                role: V10Role.USER,
                parts: [{ content: { case: "text", value: "hi" } }],
                metadata: { skillId },
              },
            },
            { headers: { "a2a-version": "1.0" } },
          ),
        ),
        "POST /v1/runs": { status: runs.status, body: mask(await runs.text()) },
        "GET /v1/workflows/{id}": { status: workflow.status, body: mask(await workflow.text()) },
      };
    };

    it("a demo skill and a conformance fixture answer exactly like an unknown skill, on every binding; nothing is created", async () => {
      const before = (await t.store.listActive()).length;
      const unknown = await answers("no-such-skill");
      expect(unknown["JSON-RPC 0.3"]).toMatchObject({ code: -32602 });
      expect(JSON.stringify(unknown)).toContain('unknown skill \\"<skill>\\"; this agent offers: plan-trip');
      expect(unknown["POST /v1/runs"]).toMatchObject({ status: 404 });
      expect(await answers("echo")).toEqual(unknown);
      expect(await answers("conformance-approval")).toEqual(unknown);
      expect((await t.store.listActive()).length).toBe(before);
    });
  });
});
