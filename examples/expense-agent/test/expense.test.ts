// The expense agent end to end, as a caller sees it: a stock A2A client (@a2a-js/sdk, A2A 1.0) sends an
// expense, the agent converts it through a real rates API on loopback and waits for approval, the client
// approves (or rejects), and reads the outcome.
import { randomUUID } from "node:crypto";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { TaskState, type Part, type Task } from "@a2a-js/sdk";
import { ClientFactory, type Client } from "@a2a-js/sdk/client";
import type { RunningHost } from "openwop-a2a-host";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startExpenseAgent } from "../src/agent.js";

const RATES: Record<string, number> = { EUR: 1.1, GBP: 1.25 };

/** A small rates API: `GET /rates?from=EUR&to=USD` → `{"rate": 1.1}`; an unknown currency is a 404. */
function startRatesApi(): Promise<Server> {
  const server = createServer((req, res) => {
    const from = new URL(req.url ?? "/", "http://localhost").searchParams.get("from") ?? "";
    const rate = RATES[from];
    res.writeHead(rate ? 200 : 404, { "content-type": "application/json" });
    res.end(JSON.stringify(rate ? { rate } : { error: `unknown currency ${from}` }));
  });
  return new Promise((resolve) => server.listen(0, "127.0.0.1", () => resolve(server)));
}

type SendRequest = Parameters<Client["sendMessage"]>[0];
type Content = NonNullable<Part["content"]>;

function message(content: Content, taskId = ""): SendRequest {
  const part = { content, metadata: undefined, filename: "", mediaType: "" };
  return {
    tenant: "",
    message: {
      messageId: randomUUID(),
      contextId: "",
      taskId,
      role: 1,
      parts: [part],
      metadata: undefined,
      extensions: [],
      referenceTaskIds: [],
    },
    configuration: undefined,
    metadata: undefined,
  };
}

async function send(client: Client, request: SendRequest): Promise<Task> {
  const result = await client.sendMessage(request);
  if (!("status" in result)) throw new Error("expected a Task");
  return result;
}

describe("the expense agent", () => {
  let rates: Server;
  let agent: RunningHost;
  let client: Client;

  beforeAll(async () => {
    rates = await startRatesApi();
    process.env["RATES_API_URL"] = `http://127.0.0.1:${(rates.address() as AddressInfo).port}`;
    agent = await startExpenseAgent({ port: 0, logLevel: "silent", env: { STORE: "memory" } });
    client = await new ClientFactory().createFromUrl(agent.url);
  });

  afterAll(async () => {
    await agent?.close();
    rates?.close();
  });

  it("shows its own name and only its own skill", async () => {
    const card = (await (await fetch(`${agent.url}/.well-known/agent-card.json`)).json()) as {
      name: string;
      skills: Array<{ id: string }>;
    };
    expect(card.name).toBe("Expense agent");
    expect(card.skills.map((s) => s.id)).toEqual(["expense"]);
  });

  it("converts the expense, waits for approval, and files it when approved", async () => {
    const waiting = await send(client, message({ $case: "text", value: "120 EUR taxi to the airport" }));
    expect(waiting.status?.state).toBe(TaskState.TASK_STATE_INPUT_REQUIRED);
    expect(waiting.artifacts[0]?.parts[0]?.content).toEqual({
      $case: "text",
      value: "120 EUR (132 USD) for taxi to the airport",
    });

    const done = await send(client, message({ $case: "data", value: { action: "accept" } }, waiting.id));
    expect(done.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
    const receipt = done.artifacts.find((a) => a.name === "receipt");
    expect(receipt?.parts[0]?.content).toEqual({
      $case: "data",
      value: { filed: true, usd: 132, purpose: "taxi to the airport" },
    });
  });

  it("files nothing when the manager rejects", async () => {
    const waiting = await send(client, message({ $case: "text", value: "40 GBP team lunch" }));
    const rejected = await send(client, message({ $case: "data", value: { action: "reject" } }, waiting.id));
    // The run ends failed with the gate's reason (A2A's `rejected` is for a task the agent refuses outright).
    expect(rejected.status?.state).toBe(TaskState.TASK_STATE_FAILED);
    expect(JSON.stringify(rejected.metadata)).toContain("approval_rejected");
    expect(rejected.artifacts.some((a) => a.name === "receipt")).toBe(false);
  });

  it("fails the task with a clear code when the rates API does not know the currency", async () => {
    const failed = await send(client, message({ $case: "text", value: "500 XYZ mystery" }));
    expect(failed.status?.state).toBe(TaskState.TASK_STATE_FAILED);
    expect(JSON.stringify(failed.metadata)).toContain("unknown_currency");
  });
});
