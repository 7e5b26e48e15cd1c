import { create, toJson } from "@bufbuild/protobuf";
import { BinaryReader } from "@bufbuild/protobuf/wire";
import { describe, expect, it } from "vitest";
import { negotiateA2AVersion, requestedA2AVersion } from "../../src/domain/a2a-version.js";
import { decodePageToken, encodePageToken, pageSizeOf } from "../../src/a2a/task-list.js";
import { readV10, writeTaskPageV10, writeV10 } from "../../src/a2a/v10/v10-json.js";
import {
  checkTenant,
  decodeMessage,
  decodeSendRequest,
  encodePart,
  encodeStreamEvent,
  encodeTask,
  taskStateNameV10,
} from "../../src/a2a/v10/v10-proto-codec.js";
import type { Part, Task } from "../../src/domain/a2a-types.js";
import { DomainError } from "../../src/domain/errors.js";
import { canonicalJson } from "../../src/domain/canonical-json.js";
import { classifyReply, creationSeed } from "../../src/engine/message-idempotency.js";
import * as pb from "../../src/gen/lf/a2a/v1/a2a_pb.js";
import { encodeErrorInfo, errorInfoOf as errorInfoOfWire } from "../../src/a2a/v10/v10-errors.js";
import { httpJsonError, jsonRpcErrorBody, type JsonRpcId } from "../../src/transport/errors/a2a-error-exits.js";
import { wireErrorOf } from "../../src/transport/errors/wire-error.js";

// The 1.0 shapes, reached through the binding error exits (which look the codes up in the one table).
const jsonRpcErrorV10 = (id: JsonRpcId, err: unknown) => jsonRpcErrorBody("1.0", id, err);
const restErrorV10 = (err: unknown) =>
  httpJsonError("1.0", err) as { status: number; body: { error: Record<string, unknown> } };
const errorInfoOf = (err: unknown) => errorInfoOfWire(wireErrorOf(err, "1.0"));

const principal = { tenant: "acme", id: "apikey:alice", scopes: "*" as const };

function codeOf(fn: () => unknown): string {
  try {
    fn();
  } catch (err) {
    if (err instanceof DomainError) return err.code;
    throw err;
  }
  return "ok";
}

describe("A2A-Version negotiation", () => {
  it("absent or empty is 0.3; 0.3 and 1.0 (patch tolerated) are served; anything else is refused", () => {
    expect(negotiateA2AVersion(undefined)).toBe("0.3");
    expect(negotiateA2AVersion("  ")).toBe("0.3");
    expect(negotiateA2AVersion("0.3")).toBe("0.3");
    expect(negotiateA2AVersion("1.0")).toBe("1.0");
    expect(negotiateA2AVersion("1.0.1")).toBe("1.0");
    for (const bad of ["9.9", "1", "2.0", "0.2", "v1.0", "1.0-beta", "latest"])
      expect(
        codeOf(() => negotiateA2AVersion(bad)),
        bad,
      ).toBe("version-not-supported");
  });

  it("reads the header first, then the query parameter (any case)", () => {
    expect(requestedA2AVersion({ "a2a-version": "1.0" }, "/x?A2A-Version=0.3")).toBe("1.0");
    expect(requestedA2AVersion({}, "/x?a2a-version=1.0")).toBe("1.0");
    expect(requestedA2AVersion({}, "/x")).toBeUndefined();
  });
});

describe("the 1.0 codec", () => {
  it("spells states the 1.0 way (CANCELED with one L)", () => {
    expect(taskStateNameV10("canceled")).toBe("TASK_STATE_CANCELED");
    expect(taskStateNameV10("input-required")).toBe("TASK_STATE_INPUT_REQUIRED");
  });

  it("maps every part kind both ways (url/raw/data, mediaType and filename)", () => {
    const parts: Part[] = [
      { kind: "text", text: "hi", metadata: { a: 1 } },
      { kind: "file", file: { uri: "https://x/y.pdf", mimeType: "application/pdf", name: "y.pdf" } },
      { kind: "file", file: { bytes: Buffer.from("raw").toString("base64"), mimeType: "text/plain" } },
      { kind: "data", data: { action: "accept", n: [1, 2] } },
    ];
    const wire = parts.map(encodePart);
    expect(wire.map((p) => toJson(pb.PartSchema, p))).toEqual([
      { text: "hi", metadata: { a: 1 } },
      { url: "https://x/y.pdf", mediaType: "application/pdf", filename: "y.pdf" },
      { raw: Buffer.from("raw").toString("base64"), mediaType: "text/plain" },
      { data: { action: "accept", n: [1, 2] } },
    ]);
    const back = decodeMessage(create(pb.MessageSchema, { messageId: "m", role: pb.Role.USER, parts: wire }));
    expect(back.parts).toEqual(parts);
  });

  it("refuses what the proto allows but A2A does not", () => {
    expect(
      codeOf(() =>
        decodeMessage(
          create(pb.MessageSchema, {
            messageId: "",
            role: pb.Role.USER,
            parts: [encodePart({ kind: "text", text: "x" })],
          }),
        ),
      ),
    ).toBe("invalid-params");
    expect(
      codeOf(() =>
        decodeMessage(
          create(pb.MessageSchema, {
            messageId: "m",
            role: pb.Role.UNSPECIFIED,
            parts: [encodePart({ kind: "text", text: "x" })],
          }),
        ),
      ),
    ).toBe("invalid-params");
    expect(
      codeOf(() =>
        decodeMessage(
          create(pb.MessageSchema, { messageId: "m", role: pb.Role.USER, parts: [create(pb.PartSchema, {})] }),
        ),
      ),
    ).toBe("invalid-params");
    const notObject = readV10(
      pb.MessageSchema,
      { messageId: "m", role: "ROLE_USER", parts: [{ data: "a string" }] },
      "message",
    );
    expect(codeOf(() => decodeMessage(notObject))).toBe("invalid-params");
  });

  it("returnImmediately is the inverse of blocking; historyLength keeps 1.0 meaning (unset = all, 0 = none)", () => {
    const message = { messageId: "m", role: "ROLE_USER", parts: [{ text: "x" }] };
    expect(decodeSendRequest(readV10(pb.SendMessageRequestSchema, { message }, "p"))).toMatchObject({
      blocking: true,
      history: undefined,
    });
    expect(
      decodeSendRequest(
        readV10(
          pb.SendMessageRequestSchema,
          { message, configuration: { returnImmediately: true, historyLength: 0 } },
          "p",
        ),
      ),
    ).toMatchObject({ blocking: false, history: 0 });
    const push = decodeSendRequest(
      readV10(
        pb.SendMessageRequestSchema,
        {
          message,
          configuration: {
            taskPushNotificationConfig: { url: "https://h/x", authentication: { scheme: "Bearer", credentials: "c" } },
          },
        },
        "p",
      ),
    );
    expect(push.pushNotificationConfig).toEqual({
      url: "https://h/x",
      authentication: { schemes: ["Bearer"], credentials: "c" },
      protocolVersion: "1.0",
    });
  });

  it("ProtoJSON reading ignores unknown fields but refuses bogus enums and wrong types; writing always has repeated fields", () => {
    expect(codeOf(() => readV10(pb.ListTasksRequestSchema, { status: "TASK_STATE_BOGUS" }, "params"))).toBe(
      "invalid-params",
    );
    expect(readV10(pb.GetTaskRequestSchema, { id: "x", extra: 1, nested: { deep: [1] } }, "params").id).toBe("x");
    expect(codeOf(() => readV10(pb.GetTaskRequestSchema, { id: 7 }, "params"))).toBe("invalid-params");
    expect(codeOf(() => readV10(pb.GetTaskRequestSchema, [1], "params"))).toBe("invalid-params");
    const task: Task = {
      id: "t",
      contextId: "c",
      status: { state: "working", timestamp: "2030-01-01T00:00:00.000Z" },
      artifacts: [],
      history: [],
      metadata: {},
    };
    const json = writeV10(pb.TaskSchema, encodeTask(task));
    expect(json).toMatchObject({ id: "t", artifacts: [], history: [], status: { state: "TASK_STATE_WORKING" } });
    const event = writeV10(
      pb.StreamResponseSchema,
      encodeStreamEvent({ kind: "status-update", taskId: "t", contextId: "c", status: task.status, final: false }),
    );
    expect(event).toEqual({
      statusUpdate: {
        taskId: "t",
        contextId: "c",
        status: { state: "TASK_STATE_WORKING", timestamp: "2030-01-01T00:00:00Z" },
      },
    });
    expect(writeTaskPageV10(pb.ListTasksResponseSchema, create(pb.ListTasksResponseSchema, {}))).toEqual({
      tasks: [],
      nextPageToken: "",
      pageSize: 0,
      totalSize: 0,
    });
  });

  it("an explicit tenant other than the caller's reads as not found", () => {
    expect(codeOf(() => checkTenant("", principal))).toBe("ok");
    expect(codeOf(() => checkTenant("acme", principal))).toBe("ok");
    expect(codeOf(() => checkTenant("globex", principal, "t1"))).toBe("task-not-found");
    expect(codeOf(() => checkTenant("globex", principal))).toBe("not-found");
  });
});

describe("the 1.0 error shapes", () => {
  const notFound = new DomainError("task-not-found", "Task not found: t1", { taskId: "t1", n: 2 });

  it("JSON-RPC carries an ErrorInfo array with string metadata", () => {
    expect(jsonRpcErrorV10(7, notFound)).toEqual({
      jsonrpc: "2.0",
      id: 7,
      error: {
        code: -32001,
        message: "Task not found: t1",
        data: [
          {
            "@type": "type.googleapis.com/google.rpc.ErrorInfo",
            reason: "TASK_NOT_FOUND",
            domain: "a2a-protocol.org",
            metadata: { taskId: "t1", n: "2" },
          },
        ],
      },
    });
  });

  it("REST is google.rpc.Status JSON with the 1.0 HTTP status; our own reasons carry our domain", () => {
    expect(restErrorV10(new DomainError("task-not-cancelable", "no")).status).toBe(400);
    expect(restErrorV10(new DomainError("push-not-supported", "no")).body.error).toMatchObject({
      code: 400,
      status: "FAILED_PRECONDITION",
    });
    expect(restErrorV10(notFound).body.error).toMatchObject({
      code: 404,
      status: "NOT_FOUND",
      details: [{ reason: "TASK_NOT_FOUND" }],
    });
    expect(errorInfoOf(new DomainError("idempotency-conflict", "x"))).toMatchObject({
      reason: "IDEMPOTENCY_CONFLICT",
      domain: "openwop.dev",
    });
    expect(restErrorV10(new Error("boom")).body.error).toMatchObject({
      code: 500,
      status: "INTERNAL",
      message: "Internal error",
    });
  });

  it("the gRPC detail is ErrorInfo in protobuf binary", () => {
    const bytes = encodeErrorInfo(errorInfoOf(notFound));
    const reader = new BinaryReader(bytes);
    const seen: Record<string, unknown> = { metadata: {} };
    while (reader.pos < reader.len) {
      const [field] = reader.tag();
      if (field === 1) seen["reason"] = reader.string();
      else if (field === 2) seen["domain"] = reader.string();
      else {
        const entry = new BinaryReader(reader.bytes());
        let key = "";
        let value = "";
        while (entry.pos < entry.len) {
          const [f] = entry.tag();
          if (f === 1) key = entry.string();
          else value = entry.string();
        }
        (seen["metadata"] as Record<string, string>)[key] = value;
      }
    }
    expect(seen).toEqual({ reason: "TASK_NOT_FOUND", domain: "a2a-protocol.org", metadata: { taskId: "t1", n: "2" } });
  });
});

describe("ListTasks paging and messageId idempotency helpers", () => {
  it("page tokens round-trip; a forged one and a bad page size are invalid params", () => {
    const token = encodePageToken({ updatedAt: "2030-01-01T00:00:00.000Z", taskId: "t" });
    expect(decodePageToken(token)).toEqual({ updatedAt: "2030-01-01T00:00:00.000Z", taskId: "t" });
    expect(codeOf(() => decodePageToken("nope"))).toBe("invalid-params");
    expect(codeOf(() => decodePageToken(Buffer.from('[1,"x","t"]').toString("base64url")))).toBe("invalid-params");
    expect(pageSizeOf(undefined)).toBe(50);
    expect(pageSizeOf(100)).toBe(100);
    expect(codeOf(() => pageSizeOf(101))).toBe("invalid-params");
    expect(codeOf(() => pageSizeOf(-1))).toBe("invalid-params");
  });

  it("the key is per (tenant, caller, messageId); the fingerprint ignores key order; a changed reply is refused", () => {
    const m = { messageId: "m1", role: "user" as const, parts: [{ kind: "data" as const, data: { a: 1, b: 2 } }] };
    const same = { ...m, parts: [{ kind: "data" as const, data: { b: 2, a: 1 } }] };
    expect(creationSeed(principal, m, "echo")).toEqual(creationSeed(principal, same, "echo"));
    expect(creationSeed(principal, m, "echo").key).not.toBe(
      creationSeed({ ...principal, id: "apikey:bob" }, m, "echo").key,
    );
    expect(creationSeed(principal, m, "echo").fingerprint).not.toBe(
      creationSeed(principal, m, "approval-gate").fingerprint,
    );
    expect(canonicalJson({ b: [1, { d: 1, c: undefined }], a: null })).toBe('{"a":null,"b":[1,{"d":1}]}');
    const history = [{ ...m, taskId: "t", contextId: "c" }];
    expect(classifyReply(history, "t", same)).toBe("repeat");
    expect(classifyReply(history, "t", { ...m, messageId: "m2" })).toBe("new");
    expect(codeOf(() => classifyReply(history, "t", { ...m, parts: [{ kind: "text", text: "other" }] }))).toBe(
      "idempotency-conflict",
    );
  });
});
