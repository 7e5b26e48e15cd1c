import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { codeBlocks, readRepoFile, repoRoot, section } from "./markdown.js";

/**
 * The README's "Build your own agent": its ```ts agent and its ```yaml workflow, run as they are (the package
 * import pointed at src/index.ts, the workflows folder at a temporary one), then one message to its skill.
 */
describe("README Build your own agent", () => {
  const work = mkdtempSync(join(tmpdir(), "readme-agent-"));
  const moduleDir = join(work, "agent");
  const saved = { ...process.env };
  let host: { url: string; close(): Promise<void> } | undefined;

  afterAll(async () => {
    await host?.close();
    process.env = saved;
    rmSync(work, { recursive: true, force: true });
  });

  it("starts with startHost, serves the workflow's skill and runs the handler", async () => {
    const part = section(readRepoFile("README.md"), "Build your own agent");
    expect(part, 'README.md has no "Build your own agent" section').toBeDefined();
    const [agent] = codeBlocks(part!, "ts");
    const [workflow] = codeBlocks(part!, "yaml");
    expect(agent).toContain('from "openwop-a2a-host"');
    expect(agent).toContain("startHost(");
    expect(workflow).toBeDefined();

    const workflows = join(work, "workflows");
    mkdirSync(workflows);
    const id = /^id:\s*(\S+)/m.exec(workflow!)?.[1];
    expect(id).toBeDefined();
    writeFileSync(join(workflows, `${id}.yaml`), workflow!);
    mkdirSync(moduleDir, { recursive: true });
    const source = agent!
      .replace('from "openwop-a2a-host"', `from ${JSON.stringify(join(repoRoot, "src", "index.ts"))}`)
      .replace('"./workflows"', JSON.stringify(workflows))
      .replace(/console\.log\([^\n]*\);/g, "");
    writeFileSync(join(moduleDir, "agent.ts"), `${source}\nexport { host };\n`);

    // What the process environment gives the snippet: a free port, the in-memory store, quiet logs.
    Object.assign(process.env, {
      PORT: "0",
      STORE: "memory",
      LOG_LEVEL: "silent",
      DATA_DIR: join(work, "data"),
      PUSH_INSECURE_EPHEMERAL_KEYS: "true",
    });
    delete process.env["WORKFLOWS_DIR"];
    delete process.env["BUILTIN_WORKFLOWS"];
    delete process.env["MONGODB_URI"];
    const loaded = (await import(join(moduleDir, "agent.ts"))) as { host: { url: string; close(): Promise<void> } };
    host = loaded.host;

    const card = (await (await fetch(`${host.url}/.well-known/agent-card.json`)).json()) as {
      name: string;
      skills: Array<{ id: string }>;
    };
    expect(card.skills.map((s) => s.id)).toEqual([id]); // your workflows only: no built-in demo skills
    const reply = await fetch(`${host.url}/a2a/jsonrpc`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({
        jsonrpc: "2.0",
        id: 1,
        method: "message/send",
        params: {
          message: {
            kind: "message",
            messageId: "m1",
            role: "user",
            parts: [{ kind: "text", text: "a short note" }],
            metadata: { skillId: id },
          },
        },
      }),
    });
    const body = (await reply.json()) as {
      result?: { status: { state: string }; artifacts?: Array<{ parts: Array<{ text?: string }> }> };
      error?: unknown;
    };
    expect(body.error).toBeUndefined();
    expect(body.result?.status.state).toBe("input-required");
    expect(body.result?.artifacts?.[0]?.parts[0]?.text).toBe("Draft: a short note");
  });
});
