// Issue 12, items 20-22, on every binding and both versions: a stateless skill answers message/send with a
// Message and creates no task; built-in skills answer with file (bytes and URI) and data parts and stream
// an artifact in chunks (append / lastChunk), seen in stream events and in tasks/get; a switch node routes
// one skill several ways on the incoming message.
import { randomUUID } from "node:crypto";
import { fromJson, toJson } from "@bufbuild/protobuf";
import { ValueSchema } from "@bufbuild/protobuf/wkt";
import { createClient, type Client } from "@connectrpc/connect";
import { createConnectTransport, createGrpcTransport } from "@connectrpc/connect-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import * as v03 from "../../src/gen/a2a/v1/a2a_pb.js";
import * as v10 from "../../src/gen/lf/a2a/v1/a2a_pb.js";
import { readSse } from "../support/sse.js";
import { startTestApp, type TestApp } from "../support/start-server.js";

type Obj = Record<string, any>;

/** Every binding's answers, normalized to one shape so each check reads the same on all of them. */
type NPart =
  | { kind: "text"; text: string }
  | { kind: "file"; bytes?: string; uri?: string; mimeType?: string; name?: string }
  | { kind: "data"; data: Obj };
interface NArtifact {
  id: string;
  parts: NPart[];
}
interface NTask {
  id: string;
  state: string;
  artifacts: NArtifact[];
}
type NEvent =
  | { kind: "task"; task: NTask }
  | { kind: "message"; role: string; parts: NPart[] }
  | { kind: "status"; state: string }
  | { kind: "artifact"; artifact: NArtifact; append: boolean; lastChunk: boolean };

interface Binding {
  name: string;
  send(skillId: string, text: string, extra?: { data?: Obj }): Promise<NEvent>;
  stream(skillId: string, text: string): Promise<NEvent[]>;
  get(id: string): Promise<NTask>;
}

// ---- normalizers: the 0.3 JSON-RPC shape, 0.3 ProtoJSON (a2a.v1) and 1.0 ProtoJSON (lf.a2a.v1)
const state03 = (s: string) =>
  s
    .replace(/^TASK_STATE_/, "")
    .toLowerCase()
    .replace("cancelled", "canceled")
    .replace(/_/g, "-");

function part03json(p: Obj): NPart {
  if (p["kind"] === "text") return { kind: "text", text: p["text"] };
  if (p["kind"] === "data") return { kind: "data", data: p["data"] };
  return { kind: "file", ...p["file"] };
}
function partProto03(p: Obj): NPart {
  if ("text" in p) return { kind: "text", text: p["text"] };
  if ("data" in p) return { kind: "data", data: p["data"]["data"] };
  const f = p["file"];
  return {
    kind: "file",
    ...(f["fileWithBytes"] ? { bytes: f["fileWithBytes"] } : {}),
    ...(f["fileWithUri"] ? { uri: f["fileWithUri"] } : {}),
    mimeType: f["mimeType"],
    name: f["name"],
  };
}
function partProto10(p: Obj): NPart {
  if ("text" in p) return { kind: "text", text: p["text"] };
  if ("data" in p) return { kind: "data", data: p["data"] };
  return {
    kind: "file",
    ...(p["raw"] ? { bytes: p["raw"] } : {}),
    ...(p["url"] ? { uri: p["url"] } : {}),
    mimeType: p["mediaType"],
    name: p["filename"],
  };
}

const artifactOf = (a: Obj, part: (p: Obj) => NPart): NArtifact => ({
  id: a["artifactId"],
  parts: (a["parts"] ?? []).map(part),
});
const taskOf = (t: Obj, part: (p: Obj) => NPart): NTask => ({
  id: t["id"],
  state: state03(t["status"]["state"]),
  artifacts: (t["artifacts"] ?? []).map((a: Obj) => artifactOf(a, part)),
});

function event03json(r: Obj): NEvent {
  switch (r["kind"]) {
    case "task":
      return { kind: "task", task: taskOf(r, part03json) };
    case "message":
      return { kind: "message", role: r["role"], parts: r["parts"].map(part03json) };
    case "status-update":
      return { kind: "status", state: r["status"]["state"] };
    default:
      return {
        kind: "artifact",
        artifact: artifactOf(r["artifact"], part03json),
        append: r["append"] ?? false,
        lastChunk: r["lastChunk"] ?? false,
      };
  }
}

/** A ProtoJSON SendMessageResponse or StreamResponse (both versions name the cases alike in JSON). */
function eventProto(r: Obj, version: "0.3" | "1.0"): NEvent {
  const part = version === "0.3" ? partProto03 : partProto10;
  if (r["task"]) return { kind: "task", task: taskOf(r["task"], part) };
  if (r["message"]) {
    const m = r["message"];
    return {
      kind: "message",
      role: m["role"] === "ROLE_AGENT" ? "agent" : m["role"],
      parts: (m[version === "0.3" ? "content" : "parts"] ?? []).map(part),
    };
  }
  if (r["statusUpdate"]) return { kind: "status", state: state03(r["statusUpdate"]["status"]["state"]) };
  const u = r["artifactUpdate"];
  return {
    kind: "artifact",
    artifact: artifactOf(u["artifact"], part),
    append: u["append"] ?? false,
    lastChunk: u["lastChunk"] ?? false,
  };
}

describe("workflow answers on every binding and both A2A versions (issue 12 items 20-22)", () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp({ LOG_LEVEL: process.env["DEBUG_LOG"] ?? "silent" });
  });
  afterAll(async () => {
    await t?.close();
  });

  async function rpc(method: string, params: unknown, headers: Record<string, string> = {}): Promise<Obj> {
    const res = await fetch(`${t.baseUrl}/a2a/jsonrpc`, {
      method: "POST",
      headers: { "content-type": "application/json", ...headers },
      body: JSON.stringify({ jsonrpc: "2.0", id: randomUUID(), method, params }),
    });
    const body = (await res.json()) as Obj;
    if (body["error"]) throw new Error(`${method}: ${JSON.stringify(body["error"])}`);
    return body["result"];
  }
  const rpcStream = async (method: string, params: unknown, headers: Record<string, string> = {}) =>
    (
      await readSse(
        await fetch(`${t.baseUrl}/a2a/jsonrpc`, {
          method: "POST",
          headers: { "content-type": "application/json", ...headers },
          body: JSON.stringify({ jsonrpc: "2.0", id: 1, method, params }),
        }),
      )
    ).map((f) => (f.data as Obj)["result"] as Obj);
  const post = (path: string, body: unknown, headers: Record<string, string> = {}) =>
    fetch(`${t.baseUrl}${path}`, {
      method: "POST",
      headers: { "content-type": "application/json", ...headers },
      body: JSON.stringify(body),
    });
  const V10 = { "A2A-Version": "1.0" };

  const msg03json = (skillId: string, text: string, extra: { data?: Obj } = {}) => ({
    kind: "message",
    messageId: randomUUID(),
    role: "user",
    parts: [{ kind: "text", text }, ...(extra.data ? [{ kind: "data", data: extra.data }] : [])],
    metadata: { skillId },
  });
  const msgProto03 = (skillId: string, text: string, extra: { data?: Obj } = {}) => ({
    messageId: randomUUID(),
    role: "ROLE_USER",
    content: [{ text }, ...(extra.data ? [{ data: { data: extra.data } }] : [])],
    metadata: { skillId },
  });
  const msgProto10 = (skillId: string, text: string, extra: { data?: Obj } = {}) => ({
    messageId: randomUUID(),
    role: "ROLE_USER",
    parts: [{ text }, ...(extra.data ? [{ data: extra.data }] : [])],
    metadata: { skillId },
  });

  function rpcClients(kind: "gRPC" | "Connect") {
    const transport = () =>
      kind === "gRPC"
        ? createGrpcTransport({ baseUrl: t.baseUrl })
        : createConnectTransport({ baseUrl: t.baseUrl, httpVersion: "1.1" });
    // Made on first use: the server's port is known only once beforeAll ran.
    let clients: { c03: Client<typeof v03.A2AService>; c10: Client<typeof v10.A2AService> } | undefined;
    const made = () =>
      (clients ??= { c03: createClient(v03.A2AService, transport()), c10: createClient(v10.A2AService, transport()) });
    const c03 = new Proxy({} as Client<typeof v03.A2AService>, {
      get: (_t, key) => made().c03[key as keyof Client<typeof v03.A2AService>],
    });
    const c10 = new Proxy({} as Client<typeof v10.A2AService>, {
      get: (_t, key) => made().c10[key as keyof Client<typeof v10.A2AService>],
    });
    const b03: Binding = {
      name: `${kind} 0.3`,
      send: async (s, text, extra) =>
        eventProto(
          toJson(
            v03.SendMessageResponseSchema,
            await c03.sendMessage({ request: toRequest03(s, text, extra), configuration: { blocking: true } }),
          ) as Obj,
          "0.3",
        ),
      stream: async (s, text) => {
        const out: NEvent[] = [];
        for await (const e of c03.sendStreamingMessage({ request: toRequest03(s, text) }))
          out.push(eventProto(toJson(v03.StreamResponseSchema, e) as Obj, "0.3"));
        return out;
      },
      get: async (id) => taskOf(toJson(v03.TaskSchema, await c03.getTask({ name: `tasks/${id}` })) as Obj, partProto03),
    };
    const b10: Binding = {
      name: `${kind} 1.0`,
      send: async (s, text, extra) =>
        eventProto(
          toJson(v10.SendMessageResponseSchema, await c10.sendMessage({ message: toRequest10(s, text, extra) })) as Obj,
          "1.0",
        ),
      stream: async (s, text) => {
        const out: NEvent[] = [];
        for await (const e of c10.sendStreamingMessage({ message: toRequest10(s, text) }))
          out.push(eventProto(toJson(v10.StreamResponseSchema, e) as Obj, "1.0"));
        return out;
      },
      get: async (id) => taskOf(toJson(v10.TaskSchema, await c10.getTask({ id })) as Obj, partProto10),
    };
    return [b03, b10];
  }
  const toRequest03 = (skillId: string, text: string, extra: { data?: Obj } = {}) => ({
    messageId: randomUUID(),
    role: v03.Role.USER,
    content: [
      { part: { case: "text" as const, value: text } },
      ...(extra.data ? [{ part: { case: "data" as const, value: { data: extra.data } } }] : []),
    ],
    metadata: { skillId },
  });
  const toRequest10 = (skillId: string, text: string, extra: { data?: Obj } = {}) => ({
    messageId: randomUUID(),
    role: v10.Role.USER,
    parts: [
      { content: { case: "text" as const, value: text } },
      ...(extra.data ? [{ content: { case: "data" as const, value: fromJson(ValueSchema, extra.data) } }] : []),
    ],
    metadata: { skillId },
  });

  const bindings: Binding[] = [
    {
      name: "JSON-RPC 0.3",
      send: async (s, text, extra) =>
        event03json(
          await rpc("message/send", { message: msg03json(s, text, extra), configuration: { blocking: true } }),
        ),
      stream: async (s, text) => (await rpcStream("message/stream", { message: msg03json(s, text) })).map(event03json),
      get: async (id) => taskOf(await rpc("tasks/get", { id }), part03json),
    },
    {
      name: "JSON-RPC 1.0",
      send: async (s, text, extra) =>
        eventProto(await rpc("SendMessage", { message: msgProto10(s, text, extra) }, V10), "1.0"),
      stream: async (s, text) =>
        (await rpcStream("SendStreamingMessage", { message: msgProto10(s, text) }, V10)).map((r) =>
          eventProto(r, "1.0"),
        ),
      get: async (id) => taskOf(await rpc("GetTask", { id }, V10), partProto10),
    },
    {
      name: "HTTP+JSON 0.3",
      send: async (s, text, extra) =>
        eventProto(
          (await (
            await post("/v1/message:send", { message: msgProto03(s, text, extra), configuration: { blocking: true } })
          ).json()) as Obj,
          "0.3",
        ),
      stream: async (s, text) =>
        (await readSse(await post("/v1/message:stream", { message: msgProto03(s, text) }))).map((f) =>
          eventProto(f.data as Obj, "0.3"),
        ),
      get: async (id) => taskOf((await (await fetch(`${t.baseUrl}/v1/tasks/${id}`)).json()) as Obj, partProto03),
    },
    {
      name: "HTTP+JSON 1.0",
      send: async (s, text, extra) =>
        eventProto(
          (await (await post("/message:send", { message: msgProto10(s, text, extra) }, V10)).json()) as Obj,
          "1.0",
        ),
      stream: async (s, text) =>
        (await readSse(await post("/message:stream", { message: msgProto10(s, text) }, V10))).map((f) =>
          eventProto(f.data as Obj, "1.0"),
        ),
      get: async (id) =>
        taskOf((await (await fetch(`${t.baseUrl}/tasks/${id}`, { headers: V10 })).json()) as Obj, partProto10),
    },
    ...rpcClients("gRPC"),
    ...rpcClients("Connect"),
  ];

  const taskCount = async () => (await rpc("ListTasks", { pageSize: 1 }, V10))["totalSize"] as number;
  const textOf = (parts: NPart[]) => parts.map((p) => (p.kind === "text" ? p.text : "")).join("");

  describe.each(bindings.map((b) => [b.name, b] as const))("%s", (_name, b) => {
    it("item 21: a stateless skill answers message/send with a Message, streams that one Message, and creates no task", async () => {
      const before = await taskCount();
      const answer = await b.send("quick-answer", "hello stateless");
      expect(answer).toEqual({ kind: "message", role: "agent", parts: [{ kind: "text", text: "hello stateless" }] });
      // Its switch routes too: a data part {format: report} answers the report's parts in the one message.
      const report = await b.send("quick-answer", "two words", { data: { format: "report" } });
      expect(report.kind).toBe("message");
      expect(report.kind === "message" && report.parts.map((p) => p.kind)).toEqual(["file", "file", "data"]);
      const streamed = await b.stream("quick-answer", "streamed once");
      expect(streamed).toEqual([{ kind: "message", role: "agent", parts: [{ kind: "text", text: "streamed once" }] }]);
      expect(await taskCount()).toBe(before);
    });

    it("item 22: artifacts with file parts (bytes and URI) and data parts, in the send answer and in tasks/get", async () => {
      const answer = await b.send("files-and-data", "alpha beta gamma");
      if (answer.kind !== "task") throw new Error(`expected a task, got ${answer.kind}`);
      expect(answer.task.state).toBe("completed");
      for (const task of [answer.task, await b.get(answer.task.id)]) {
        expect(task.artifacts.map((a) => a.id)).toEqual(["report.csv", "report-note", "summary"]);
        const [csv, note, summary] = task.artifacts.map((a) => a.parts[0]!);
        expect(csv).toEqual({ kind: "file", bytes: expect.any(String), mimeType: "text/csv", name: "report.csv" });
        expect(Buffer.from((csv as { bytes: string }).bytes, "base64").toString()).toBe(
          "word,length\nalpha,5\nbeta,4\ngamma,5\n",
        );
        expect(note).toMatchObject({ kind: "file", mimeType: "text/plain", name: "note.txt" });
        expect((note as { uri: string }).uri).toBe(
          `data:text/plain;base64,${Buffer.from('Report on "alpha beta gamma": 3 words.').toString("base64")}`,
        );
        expect(summary).toEqual({
          kind: "data",
          data: { subject: "alpha beta gamma", words: 3, characters: 16, longestWord: "alpha" },
        });
      }
    });

    it("item 22: a streamed artifact arrives in chunks (append after the first, lastChunk on the last); tasks/get holds it whole", async () => {
      const text = "abcdefghijklmnop";
      const events = await b.stream("streaming-artifact", text);
      expect(events[0]!.kind).toBe("task");
      const chunks = events.filter((e): e is Extract<NEvent, { kind: "artifact" }> => e.kind === "artifact");
      expect(chunks.map((c) => [textOf(c.artifact.parts), c.append, c.lastChunk])).toEqual([
        ["abcd", false, false],
        ["efgh", true, false],
        ["ijkl", true, false],
        ["mnop", true, true],
      ]);
      expect(new Set(chunks.map((c) => c.artifact.id))).toEqual(new Set(["stream.stream"]));
      expect(events.at(-1)).toEqual({ kind: "status", state: "completed" });
      const id = (events[0] as Extract<NEvent, { kind: "task" }>).task.id;
      const stored = await b.get(id);
      expect(stored.artifacts).toEqual([
        {
          id: "stream.stream",
          parts: [
            { kind: "text", text: "abcd" },
            { kind: "text", text: "efgh" },
            { kind: "text", text: "ijkl" },
            { kind: "text", text: "mnop" },
          ],
        },
      ]);
    });
  });

  describe("item 20: one skill, several behaviours (the built-in router's switch)", () => {
    it.each([bindings[0]!, bindings[1]!].map((b) => [b.name, b] as const))(
      "%s: messageId prefix, text match, data value, metadata value and the default",
      async (_name, b) => {
        // text match → the approval branch (pauses at input-required)
        const approval = await b.send("router", "please approve the budget");
        expect(approval.kind === "task" && approval.task.state).toBe("input-required");
        // data value → the report branch, which ends the run there ($end)
        const report = await b.send("router", "a b", { data: { format: "report" } });
        expect(report.kind === "task" && report.task.artifacts.map((a) => a.id)).toEqual([
          "report.csv",
          "report-note",
          "summary",
        ]);
        expect(report.kind === "task" && report.task.state).toBe("completed");
        // default → echo
        const echo = await b.send("router", "just echo me");
        expect(echo.kind === "task" && echo.task.artifacts.map((a) => [a.id, textOf(a.parts)])).toEqual([
          ["echo.0", "just echo me"],
        ]);
      },
    );

    it("JSON-RPC 0.3: a messageId prefix and a metadata value route too", async () => {
      const urgent = await rpc("message/send", {
        message: { ...msg03json("router", "nothing special"), messageId: `urgent-${randomUUID()}` },
      });
      expect(urgent["status"]["state"]).toBe("input-required");
      const streamed = await rpc("message/send", {
        message: { ...msg03json("router", "chunked"), metadata: { skillId: "router", mode: "stream" } },
      });
      expect(streamed["status"]["state"]).toBe("completed");
      expect(streamed["artifacts"].map((a: Obj) => a["artifactId"])).toEqual(["stream.stream"]);
      // The route taken is the switch node's output in the run (OpenWOP events).
      const events = (await readSse(await fetch(`${t.baseUrl}/v1/runs/${streamed["id"]}/events`))).map(
        (f) => f.data as Obj,
      );
      const completed = events.filter((e) => e["type"] === "node.completed").map((e) => e["nodeId"]);
      expect(completed).toEqual(["route", "stream"]);
    });

    it("a stateless skill with an inline push config is refused (no task to notify about), and nothing is created", async () => {
      const before = await taskCount();
      const res = await fetch(`${t.baseUrl}/a2a/jsonrpc`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({
          jsonrpc: "2.0",
          id: 1,
          method: "message/send",
          params: {
            message: msg03json("quick-answer", "x"),
            configuration: { pushNotificationConfig: { url: "https://push.example.com/hook" } },
          },
        }),
      });
      const body = (await res.json()) as Obj;
      expect(body["error"]?.["code"]).toBe(-32602);
      expect(body["error"]?.["message"]).toMatch(/answers with a Message/);
      expect(await taskCount()).toBe(before);
    });
  });
});
