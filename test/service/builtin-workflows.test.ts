// Which workflows a host loads: the built-in sets (BUILTIN_WORKFLOWS), the user's own (WORKFLOWS_DIR and
// definitions given as objects), the default skill, and the start errors (missing handlers, duplicate ids,
// nothing loaded).
import { randomUUID } from "node:crypto";
import { mkdtemp, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import type { CallContext } from "../../src/auth/call-context.js";
import { loadConfig } from "../../src/config/config.js";
import { createCore, type Core } from "../../src/core.js";
import { projectRoot } from "../../src/domain/project-root.js";
import { builtinHandlers } from "../../src/workflows/builtin-handlers.js";
import { readWorkflowDirectory, WorkflowLoadError } from "../../src/engine/workflow-catalog.js";
import type { WorkflowDefinition } from "../../src/workflows/workflow-types.js";
import { createLogger } from "../../src/observability/logger.js";
import { createTelemetry, type Telemetry } from "../../src/observability/telemetry.js";
import { hostInterfaces } from "../../src/transport/interface-urls.js";
import { MemoryTaskStore } from "../../src/store/memory-task-store.js";

/** What each built-in set holds, read off its folder (the demos grow; the fixtures are OpenWOP's). */
const setIds = async (set: string) =>
  (await readWorkflowDirectory(join(projectRoot, "workflows", set), builtinHandlers)).map((w) => w.id).sort();
const DEMOS = await setIds("demo");
const FIXTURES = await setIds("conformance");

const ctx: CallContext = { principal: { tenant: "default", id: "alice", scopes: "*" } };

const flight: WorkflowDefinition = {
  id: "book-flight",
  name: "Book a flight",
  description: "Books a flight.",
  nodes: [{ kind: "task", id: "book", handler: "echo" }],
} as WorkflowDefinition;

async function userDir(files: Record<string, string>): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), "user-workflows-"));
  for (const [name, body] of Object.entries(files)) await writeFile(join(dir, name), body);
  return dir;
}

const HOTEL = `
id: book-hotel
name: Book a hotel
description: Books a hotel.
nodes:
  - { kind: task, id: book, handler: echo }
`;

let cores: Array<{ core: Core; telemetry: Telemetry }> = [];
afterEach(async () => {
  for (const { core, telemetry } of cores) {
    await core.stop();
    await telemetry.shutdown();
  }
  cores = [];
});

/** The product's defaults: unlike the test helpers, no BUILTIN_WORKFLOWS unless a test sets it. */
async function core(
  env: Record<string, string>,
  workflows?: WorkflowDefinition[],
  handlers?: Record<string, never>,
): Promise<Core> {
  const config = loadConfig({ LOG_LEVEL: "silent", PUSH_ENABLED: "false", ...env });
  const telemetry = await createTelemetry();
  const created = await createCore({
    config,
    logger: createLogger("silent"),
    telemetry,
    interfaces: hostInterfaces(config.publicUrl),
    store: new MemoryTaskStore(),
    ...(workflows ? { workflows } : {}),
    ...(handlers ? { handlers } : {}),
  });
  cores.push({ core: created, telemetry });
  return created;
}

const skills = (c: Core) => c.card.skills.map((s) => s.id).sort();

describe("BUILTIN_WORKFLOWS", () => {
  it("by default the demos only: no conformance fixture on the card or in the catalog; echo is the default skill", async () => {
    expect(DEMOS).toContain("echo");
    expect(FIXTURES).toEqual([
      "conformance-a2a-task-roundtrip",
      "conformance-approval",
      "conformance-cancellable",
      "conformance-delay",
      "conformance-idempotent",
      "conformance-noop",
    ]);
    const c = await core({});
    expect(skills(c)).toEqual(DEMOS);
    for (const id of FIXTURES) expect(c.catalog.get(id)).toBeUndefined();
    expect(c.catalog.defaultWorkflowId).toBe("echo");
  });

  it("conformance alone, demo and conformance together", async () => {
    expect(skills(await core({ BUILTIN_WORKFLOWS: "conformance", DEFAULT_SKILL: "conformance-noop" }))).toEqual(
      FIXTURES,
    );
    expect(skills(await core({ BUILTIN_WORKFLOWS: "demo,conformance" }))).toEqual([...DEMOS, ...FIXTURES].sort());
  });

  it("with WORKFLOWS_DIR and no BUILTIN_WORKFLOWS: only the user's skills; the first one is the default skill", async () => {
    const c = await core({ WORKFLOWS_DIR: await userDir({ "b.yaml": HOTEL }) });
    expect(skills(c)).toEqual(["book-hotel"]);
    expect(c.catalog.defaultWorkflowId).toBe("book-hotel");
    // A message without a skillId runs the default skill.
    const task = await c.service.sendMessage(
      { message: { messageId: randomUUID(), role: "user", parts: [{ kind: "text", text: "Lisbon" }] }, blocking: true },
      ctx,
    );
    expect(task).toMatchObject({ status: { state: "completed" }, metadata: { openwop: expect.anything() } });
    expect((await c.reads.get((task as { id: string }).id, "default")).workflowId).toBe("book-hotel");
  });

  it("with definitions given as objects: only those skills, validated like files, in their given order", async () => {
    const second = { ...flight, id: "book-car", name: "Book a car" } as WorkflowDefinition;
    const c = await core({}, [second, flight]);
    expect(c.card.skills.map((s) => s.id)).toEqual(["book-car", "book-flight"]);
    expect(c.catalog.defaultWorkflowId).toBe("book-car");
    await expect(
      core({}, [{ id: "Bad Id!", name: "x", description: "x", nodes: [] } as unknown as WorkflowDefinition]),
    ).rejects.toThrow(/workflows\[0\]/);
  });

  it("BUILTIN_WORKFLOWS=demo next to the user's: both; echo stays the default skill; a directory and objects together", async () => {
    const c = await core({ BUILTIN_WORKFLOWS: "demo", WORKFLOWS_DIR: await userDir({ "b.yaml": HOTEL }) }, [flight]);
    expect(skills(c)).toEqual([...DEMOS, "book-flight", "book-hotel"].sort());
    expect(c.catalog.defaultWorkflowId).toBe("echo");
  });

  it("nothing loaded at all is a clear start error", async () => {
    await expect(core({ BUILTIN_WORKFLOWS: "none" })).rejects.toThrow(/no workflows are loaded/);
  });
});

describe("DEFAULT_SKILL", () => {
  it("set but not loaded stays a start error (a demo skill when only the user's are loaded, too)", async () => {
    await expect(core({ DEFAULT_SKILL: "nope" })).rejects.toThrow(/the default skill "nope" is not a loaded workflow/);
    await expect(core({ DEFAULT_SKILL: "echo", WORKFLOWS_DIR: await userDir({ "b.yaml": HOTEL }) })).rejects.toThrow(
      /the default skill "echo" is not a loaded workflow \(loaded: book-hotel\)/,
    );
  });
});

describe("start errors name every problem", () => {
  it("every task node naming a handler nothing provides, with its workflow and node, in one error", async () => {
    const dir = await userDir({
      "a.yaml": `
id: needs-two
name: Needs two
description: Two unknown handlers.
nodes:
  - { kind: task, id: first, handler: charge-card }
  - { kind: task, id: second, handler: send-invoice }
`,
      "b.yaml": HOTEL,
    });
    const given = {
      id: "needs-one",
      name: "Needs one",
      description: "One unknown handler.",
      nodes: [{ kind: "task", id: "only", handler: "book-seat" }],
    } as WorkflowDefinition;
    const error = await core({ WORKFLOWS_DIR: dir }, [given]).then(
      () => undefined,
      (err: unknown) => err as Error,
    );
    expect(error).toBeInstanceOf(WorkflowLoadError);
    const known = `(register it as a handler: startHost's handlers or HANDLERS_MODULE; known: ${Object.keys(builtinHandlers).sort().join(", ")})`;
    expect((error as WorkflowLoadError).problems).toEqual([
      `${join(dir, "a.yaml")}: workflow "needs-two", node "first": no handler named "charge-card" ${known}`,
      `${join(dir, "a.yaml")}: workflow "needs-two", node "second": no handler named "send-invoice" ${known}`,
      `workflows[0]: workflow "needs-one", node "only": no handler named "book-seat" ${known}`,
    ]);
    expect(error?.message).toMatch(/^3 workflow problems:\n- /);
  });

  it("a schema error does not hide the handler check, and a typo'd handler gets a suggestion (every file, one run)", async () => {
    const dir = await userDir({
      "a.yaml": `
id: broken
name: Broken
description: A schema error and a missing handler.
nodes:
  - { kind: task, id: first, handler: ecoh }
  - { kind: approval, id: gate }
`,
      "b.yaml": `id: other\nname: Other\ndescription: Another typo.\nnodes:\n  - { kind: task, id: only, handler: nop }\n`,
    });
    const error = await core({ WORKFLOWS_DIR: dir }).then(
      () => undefined,
      (err: unknown) => err as WorkflowLoadError,
    );
    const known = `(register it as a handler: startHost's handlers or HANDLERS_MODULE; known: ${Object.keys(builtinHandlers).sort().join(", ")})`;
    expect(error?.problems).toEqual([
      `${join(dir, "a.yaml")}: invalid workflow definition: nodes/1: must have required property 'title'`,
      `${join(dir, "a.yaml")}: workflow "broken", node "first": no handler named "ecoh" (did you mean "echo"?) ${known}`,
      `${join(dir, "b.yaml")}: workflow "other", node "only": no handler named "nop" (did you mean "noop"?) ${known}`,
    ]);
  });

  it("a workflow id defined twice across sources names both", async () => {
    const dir = await userDir({
      "flight.yaml": `id: book-flight\nname: Book\ndescription: Books.\nnodes:\n  - { kind: task, id: book, handler: echo }\n`,
    });
    await expect(core({ WORKFLOWS_DIR: dir }, [flight])).rejects.toThrow(
      `workflow id "book-flight" is defined twice: in ${join(dir, "flight.yaml")} and in workflows[0]`,
    );
    await expect(
      core({ BUILTIN_WORKFLOWS: "demo" }, [{ ...flight, id: "echo" } as WorkflowDefinition]),
    ).rejects.toThrow(/workflow id "echo" is defined twice: in .*workflows\/demo\/echo\.yaml and in workflows\[0\]/);
  });
});
