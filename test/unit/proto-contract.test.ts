// Pins the A2A wire contracts (proto/a2a/v1 = A2A v0.3, proto/lf/a2a/v1 = A2A v1.0) to the facts in
// /work/shared/reference/a2a-wire-facts.md §1 and §5. A renumbered field, a lost json_name or a
// renamed rpc breaks interoperability silently, so each expectation here is written out by hand from
// the facts, not derived from the proto.
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { create, toJson } from "@bufbuild/protobuf";
import type { DescEnum, DescFile, DescMessage, DescService } from "@bufbuild/protobuf";
import * as protoLoader from "@grpc/proto-loader";
import { describe, expect, it } from "vitest";
import * as v03 from "../../src/gen/a2a/v1/a2a_pb.js";
import * as v10 from "../../src/gen/lf/a2a/v1/a2a_pb.js";

const protoDir = fileURLToPath(new URL("../../proto", import.meta.url));

function service(file: DescFile): DescService {
  expect(file.services).toHaveLength(1);
  return file.services[0]!;
}

function message(file: DescFile, name: string): DescMessage {
  const found = file.messages.find((m) => m.name === name);
  if (!found) throw new Error(`message ${name} not found in ${file.name}`);
  return found;
}

function enumOf(file: DescFile, name: string): DescEnum {
  const found = file.enums.find((e) => e.name === name);
  if (!found) throw new Error(`enum ${name} not found in ${file.name}`);
  return found;
}

/** "name=number" for every field of a message, in number order. */
function fieldNumbers(desc: DescMessage): string[] {
  return [...desc.fields].sort((a, b) => a.number - b.number).map((f) => `${f.name}=${f.number}`);
}

function enumValues(desc: DescEnum): string[] {
  return desc.values.map((v) => `${v.name}=${v.number}`);
}

type Rpc = [name: string, kind: "unary" | "server_streaming", input: string, output: string];

function expectRpcs(svc: DescService, rpcs: Rpc[]): void {
  expect(svc.methods.map((m) => [m.name, m.methodKind, m.input.typeName, m.output.typeName])).toEqual(rpcs);
}

/** [message, proto field name, number, ProtoJSON name]. */
type FieldRow = [message: string, field: string, number: number, json: string];

function expectFields(file: DescFile, rows: FieldRow[]): void {
  for (const [msg, name, number, json] of rows) {
    const field = message(file, msg).fields.find((f) => f.name === name);
    expect(field, `${msg}.${name}`).toBeDefined();
    expect({ field: `${msg}.${name}`, number: field!.number, json: field!.jsonName }).toEqual({
      field: `${msg}.${name}`,
      number,
      json,
    });
  }
}

describe("a2a.v1 (A2A v0.3) contract", () => {
  const file = v03.file_a2a_v1_a2a;

  it("declares package a2a.v1 with the upstream file options", () => {
    expect(file.proto.package).toBe("a2a.v1");
    expect(file.proto.options?.goPackage).toBe("google.golang.org/a2a/v1");
    expect(file.proto.options?.javaPackage).toBe("com.google.a2a.v1");
    expect(file.proto.options?.csharpNamespace).toBe("A2a.V1");
  });

  it("has service a2a.v1.A2AService with every v0.3 rpc, in upstream order", () => {
    const svc = service(file);
    expect(svc.typeName).toBe("a2a.v1.A2AService");
    expectRpcs(svc, [
      ["SendMessage", "unary", "a2a.v1.SendMessageRequest", "a2a.v1.SendMessageResponse"],
      ["SendStreamingMessage", "server_streaming", "a2a.v1.SendMessageRequest", "a2a.v1.StreamResponse"],
      ["GetTask", "unary", "a2a.v1.GetTaskRequest", "a2a.v1.Task"],
      ["CancelTask", "unary", "a2a.v1.CancelTaskRequest", "a2a.v1.Task"],
      ["TaskSubscription", "server_streaming", "a2a.v1.TaskSubscriptionRequest", "a2a.v1.StreamResponse"],
      [
        "CreateTaskPushNotificationConfig",
        "unary",
        "a2a.v1.CreateTaskPushNotificationConfigRequest",
        "a2a.v1.TaskPushNotificationConfig",
      ],
      [
        "GetTaskPushNotificationConfig",
        "unary",
        "a2a.v1.GetTaskPushNotificationConfigRequest",
        "a2a.v1.TaskPushNotificationConfig",
      ],
      [
        "ListTaskPushNotificationConfig",
        "unary",
        "a2a.v1.ListTaskPushNotificationConfigRequest",
        "a2a.v1.ListTaskPushNotificationConfigResponse",
      ],
      ["GetAgentCard", "unary", "a2a.v1.GetAgentCardRequest", "a2a.v1.AgentCard"],
      [
        "DeleteTaskPushNotificationConfig",
        "unary",
        "a2a.v1.DeleteTaskPushNotificationConfigRequest",
        "google.protobuf.Empty",
      ],
    ]);
  });

  it("keeps the key field numbers and json names of v0.3.0 (+ the three additive fields)", () => {
    expectFields(file, [
      ["SendMessageConfiguration", "push_notification", 2, "pushNotification"],
      ["SendMessageConfiguration", "history_length", 3, "historyLength"],
      ["SendMessageConfiguration", "blocking", 4, "blocking"],
      ["TaskStatus", "update", 2, "message"],
      ["TaskStatus", "timestamp", 3, "timestamp"],
      ["Message", "role", 4, "role"],
      ["Message", "content", 5, "content"],
      ["Message", "extensions", 7, "extensions"],
      ["Part", "text", 1, "text"],
      ["Part", "file", 2, "file"],
      ["Part", "data", 3, "data"],
      ["Part", "metadata", 4, "metadata"],
      ["FilePart", "file_with_uri", 1, "fileWithUri"],
      ["FilePart", "file_with_bytes", 2, "fileWithBytes"],
      ["FilePart", "mime_type", 3, "mimeType"],
      ["FilePart", "name", 4, "name"],
      ["TaskStatusUpdateEvent", "final", 4, "final"],
      ["TaskStatusUpdateEvent", "metadata", 5, "metadata"],
      ["TaskArtifactUpdateEvent", "last_chunk", 5, "lastChunk"],
      ["AuthenticationInfo", "schemes", 1, "schemes"],
      ["TaskPushNotificationConfig", "name", 1, "name"],
      ["TaskPushNotificationConfig", "push_notification_config", 2, "pushNotificationConfig"],
      ["AgentInterface", "transport", 2, "transport"],
      ["AgentCard", "url", 3, "url"],
      ["AgentCard", "supports_authenticated_extended_card", 13, "supportsAuthenticatedExtendedCard"],
      ["AgentCard", "preferred_transport", 14, "preferredTransport"],
      ["AgentCard", "additional_interfaces", 15, "additionalInterfaces"],
      ["AgentCard", "protocol_version", 16, "protocolVersion"],
      ["AgentCard", "signatures", 17, "signatures"],
      ["AgentCard", "icon_url", 18, "iconUrl"],
      ["AgentSkill", "security", 8, "security"],
      ["APIKeySecurityScheme", "location", 2, "location"],
      ["SendMessageRequest", "request", 1, "message"],
      ["SendMessageRequest", "configuration", 2, "configuration"],
      ["GetTaskRequest", "name", 1, "name"],
      ["GetTaskRequest", "history_length", 2, "historyLength"],
      ["CreateTaskPushNotificationConfigRequest", "parent", 1, "parent"],
      ["CreateTaskPushNotificationConfigRequest", "config_id", 2, "configId"],
      ["CreateTaskPushNotificationConfigRequest", "config", 3, "config"],
      ["SendMessageResponse", "msg", 2, "message"],
      ["StreamResponse", "task", 1, "task"],
      ["StreamResponse", "msg", 2, "message"],
      ["StreamResponse", "status_update", 3, "statusUpdate"],
      ["StreamResponse", "artifact_update", 4, "artifactUpdate"],
    ]);
  });

  it("has exactly the v0.3 field sets where later versions differ", () => {
    // Artifact has no field 2 in v0.3.
    expect(fieldNumbers(message(file, "Artifact"))).toEqual([
      "artifact_id=1",
      "name=3",
      "description=4",
      "parts=5",
      "metadata=6",
      "extensions=7",
    ]);
    // No reference_task_ids (#8) in v0.3.0.
    expect(fieldNumbers(message(file, "Message"))).toEqual([
      "message_id=1",
      "context_id=2",
      "task_id=3",
      "role=4",
      "content=5",
      "metadata=6",
      "extensions=7",
    ]);
    // No state_transition_history in the v0.3.0 proto.
    expect(fieldNumbers(message(file, "AgentCapabilities"))).toEqual([
      "streaming=1",
      "push_notifications=2",
      "extensions=3",
    ]);
    expect(fieldNumbers(message(file, "AgentCard"))).toHaveLength(18);
    expect(message(file, "Part").oneofs.map((o) => [o.name, o.fields.map((f) => f.name)])).toEqual([
      ["part", ["text", "file", "data"]],
    ]);
  });

  it("spells TaskState CANCELLED with two Ls (= 5) and keeps the v0.3 enums", () => {
    expect(enumValues(enumOf(file, "TaskState"))).toEqual([
      "TASK_STATE_UNSPECIFIED=0",
      "TASK_STATE_SUBMITTED=1",
      "TASK_STATE_WORKING=2",
      "TASK_STATE_COMPLETED=3",
      "TASK_STATE_FAILED=4",
      "TASK_STATE_CANCELLED=5",
      "TASK_STATE_INPUT_REQUIRED=6",
      "TASK_STATE_REJECTED=7",
      "TASK_STATE_AUTH_REQUIRED=8",
    ]);
    expect(enumValues(enumOf(file, "Role"))).toEqual(["ROLE_UNSPECIFIED=0", "ROLE_USER=1", "ROLE_AGENT=2"]);
    expect(v03.TaskState.CANCELLED).toBe(5);
  });

  it('serializes the json_name overrides as "message" in ProtoJSON', () => {
    const msg = create(v03.MessageSchema, {
      messageId: "m1",
      role: v03.Role.AGENT,
      content: [{ part: { case: "text", value: "hi" } }],
    });
    const status = toJson(
      v03.TaskStatusSchema,
      create(v03.TaskStatusSchema, { state: v03.TaskState.CANCELLED, update: msg }),
    );
    expect(status).toEqual({
      state: "TASK_STATE_CANCELLED",
      message: { messageId: "m1", role: "ROLE_AGENT", content: [{ text: "hi" }] },
    });
    const stream = create(v03.StreamResponseSchema, { payload: { case: "msg", value: msg } });
    expect(Object.keys(toJson(v03.StreamResponseSchema, stream) as object)).toEqual(["message"]);
    const send = create(v03.SendMessageRequestSchema, { request: msg });
    expect(Object.keys(toJson(v03.SendMessageRequestSchema, send) as object)).toEqual(["message"]);
  });
});

describe("lf.a2a.v1 (A2A v1.0) contract", () => {
  const file = v10.file_lf_a2a_v1_a2a;

  it("declares package lf.a2a.v1 with the v1.0 file options", () => {
    expect(file.proto.package).toBe("lf.a2a.v1");
    expect(file.proto.options?.goPackage).toBe("google.golang.org/lf/a2a/v1");
    expect(file.proto.options?.javaPackage).toBe("com.google.lf.a2a.v1");
    expect(file.proto.options?.csharpNamespace).toBe("Lf.A2a.V1");
  });

  it("has service lf.a2a.v1.A2AService with every v1.0 rpc", () => {
    const svc = service(file);
    expect(svc.typeName).toBe("lf.a2a.v1.A2AService");
    expectRpcs(svc, [
      ["SendMessage", "unary", "lf.a2a.v1.SendMessageRequest", "lf.a2a.v1.SendMessageResponse"],
      ["SendStreamingMessage", "server_streaming", "lf.a2a.v1.SendMessageRequest", "lf.a2a.v1.StreamResponse"],
      ["GetTask", "unary", "lf.a2a.v1.GetTaskRequest", "lf.a2a.v1.Task"],
      ["ListTasks", "unary", "lf.a2a.v1.ListTasksRequest", "lf.a2a.v1.ListTasksResponse"],
      ["CancelTask", "unary", "lf.a2a.v1.CancelTaskRequest", "lf.a2a.v1.Task"],
      ["SubscribeToTask", "server_streaming", "lf.a2a.v1.SubscribeToTaskRequest", "lf.a2a.v1.StreamResponse"],
      [
        "CreateTaskPushNotificationConfig",
        "unary",
        "lf.a2a.v1.TaskPushNotificationConfig",
        "lf.a2a.v1.TaskPushNotificationConfig",
      ],
      [
        "GetTaskPushNotificationConfig",
        "unary",
        "lf.a2a.v1.GetTaskPushNotificationConfigRequest",
        "lf.a2a.v1.TaskPushNotificationConfig",
      ],
      [
        "ListTaskPushNotificationConfigs",
        "unary",
        "lf.a2a.v1.ListTaskPushNotificationConfigsRequest",
        "lf.a2a.v1.ListTaskPushNotificationConfigsResponse",
      ],
      ["GetExtendedAgentCard", "unary", "lf.a2a.v1.GetExtendedAgentCardRequest", "lf.a2a.v1.AgentCard"],
      [
        "DeleteTaskPushNotificationConfig",
        "unary",
        "lf.a2a.v1.DeleteTaskPushNotificationConfigRequest",
        "google.protobuf.Empty",
      ],
    ]);
  });

  it("has the v1.0 field numbers of the renumbered and new messages", () => {
    expect(fieldNumbers(message(file, "Part"))).toEqual([
      "text=1",
      "raw=2",
      "url=3",
      "data=4",
      "metadata=5",
      "filename=6",
      "media_type=7",
    ]);
    expect(message(file, "Part").oneofs.map((o) => [o.name, o.fields.map((f) => f.name)])).toEqual([
      ["content", ["text", "raw", "url", "data"]],
    ]);
    const data = message(file, "Part").fields.find((f) => f.name === "data");
    expect(data?.message?.typeName).toBe("google.protobuf.Value");
    expect(fieldNumbers(message(file, "Artifact"))).toEqual([
      "artifact_id=1",
      "name=2",
      "description=3",
      "parts=4",
      "metadata=5",
      "extensions=6",
    ]);
    // final is gone; metadata moved to 4.
    expect(fieldNumbers(message(file, "TaskStatusUpdateEvent"))).toEqual([
      "task_id=1",
      "context_id=2",
      "status=3",
      "metadata=4",
    ]);
    expect(fieldNumbers(message(file, "Message"))).toEqual([
      "message_id=1",
      "context_id=2",
      "task_id=3",
      "role=4",
      "parts=5",
      "metadata=6",
      "extensions=7",
      "reference_task_ids=8",
    ]);
    expect(fieldNumbers(message(file, "ListTasksRequest"))).toEqual([
      "tenant=1",
      "context_id=2",
      "status=3",
      "page_size=4",
      "page_token=5",
      "history_length=6",
      "status_timestamp_after=7",
      "include_artifacts=8",
    ]);
    expect(fieldNumbers(message(file, "ListTasksResponse"))).toEqual([
      "tasks=1",
      "next_page_token=2",
      "page_size=3",
      "total_size=4",
    ]);
    expect(fieldNumbers(message(file, "TaskPushNotificationConfig"))).toEqual([
      "tenant=1",
      "id=2",
      "task_id=3",
      "url=4",
      "token=5",
      "authentication=6",
    ]);
    expect(fieldNumbers(message(file, "AuthenticationInfo"))).toEqual(["scheme=1", "credentials=2"]);
    expect(fieldNumbers(message(file, "ListTaskPushNotificationConfigsRequest"))).toEqual([
      "task_id=1",
      "page_size=2",
      "page_token=3",
      "tenant=4",
    ]);
    for (const name of ["GetTaskPushNotificationConfigRequest", "DeleteTaskPushNotificationConfigRequest"]) {
      expect(fieldNumbers(message(file, name)), name).toEqual(["tenant=1", "task_id=2", "id=3"]);
    }
    expect(fieldNumbers(message(file, "AgentInterface"))).toEqual([
      "url=1",
      "protocol_binding=2",
      "tenant=3",
      "protocol_version=4",
    ]);
    expect(fieldNumbers(message(file, "AgentCard"))).toEqual([
      "name=1",
      "description=2",
      "supported_interfaces=3",
      "provider=4",
      "version=5",
      "documentation_url=6",
      "capabilities=7",
      "security_schemes=8",
      "security_requirements=9",
      "default_input_modes=10",
      "default_output_modes=11",
      "skills=12",
      "signatures=13",
      "icon_url=14",
    ]);
    expect(fieldNumbers(message(file, "AgentCapabilities"))).toEqual([
      "streaming=1",
      "push_notifications=2",
      "extensions=3",
      "extended_agent_card=4",
    ]);
  });

  it("keeps json names plain and optional fields explicit-presence", () => {
    expectFields(file, [
      ["TaskStatus", "message", 2, "message"],
      ["SendMessageRequest", "tenant", 1, "tenant"],
      ["SendMessageRequest", "message", 2, "message"],
      ["SendMessageRequest", "configuration", 3, "configuration"],
      ["SendMessageRequest", "metadata", 4, "metadata"],
      ["SendMessageConfiguration", "task_push_notification_config", 2, "taskPushNotificationConfig"],
      ["SendMessageConfiguration", "history_length", 3, "historyLength"],
      ["SendMessageConfiguration", "return_immediately", 4, "returnImmediately"],
      ["GetTaskRequest", "id", 2, "id"],
      ["GetTaskRequest", "history_length", 3, "historyLength"],
      ["CancelTaskRequest", "metadata", 3, "metadata"],
      ["SubscribeToTaskRequest", "id", 2, "id"],
      ["AgentSkill", "security_requirements", 8, "securityRequirements"],
      ["OAuthFlows", "device_code", 5, "deviceCode"],
      ["AuthorizationCodeOAuthFlow", "pkce_required", 5, "pkceRequired"],
      ["DeviceCodeOAuthFlow", "device_authorization_url", 1, "deviceAuthorizationUrl"],
      ["SendMessageResponse", "message", 2, "message"],
      ["StreamResponse", "status_update", 3, "statusUpdate"],
      ["StreamResponse", "artifact_update", 4, "artifactUpdate"],
    ]);
    const optional = (msg: string, field: string) =>
      message(file, msg).fields.find((f) => f.name === field)?.proto.proto3Optional ?? false;
    expect(optional("SendMessageConfiguration", "history_length")).toBe(true);
    expect(optional("SendMessageConfiguration", "return_immediately")).toBe(false);
    expect(optional("GetTaskRequest", "history_length")).toBe(true);
    expect(optional("ListTasksRequest", "page_size")).toBe(true);
    expect(optional("ListTasksRequest", "include_artifacts")).toBe(true);
    expect(optional("AgentCapabilities", "streaming")).toBe(true);
    expect(optional("AgentCapabilities", "extended_agent_card")).toBe(true);
    expect(optional("AgentCard", "icon_url")).toBe(true);
  });

  it("spells TaskState CANCELED with one L (= 5)", () => {
    expect(enumValues(enumOf(file, "TaskState"))).toEqual([
      "TASK_STATE_UNSPECIFIED=0",
      "TASK_STATE_SUBMITTED=1",
      "TASK_STATE_WORKING=2",
      "TASK_STATE_COMPLETED=3",
      "TASK_STATE_FAILED=4",
      "TASK_STATE_CANCELED=5",
      "TASK_STATE_INPUT_REQUIRED=6",
      "TASK_STATE_REJECTED=7",
      "TASK_STATE_AUTH_REQUIRED=8",
    ]);
    expect(enumValues(enumOf(file, "Role"))).toEqual(["ROLE_UNSPECIFIED=0", "ROLE_USER=1", "ROLE_AGENT=2"]);
    const json = toJson(v10.TaskStatusSchema, create(v10.TaskStatusSchema, { state: v10.TaskState.CANCELED }));
    expect(json).toEqual({ state: "TASK_STATE_CANCELED" });
  });
});

describe("@grpc/proto-loader", () => {
  const options = {
    includeDirs: [protoDir],
    keepCase: true,
    longs: String,
    enums: String,
    defaults: false,
    oneofs: true,
  };

  it("loads both contracts together from proto/ and sees both services", () => {
    const definition = protoLoader.loadSync(["a2a/v1/a2a.proto", "lf/a2a/v1/a2a.proto"], options);
    const legacy = definition["a2a.v1.A2AService"] as protoLoader.ServiceDefinition;
    const current = definition["lf.a2a.v1.A2AService"] as protoLoader.ServiceDefinition;
    expect(Object.keys(legacy)).toHaveLength(10);
    expect(Object.keys(current)).toHaveLength(11);
    expect(legacy.SendStreamingMessage?.path).toBe("/a2a.v1.A2AService/SendStreamingMessage");
    expect(legacy.SendStreamingMessage?.responseStream).toBe(true);
    expect(legacy.TaskSubscription?.responseStream).toBe(true);
    expect(legacy.GetTask?.responseStream).toBe(false);
    expect(current.SubscribeToTask?.path).toBe("/lf.a2a.v1.A2AService/SubscribeToTask");
    expect(current.SubscribeToTask?.responseStream).toBe(true);
    expect(current.ListTasks?.requestStream).toBe(false);
  });

  it("loads each contract on its own", () => {
    for (const file of ["a2a/v1/a2a.proto", "lf/a2a/v1/a2a.proto"]) {
      expect(() => protoLoader.loadSync(join(protoDir, file), options), file).not.toThrow();
    }
  });
});
