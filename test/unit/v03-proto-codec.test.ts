import { create, fromBinary, fromJson, toBinary, toJson, type MessageInitShape } from "@bufbuild/protobuf";
import { describe, expect, it } from "vitest";
import type { AgentCard } from "../../src/a2a/agent-card.js";
import {
  decodeGetTaskRequest,
  decodeMessage,
  decodeSendRequest,
  encodePushConfig,
  encodeStreamEvent,
  encodeTask,
  formatTaskName,
  isoOf,
  parsePushConfigName,
  parseTaskName,
  taskStateFromProto,
  taskStateToProto,
} from "../../src/a2a/v03/v03-proto-codec.js";
import { encodeAgentCard } from "../../src/a2a/v03/v03-card-codec.js";
import type { Task } from "../../src/domain/a2a-types.js";
import { DomainError } from "../../src/domain/errors.js";
import { A2A_TASK_STATES } from "../../src/domain/run-status.js";
import * as pb from "../../src/gen/a2a/v1/a2a_pb.js";

function invalid(fn: () => unknown): string {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(DomainError);
    expect((err as DomainError).code).toBe("invalid-params");
    return (err as DomainError).message;
  }
  throw new Error("expected an invalid-params DomainError");
}

const msg = (init: MessageInitShape<typeof pb.MessageSchema>) => create(pb.MessageSchema, init);
const text = (value: string) => ({ part: { case: "text" as const, value } });

describe("v0.3 proto codec: enums", () => {
  it("maps every domain task state both ways; canceled is TASK_STATE_CANCELLED", () => {
    for (const state of A2A_TASK_STATES) expect(taskStateFromProto(taskStateToProto(state))).toBe(state);
    expect(taskStateToProto("canceled")).toBe(pb.TaskState.CANCELLED);
    expect(taskStateToProto("input-required")).toBe(pb.TaskState.INPUT_REQUIRED);
    expect(taskStateToProto("auth-required")).toBe(pb.TaskState.AUTH_REQUIRED);
    expect(invalid(() => taskStateFromProto(pb.TaskState.UNSPECIFIED))).toContain("TASK_STATE_UNSPECIFIED");
    expect(invalid(() => taskStateFromProto(42 as pb.TaskState))).toContain("42");
  });
});

describe("v0.3 proto codec: resource names", () => {
  it("formats and parses tasks/{id}", () => {
    expect(formatTaskName("abc")).toBe("tasks/abc");
    expect(parseTaskName("tasks/abc")).toBe("abc");
    for (const bad of ["foo/bar", "tasks/", "tasks", "", "tasks/a/b", "/tasks/a"]) {
      expect(invalid(() => parseTaskName(bad))).toContain("name must look like tasks/{id}");
    }
    expect(invalid(() => parseTaskName("x", "parent"))).toContain("parent must look like tasks/{id}");
  });

  it("parses tasks/{id}/pushNotificationConfigs/{configId}", () => {
    expect(parsePushConfigName("tasks/t1/pushNotificationConfigs/c1")).toEqual({ taskId: "t1", configId: "c1" });
    expect(invalid(() => parsePushConfigName("tasks/t1"))).toContain("tasks/{id}/pushNotificationConfigs/{configId}");
  });
});

describe("v0.3 proto codec: decoding", () => {
  it("decodes a message with every part kind", () => {
    const decoded = decodeMessage(
      msg({
        messageId: "m1",
        role: pb.Role.USER,
        taskId: "t1",
        contextId: "",
        metadata: { skillId: "echo" },
        extensions: ["urn:x"],
        content: [
          { ...text("hello"), metadata: { lang: "en" } },
          {
            part: {
              case: "file",
              value: {
                file: { case: "fileWithUri", value: "https://example.com/a.pdf" },
                mimeType: "application/pdf",
                name: "a.pdf",
              },
            },
          },
          { part: { case: "file", value: { file: { case: "fileWithBytes", value: new Uint8Array([104, 105]) } } } },
          { part: { case: "data", value: { data: { action: "accept", n: 1 } } } },
        ],
      }),
    );
    expect(decoded).toEqual({
      messageId: "m1",
      role: "user",
      taskId: "t1",
      metadata: { skillId: "echo" },
      extensions: ["urn:x"],
      parts: [
        { kind: "text", text: "hello", metadata: { lang: "en" } },
        { kind: "file", file: { uri: "https://example.com/a.pdf", mimeType: "application/pdf", name: "a.pdf" } },
        { kind: "file", file: { bytes: "aGk=" } },
        { kind: "data", data: { action: "accept", n: 1 } },
      ],
    });
  });

  it("names the field of every validation failure", () => {
    expect(invalid(() => decodeMessage(undefined))).toBe("message is required");
    expect(invalid(() => decodeMessage(msg({ role: pb.Role.USER, content: [text("x")] })))).toContain(
      "message.messageId",
    );
    expect(invalid(() => decodeMessage(msg({ messageId: "m", content: [text("x")] })))).toContain(
      "message.role must be ROLE_USER or ROLE_AGENT (got ROLE_UNSPECIFIED)",
    );
    expect(invalid(() => decodeMessage(msg({ messageId: "m", role: 9 as pb.Role, content: [text("x")] })))).toContain(
      "(got 9)",
    );
    expect(invalid(() => decodeMessage(msg({ messageId: "m", role: pb.Role.USER })))).toContain(
      "message.content must be a non-empty list",
    );
    expect(
      invalid(() => decodeMessage(msg({ messageId: "m", role: pb.Role.USER, content: [text("x"), {}] }))),
    ).toContain("message.content[1] has no content");
    expect(
      invalid(() =>
        decodeMessage(msg({ messageId: "m", role: pb.Role.USER, content: [{ part: { case: "file", value: {} } }] })),
      ),
    ).toContain("message.content[0].file needs exactly one of");
    expect(
      invalid(() =>
        decodeMessage(msg({ messageId: "m", role: pb.Role.USER, content: [{ part: { case: "data", value: {} } }] })),
      ),
    ).toContain("message.content[0].data.data");
  });

  it("reads configuration like the v0.3 SDKs: no configuration = blocking, historyLength 0 = all", () => {
    const request = (
      init: {
        configuration?: MessageInitShape<typeof pb.SendMessageConfigurationSchema>;
        metadata?: Record<string, string>;
      } = {},
    ) =>
      create(pb.SendMessageRequestSchema, {
        request: { messageId: "m", role: pb.Role.USER, content: [text("x")] },
        ...init,
      });
    expect(decodeSendRequest(request())).toMatchObject({ blocking: true, history: undefined });
    expect(decodeSendRequest(request({ configuration: {} }))).toMatchObject({ blocking: false, history: undefined });
    expect(decodeSendRequest(request({ configuration: { blocking: true, historyLength: 3 } }))).toMatchObject({
      blocking: true,
      history: 3,
    });
    expect(invalid(() => decodeSendRequest(request({ configuration: { historyLength: -1 } })))).toContain(
      "configuration.historyLength",
    );
    expect(
      decodeSendRequest(
        request({
          configuration: {
            pushNotification: { url: "https://h.example/x", token: "t", authentication: { schemes: ["Bearer"] } },
          },
        }),
      ).pushNotificationConfig,
    ).toEqual({
      url: "https://h.example/x",
      token: "t",
      authentication: { schemes: ["Bearer"] },
    });
    expect(invalid(() => decodeSendRequest(request({ configuration: { pushNotification: {} } })))).toContain(
      "configuration.pushNotification.url",
    );
    expect(decodeSendRequest(request({ metadata: { skillId: "echo" } })).metadata).toEqual({ skillId: "echo" });
  });

  it("decodes GetTaskRequest names and history", () => {
    expect(decodeGetTaskRequest(create(pb.GetTaskRequestSchema, { name: "tasks/t1", historyLength: 0 }))).toEqual({
      id: "t1",
      history: undefined,
    });
    expect(decodeGetTaskRequest(create(pb.GetTaskRequestSchema, { name: "tasks/t1", historyLength: 2 }))).toEqual({
      id: "t1",
      history: 2,
    });
    expect(invalid(() => decodeGetTaskRequest(create(pb.GetTaskRequestSchema, { name: "t1" })))).toContain(
      "name must look like tasks/{id}",
    );
  });
});

describe("v0.3 proto codec: encoding", () => {
  const task: Task = {
    id: "t1",
    contextId: "c1",
    status: {
      state: "canceled",
      timestamp: "2026-01-02T03:04:05.678Z",
      message: { messageId: "s1", role: "agent", parts: [{ kind: "text", text: "stopped" }], referenceTaskIds: ["t0"] },
    },
    artifacts: [
      {
        artifactId: "a1",
        name: "proposal",
        parts: [
          { kind: "file", file: { bytes: "aGk=", mimeType: "text/plain" } },
          { kind: "data", data: { ok: true, skip: undefined } },
        ],
      },
    ],
    history: [{ messageId: "m1", role: "user", taskId: "t1", contextId: "c1", parts: [{ kind: "text", text: "hi" }] }],
    metadata: { openwop: { status: "cancelled" } },
  };

  it("encodes a Task to the ProtoJSON a v0.3 REST client reads", () => {
    expect(toJson(pb.TaskSchema, encodeTask(task))).toEqual({
      id: "t1",
      contextId: "c1",
      status: {
        state: "TASK_STATE_CANCELLED",
        message: { messageId: "s1", role: "ROLE_AGENT", content: [{ text: "stopped" }] },
        timestamp: "2026-01-02T03:04:05.678Z",
      },
      artifacts: [
        {
          artifactId: "a1",
          name: "proposal",
          parts: [{ file: { fileWithBytes: "aGk=", mimeType: "text/plain" } }, { data: { data: { ok: true } } }],
        },
      ],
      history: [{ messageId: "m1", contextId: "c1", taskId: "t1", role: "ROLE_USER", content: [{ text: "hi" }] }],
      metadata: { openwop: { status: "cancelled" } },
    });
  });

  it("round-trips through the binary wire format and back into the domain", () => {
    const decoded = fromBinary(pb.TaskSchema, toBinary(pb.TaskSchema, encodeTask(task)));
    expect(isoOf(decoded.status?.timestamp)).toBe(task.status.timestamp);
    expect(taskStateFromProto(decoded.status!.state)).toBe("canceled");
    expect(decodeMessage(decoded.history[0], "history[0]")).toEqual(task.history[0]);
  });

  it("wraps each stream event in its StreamResponse member", () => {
    const base = { taskId: "t1", contextId: "c1" };
    expect(toJson(pb.StreamResponseSchema, encodeStreamEvent({ kind: "task", task }))).toHaveProperty("task.id", "t1");
    expect(
      toJson(pb.StreamResponseSchema, encodeStreamEvent({ kind: "message", message: task.history[0]! })),
    ).toHaveProperty("message.messageId", "m1");
    expect(
      toJson(
        pb.StreamResponseSchema,
        encodeStreamEvent({
          kind: "status-update",
          ...base,
          status: { state: "input-required", timestamp: task.status.timestamp },
          final: true,
        }),
      ),
    ).toEqual({
      statusUpdate: {
        taskId: "t1",
        contextId: "c1",
        status: { state: "TASK_STATE_INPUT_REQUIRED", timestamp: "2026-01-02T03:04:05.678Z" },
        final: true,
      },
    });
    expect(
      toJson(
        pb.StreamResponseSchema,
        encodeStreamEvent({
          kind: "artifact-update",
          ...base,
          artifact: task.artifacts[0]!,
          append: false,
          lastChunk: true,
        }),
      ),
    ).toMatchObject({
      artifactUpdate: { taskId: "t1", artifact: { artifactId: "a1" }, lastChunk: true },
    });
  });

  it("encodes push configs", () => {
    expect(
      toJson(
        pb.PushNotificationConfigSchema,
        encodePushConfig({ url: "https://h.example", authentication: { schemes: ["Bearer"], credentials: "c" } }),
      ),
    ).toEqual({
      url: "https://h.example",
      authentication: { schemes: ["Bearer"], credentials: "c" },
    });
  });

  it("encodes the agent card, including interfaces, capabilities, skills and security schemes", () => {
    const card: AgentCard = {
      protocolVersion: "0.3.0",
      name: "n",
      description: "d",
      url: "http://h/a2a/jsonrpc",
      preferredTransport: "JSONRPC",
      additionalInterfaces: [
        { url: "http://h/a2a/jsonrpc", transport: "JSONRPC" },
        { url: "h:80", transport: "GRPC" },
      ],
      supportedInterfaces: [{ url: "http://h/a2a/jsonrpc", protocolBinding: "JSONRPC", protocolVersion: "1.0" }],
      version: "1.0.0",
      capabilities: {
        streaming: true,
        pushNotifications: false,
        stateTransitionHistory: false,
        extensions: [{ uri: "urn:ext", required: false }],
      },
      securitySchemes: {
        key: { type: "apiKey", in: "header", name: "X-Api-Key" },
        oauth: { type: "oauth2", flows: { clientCredentials: { tokenUrl: "https://t", scopes: { read: "Read" } } } },
      },
      security: [{ oauth: ["read"] }],
      defaultInputModes: ["text/plain"],
      defaultOutputModes: ["text/plain"],
      skills: [{ id: "echo", name: "Echo", description: "e", tags: ["demo"], examples: ["hello"] }],
      supportsAuthenticatedExtendedCard: false,
    };
    const json = toJson(pb.AgentCardSchema, encodeAgentCard(card));
    expect(json).toEqual({
      protocolVersion: "0.3.0",
      name: "n",
      description: "d",
      url: "http://h/a2a/jsonrpc",
      preferredTransport: "JSONRPC",
      additionalInterfaces: [
        { url: "http://h/a2a/jsonrpc", transport: "JSONRPC" },
        { url: "h:80", transport: "GRPC" },
      ],
      version: "1.0.0",
      capabilities: { streaming: true, extensions: [{ uri: "urn:ext" }] },
      securitySchemes: {
        key: { apiKeySecurityScheme: { location: "header", name: "X-Api-Key" } },
        oauth: {
          oauth2SecurityScheme: { flows: { clientCredentials: { tokenUrl: "https://t", scopes: { read: "Read" } } } },
        },
      },
      security: [{ schemes: { oauth: { list: ["read"] } } }],
      defaultInputModes: ["text/plain"],
      defaultOutputModes: ["text/plain"],
      skills: [{ id: "echo", name: "Echo", description: "e", tags: ["demo"], examples: ["hello"] }],
    });
    // And a strict ProtoJSON reader accepts what we wrote.
    expect(() => fromJson(pb.AgentCardSchema, json, { ignoreUnknownFields: false })).not.toThrow();
  });
});
