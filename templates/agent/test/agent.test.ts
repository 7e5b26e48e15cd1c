// The agent end to end, as a caller sees it: a stock A2A client (@a2a-js/sdk) sends a message, the task waits
// at the approval gate with the draft, and the reply approves or rejects it.
import { randomUUID } from "node:crypto";
import { TaskState, type Part, type Task } from "@a2a-js/sdk";
import { ClientFactory, type Client } from "@a2a-js/sdk/client";
import type { RunningHost } from "openwop-a2a-host";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startAgent } from "../src/agent.js";

type SendRequest = Parameters<Client["sendMessage"]>[0];
type Content = NonNullable<Part["content"]>;

function message(content: Content, taskId = ""): SendRequest {
  const part = { content, metadata: undefined, filename: "", mediaType: "" };
  return {
    tenant: "",
    message: { messageId: randomUUID(), contextId: "", taskId, role: 1, parts: [part], metadata: undefined, extensions: [], referenceTaskIds: [] },
    configuration: undefined,
    metadata: undefined,
  };
}

async function send(client: Client, request: SendRequest): Promise<Task> {
  const result = await client.sendMessage(request);
  if (!("status" in result)) throw new Error("expected a Task");
  return result;
}

describe("the agent", () => {
  let agent: RunningHost;
  let client: Client;

  beforeAll(async () => {
    // Any free port, tasks in memory, no log lines: the test's own agent, next to any you have running.
    agent = await startAgent({ port: 0, logLevel: "silent", env: { STORE: "memory" } });
    client = await new ClientFactory().createFromUrl(agent.url);
  });

  afterAll(async () => {
    await agent?.close();
  });

  it("shows its name and its skill on the agent card", async () => {
    const card = (await (await fetch(`${agent.url}/.well-known/agent-card.json`)).json()) as { name: string; skills: Array<{ id: string }> };
    expect(card.name).toBe("{{name}}");
    expect(card.skills.map((s) => s.id)).toEqual(["draft"]);
  });

  it("drafts, waits for approval, and completes when approved", async () => {
    const waiting = await send(client, message({ $case: "text", value: "a thank-you note to the team" }));
    expect(waiting.status?.state).toBe(TaskState.TASK_STATE_INPUT_REQUIRED);
    expect(waiting.artifacts[0]?.parts[0]?.content).toEqual({ $case: "text", value: "Draft: a thank-you note to the team" });

    const done = await send(client, message({ $case: "data", value: { action: "accept" } }, waiting.id));
    expect(done.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
  });

  it("ends failed with the gate's reason when rejected", async () => {
    const waiting = await send(client, message({ $case: "text", value: "a rude reply" }));
    const rejected = await send(client, message({ $case: "data", value: { action: "reject" } }, waiting.id));
    expect(rejected.status?.state).toBe(TaskState.TASK_STATE_FAILED);
    expect(JSON.stringify(rejected.metadata)).toContain("approval_rejected");
  });
});
