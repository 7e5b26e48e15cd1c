// startHost's start errors as an embedding program sees them: `ConfigError.problems` and
// `WorkflowLoadError.problems`, asserted in full, with the exact inputs that misled (issue 29): a misspelled
// variable in `env`, a typo'd handler, an unknown peer, a listed variable left unset, one not listed.
import { mkdtemp, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { ConfigError, WorkflowLoadError, type WorkflowDefinition } from "../../src/index.js";
import { createLogger } from "../../src/observability/logger.js";
import { launchHost } from "../../src/start-host.js";
import { builtinHandlers } from "../../src/workflows/builtin-handlers.js";

/** The environment of these starts: nothing of this machine's, an in-memory store, any free port. */
const BASE = { STORE: "memory", PORT: "0", HOST: "127.0.0.1", CONFORMANCE_SEAMS: "false" };

async function startError(...args: Parameters<typeof launchHost>): Promise<unknown> {
  return launchHost(...args).then(
    async (host) => {
      await host.close();
      return undefined;
    },
    (err: unknown) => err,
  );
}

const scoreLead = async () => ({ output: { score: 1 }, artifacts: [] });

describe("startHost({ env })", () => {
  it("a name the host does not read is an error, like an unknown option key, with the name it is close to", async () => {
    const error = await startError({ env: { PUSH_ENABLE: "false", WIDGETS: "on" }, logLevel: "silent" }, BASE);
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as ConfigError).problems).toEqual([
      "option env.PUSH_ENABLE: not a variable openwop-a2a-host reads (did you mean PUSH_ENABLED? see docs/configuration.md)",
      "option env.WIDGETS: not a variable openwop-a2a-host reads (see docs/configuration.md)",
    ]);
  });

  it("names listed in WORKFLOW_VARIABLES are the workflows' own and are accepted; a typo in the process environment is a warning naming both, and the host starts", async () => {
    const lines: Array<Record<string, unknown>> = [];
    const logger = createLogger("info", {
      write: (line: string) => void lines.push(JSON.parse(line) as Record<string, unknown>),
    });
    const host = await launchHost(
      { env: { WORKFLOW_VARIABLES: "SCORER_URL", SCORER_URL: "https://scorer.example" } },
      { ...BASE, PUSH_ENABLE: "false", PATH: "/usr/bin" },
      logger,
    );
    await host.close();
    const warnings = lines.filter((l) => l["event"] === "config.unknown_variable");
    expect(warnings).toEqual([
      expect.objectContaining({
        level: 40,
        variable: "PUSH_ENABLE",
        suggestion: "PUSH_ENABLED",
        msg: "PUSH_ENABLE is set but openwop-a2a-host does not read it: did you mean PUSH_ENABLED? (as set, it has no effect)",
      }),
    ]);
  });
});

describe("startHost({ workflows })", () => {
  it("every problem of every definition in one WorkflowLoadError, each with its fix, before anything listens", async () => {
    const lead = {
      id: "lead-intake",
      name: "Lead intake",
      description: "Scores a lead and tells billing.",
      nodes: [
        { kind: "task", id: "score", handler: "score-led" },
        { kind: "http", id: "fetch", url: "${SCORER_URL}/score" },
        { kind: "http", id: "crm", url: "${CRM_URL}/leads" },
        { kind: "a2a.invoke", id: "notify", peer: "biling" },
      ],
    } as unknown as WorkflowDefinition;
    const followUp = {
      id: "follow-up",
      name: "Follow-up",
      description: "Asks first.",
      nodes: [
        { kind: "task", id: "draft", handler: "scor-lead" },
        { kind: "approval", id: "ok" },
      ],
    } as unknown as WorkflowDefinition;
    const error = await startError(
      {
        workflows: [lead, followUp],
        handlers: { "score-lead": scoreLead },
        peers: { billing: { cardUrl: "https://billing.example/.well-known/agent-card.json" } },
        env: { WORKFLOW_VARIABLES: "SCORER_URL" },
        logLevel: "silent",
      },
      BASE,
    );
    expect(error).toBeInstanceOf(WorkflowLoadError);
    const known = `(register it as a handler: startHost's handlers or HANDLERS_MODULE; known: ${[...Object.keys(builtinHandlers), "score-lead"].sort().join(", ")})`;
    expect((error as WorkflowLoadError).problems).toEqual([
      `workflows[0]: workflow "lead-intake", node "score": no handler named "score-led" (did you mean "score-lead"?) ${known}`,
      `workflows[0]: workflow "lead-intake", node "fetch": url refers to \${SCORER_URL}, listed in WORKFLOW_VARIABLES but not set (set SCORER_URL in the environment; got "\${SCORER_URL}/score")`,
      `workflows[0]: workflow "lead-intake", node "crm": url refers to \${CRM_URL}, which is not a variable workflows may use (add CRM_URL to WORKFLOW_VARIABLES; known: A2A_PEER_CARD_URL, SCORER_URL)`,
      `workflows[0]: workflow "lead-intake", node "notify": peer "biling" is not configured (did you mean "billing"?) (configure it in A2A_PEERS, A2A_PEERS_FILE or startHost's peers; configured: billing)`,
      `workflows[1]: invalid workflow definition: nodes/1: must have required property 'title'`,
      `workflows[1]: workflow "follow-up", node "draft": no handler named "scor-lead" (did you mean "score-lead"?) ${known}`,
    ]);
  });
});

describe("startHost({ nodeKinds }) and HANDLERS_MODULE's nodeKinds", () => {
  /** A HANDLERS_MODULE exporting only node kinds: a `stamp` kind whose step completes its node at once. */
  async function moduleWithKinds(): Promise<string> {
    const dir = await mkdtemp(join(tmpdir(), "node-kinds-module-"));
    const path = join(dir, "kinds.mjs");
    const schema = {
      type: "object",
      additionalProperties: false,
      required: ["kind", "id"],
      properties: { kind: { const: "stamp" }, id: { type: "string" } },
    };
    await writeFile(
      path,
      `export const nodeKinds = [{ kind: "stamp", schema: ${JSON.stringify(schema)}, executor: () => ({ step(node, run) { run.complete({ output: { stamped: node.id } }); } }) }];\n`,
    );
    return path;
  }
  const stamped: WorkflowDefinition<{ kind: "stamp"; id: string }> = {
    id: "stamped",
    name: "Stamped",
    description: "Stamps.",
    nodes: [{ kind: "stamp", id: "s" }],
  };

  it("a module may bring kinds and no handlers; its kinds load and run a task to completion", async () => {
    const host = await launchHost(
      { workflows: [stamped], logLevel: "silent" },
      { ...BASE, HANDLERS_MODULE: await moduleWithKinds() },
    );
    try {
      const res = await fetch(`${host.url}/a2a/jsonrpc`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({
          jsonrpc: "2.0",
          id: 1,
          method: "message/send",
          params: {
            message: { kind: "message", messageId: "m1", role: "user", parts: [{ kind: "text", text: "go" }] },
          },
        }),
      });
      const task = ((await res.json()) as { result: { status: { state: string } } }).result;
      expect(task.status.state).toBe("completed");
    } finally {
      await host.close();
    }
  });

  it("a kind given by the module and by the option, and one named like a built-in kind, are start problems", async () => {
    const fromModule = await moduleWithKinds();
    const again = {
      kind: "stamp",
      schema: { type: "object", required: ["kind"], properties: { kind: { const: "stamp" } } },
      executor: () => ({ step() {} }),
    } as const;
    const builtin = {
      ...again,
      kind: "task",
      schema: { ...again.schema, properties: { kind: { const: "task" } } },
    } as const;
    const error = await startError(
      { nodeKinds: [again, builtin], workflows: [stamped], logLevel: "silent" },
      { ...BASE, HANDLERS_MODULE: fromModule },
    );
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as ConfigError).problems).toEqual([
      `nodeKinds (HANDLERS_MODULE's, then the option's)[1]: node kind "stamp" is given twice`,
      `nodeKinds (HANDLERS_MODULE's, then the option's)[2]: node kind "task" is built in; give yours another name`,
    ]);
  });
});
