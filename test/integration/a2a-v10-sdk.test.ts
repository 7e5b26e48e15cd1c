// A2A 1.0 end to end with @a2a-js/sdk 1.x speaking 1.0 natively, over each binding the card lists
// (JSON-RPC, HTTP+JSON, gRPC), picked by the SDK's ClientFactory from our card's supportedInterfaces.
// Plus the same SDK in its 0.3 compat mode against the same server.
import { randomUUID } from "node:crypto";
import {
  ClientFactory,
  DefaultAgentCardResolver,
  JsonRpcTransportFactory,
  RestTransportFactory,
  type Client,
} from "@a2a-js/sdk/client";
import { GrpcTransportFactory } from "@a2a-js/sdk/client/grpc";
import {
  ExtendedAgentCardNotConfiguredError,
  TaskNotCancelableError,
  TaskNotFoundError,
  UnsupportedOperationError,
} from "@a2a-js/sdk/errors";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PushReceiver, waitFor } from "../support/push-receiver.js";
import { startTestApp, type TestApp, TEST_WORKFLOWS_DIR } from "../support/start-server.js";

const ALL = ["runs:create", "runs:read", "runs:cancel", "approvals:respond", "webhooks:manage", "manifest:read"];
const KEY = "v10-sdk-key-0123456789abcdef";

// ts-proto enum numbers of the SDK's 1.0 types.
const ROLE_USER = 1;
const STATE = { COMPLETED: 3, CANCELED: 5, INPUT_REQUIRED: 6 } as const;

type SendRequest = Parameters<Client["sendMessage"]>[0];
type SdkPart = SendRequest["message"] extends infer M ? (M extends { parts: Array<infer P> } ? P : never) : never;

const textPart = (text: string): SdkPart => ({
  content: { $case: "text", value: text },
  metadata: undefined,
  filename: "",
  mediaType: "",
});
const dataPart = (value: Record<string, unknown>): SdkPart => ({
  content: { $case: "data", value },
  metadata: undefined,
  filename: "",
  mediaType: "",
});

function send(
  parts: SdkPart[],
  extra: { skillId?: string; taskId?: string; historyLength?: number } = {},
): SendRequest {
  return {
    tenant: "",
    message: {
      messageId: randomUUID(),
      contextId: "",
      taskId: extra.taskId ?? "",
      role: ROLE_USER,
      parts,
      metadata: extra.skillId ? { skillId: extra.skillId } : undefined,
      extensions: [],
      referenceTaskIds: [],
    },
    configuration:
      extra.historyLength !== undefined
        ? {
            acceptedOutputModes: [],
            taskPushNotificationConfig: undefined,
            historyLength: extra.historyLength,
            returnImmediately: false,
          }
        : undefined,
    metadata: undefined,
  };
}

/** Every call carries the API key (serviceParameters become HTTP headers or gRPC metadata). */
const withApiKey = {
  async before(args: { options?: { serviceParameters?: Record<string, string> } }) {
    args.options = {
      ...args.options,
      serviceParameters: { ...args.options?.serviceParameters, authorization: `Bearer ${KEY}` },
    };
  },
  async after() {},
};

async function sdkFor(baseUrl: string, binding: "JSONRPC" | "HTTP+JSON" | "GRPC"): Promise<Client> {
  const factory = new ClientFactory({
    transports: [new JsonRpcTransportFactory(), new RestTransportFactory(), new GrpcTransportFactory()],
    preferredTransports: [binding],
    clientConfig: { interceptors: [withApiKey] },
  });
  return factory.createFromUrl(baseUrl);
}

function taskOf(result: Awaited<ReturnType<Client["sendMessage"]>>) {
  if (!("status" in result)) throw new Error("expected a Task, got a Message");
  return result;
}

// The same 1.0 clients, unchanged, against a host serving only the released versions and one with the 1.1 draft on.
describe.each([{ drafts: "" }, { drafts: "1.1" }])(
  "A2A 1.0 with the @a2a-js/sdk 1.x client (A2A_DRAFT_VERSIONS=$drafts)",
  ({ drafts }) => {
    let t: TestApp;
    const receiver = new PushReceiver();

    beforeAll(async () => {
      await receiver.start();
      t = await startTestApp({
        WORKFLOWS_DIR: TEST_WORKFLOWS_DIR,
        API_KEYS: JSON.stringify([{ id: "sdk", tenant: "acme", scopes: ALL, key: KEY }]),
        PUSH_ALLOW_INSECURE_LOOPBACK_FOR_TESTS: "true",
        A2A_DRAFT_VERSIONS: drafts,
      });
    });
    afterAll(async () => {
      await t?.close();
      await receiver.stop();
    });

    it("the card the SDK resolves (A2A-Version: 1.0) is the pure 1.0 card listing every binding for 1.0 and 0.3", async () => {
      const card = await new DefaultAgentCardResolver().resolve(t.baseUrl);
      const seen = card.supportedInterfaces.map((i) => `${i.protocolBinding}@${i.protocolVersion}`);
      const draft = drafts ? ["JSONRPC@1.1", "GRPC@1.1", "HTTP+JSON@1.1"] : [];
      expect(seen).toEqual([
        "JSONRPC@1.0",
        "GRPC@1.0",
        "HTTP+JSON@1.0",
        "JSONRPC@0.3",
        "GRPC@0.3",
        "HTTP+JSON@0.3",
        ...draft,
      ]);
      expect(card.capabilities?.streaming).toBe(true);
      expect(card.skills.map((s) => s.id)).toEqual(expect.arrayContaining(["echo", "approval-gate"]));
    });

    describe.each(["JSONRPC", "HTTP+JSON", "GRPC"] as const)("over %s", (binding) => {
      let sdk: Client;
      beforeAll(async () => {
        sdk = await sdkFor(t.baseUrl, binding);
        expect(sdk.transport.protocolName).toBe(binding);
        expect(sdk.protocolVersion).toBe("1.0");
      });

      it("send completes the echo skill; get reads it back with 1.0 historyLength (0 = none)", async () => {
        const task = taskOf(await sdk.sendMessage(send([textPart(`hello over ${binding}`)], { skillId: "echo" })));
        expect(task.status?.state).toBe(STATE.COMPLETED);
        expect(task.artifacts[0]?.parts[0]?.content).toEqual({ $case: "text", value: `hello over ${binding}` });
        expect(task.history.length).toBeGreaterThan(0);
        const none = await sdk.getTask({ tenant: "", id: task.id, historyLength: 0 });
        expect(none.history).toEqual([]);
        const all = await sdk.getTask({ tenant: "", id: task.id });
        expect(all.history.map((m) => m.role)).toContain(ROLE_USER);
        expect(all.metadata?.["openwop"]?.["workflowId"]).toBe("echo");
      });

      it("stream: the Task first, then updates, closing at input-required", async () => {
        const events = [];
        for await (const event of sdk.sendMessageStream(
          send([textPart("Send the quarterly report")], { skillId: "approval-gate" }),
        ))
          events.push(event);
        expect(events[0]?.payload?.$case).toBe("task");
        const last = events.at(-1)?.payload;
        expect(last?.$case).toBe("statusUpdate");
        expect(last?.$case === "statusUpdate" && last.value.status?.state).toBe(STATE.INPUT_REQUIRED);
      });

      it("subscribe after a dropped stream: the Task first, then the rest, read-only; it stays open through the interrupt and ends at completed", async () => {
        const stream = sdk.sendMessageStream(send([textPart("slow one")], { skillId: "slow-approval" }));
        const first = await stream.next();
        await stream.return(undefined); // the caller goes away mid-stream
        const payload = first.value?.payload;
        expect(payload?.$case).toBe("task");
        const taskId = payload?.$case === "task" ? payload.value.id : "";
        const again = [];
        let replied: Promise<unknown> | undefined;
        for await (const event of sdk.resubscribeTask({ tenant: "", id: taskId })) {
          again.push(event);
          const p = event.payload;
          const state =
            p?.$case === "task"
              ? p.value.status?.state
              : p?.$case === "statusUpdate"
                ? p.value.status?.state
                : undefined;
          // The re-attached caller answers the interrupt and watches the run finish on the same stream.
          if (!replied && state === STATE.INPUT_REQUIRED)
            replied = sdk.sendMessage(send([dataPart({ action: "accept" })], { taskId }));
        }
        expect(again[0]?.payload?.$case).toBe("task");
        expect(replied).toBeDefined();
        await replied;
        const last = again.at(-1)?.payload;
        expect(last?.$case === "statusUpdate" && last.value.status?.state).toBe(STATE.COMPLETED);
        const stored = await sdk.getTask({ tenant: "", id: taskId });
        expect(stored.status?.state).toBe(STATE.COMPLETED);
      });

      it("list pages through the caller's tasks with filters", async () => {
        const a = taskOf(await sdk.sendMessage(send([textPart("list me")], { skillId: "echo" })));
        const inContext = await sdk.listTasks({
          tenant: "",
          contextId: a.contextId,
          status: 0,
          pageToken: "",
          statusTimestampAfter: undefined,
        });
        expect(inContext.tasks.map((x) => x.id)).toEqual([a.id]);
        expect(inContext.totalSize).toBe(1);
        expect(inContext.nextPageToken).toBe("");
        expect(inContext.tasks[0]?.artifacts).toEqual([]); // includeArtifacts defaults to false
        const withArtifacts = await sdk.listTasks({
          tenant: "",
          contextId: a.contextId,
          status: 0,
          pageToken: "",
          statusTimestampAfter: undefined,
          includeArtifacts: true,
        });
        expect(withArtifacts.tasks[0]?.artifacts.length).toBeGreaterThan(0);
        const page1 = await sdk.listTasks({
          tenant: "",
          contextId: "",
          status: STATE.COMPLETED,
          pageSize: 1,
          pageToken: "",
          statusTimestampAfter: undefined,
        });
        expect(page1.tasks).toHaveLength(1);
        expect(page1.nextPageToken).not.toBe("");
        const page2 = await sdk.listTasks({
          tenant: "",
          contextId: "",
          status: STATE.COMPLETED,
          pageSize: 1,
          pageToken: page1.nextPageToken,
          statusTimestampAfter: undefined,
        });
        expect(page2.tasks[0]?.id).not.toBe(page1.tasks[0]?.id);
        expect(page2.tasks.every((x) => x.status?.state === STATE.COMPLETED)).toBe(true);
      });

      it("cancel, then typed errors: TaskNotCancelable, UnsupportedOperation on subscribing to a terminal task, TaskNotFound", async () => {
        const waiting = taskOf(await sdk.sendMessage(send([textPart("cancel me")], { skillId: "approval-gate" })));
        expect(waiting.status?.state).toBe(STATE.INPUT_REQUIRED);
        const cancelled = await sdk.cancelTask({ tenant: "", id: waiting.id, metadata: undefined });
        expect(cancelled.status?.state).toBe(STATE.CANCELED);
        await expect(sdk.cancelTask({ tenant: "", id: waiting.id, metadata: undefined })).rejects.toBeInstanceOf(
          TaskNotCancelableError,
        );
        const subscribe = async () => {
          for await (const event of sdk.resubscribeTask({ tenant: "", id: waiting.id })) void event;
        };
        await expect(subscribe()).rejects.toBeInstanceOf(UnsupportedOperationError);
        const missing = await sdk.getTask({ tenant: "", id: `missing-${randomUUID()}` }).catch((e: unknown) => e);
        expect(missing).toBeInstanceOf(TaskNotFoundError);
        // The card says extendedAgentCard: false, so the Client never asks; the transport can.
        const extended = sdk.transport.getExtendedAgentCard(
          { tenant: "" },
          { serviceParameters: { authorization: `Bearer ${KEY}`, "A2A-Version": "1.0" } },
        );
        await expect(extended).rejects.toBeInstanceOf(ExtendedAgentCardNotConfiguredError);
      });

      it("push-config CRUD; deliveries to a 1.0 config are StreamResponse bodies with Authorization: {scheme} {credentials}", async () => {
        const task = taskOf(await sdk.sendMessage(send([textPart("Send the report")], { skillId: "approval-gate" })));
        const configId = `cfg-${binding.replace(/\W/g, "")}`;
        const created = await sdk.createTaskPushNotificationConfig({
          tenant: "",
          id: configId,
          taskId: task.id,
          url: receiver.url(`/v10/${binding}`),
          token: "tok-123",
          authentication: { scheme: "Bearer", credentials: "cred-456" },
        });
        // The token and credentials are write-only: the answer names the scheme, the webhook gets the credentials.
        expect(created).toMatchObject({
          id: configId,
          taskId: task.id,
          url: receiver.url(`/v10/${binding}`),
          authentication: { scheme: "Bearer" },
        });
        expect(JSON.stringify(created)).not.toMatch(/tok-123|cred-456/);
        const got = await sdk.getTaskPushNotificationConfig({ tenant: "", taskId: task.id, id: configId });
        expect(got.url).toBe(created.url);
        const listed = await sdk.listTaskPushNotificationConfig({
          tenant: "",
          taskId: task.id,
          pageSize: 0,
          pageToken: "",
        });
        expect(listed.configs.map((c) => c.id)).toEqual([configId]);

        // Approve: the task completes and the webhook hears it in the 1.0 shape.
        const done = taskOf(await sdk.sendMessage(send([dataPart({ action: "accept" })], { taskId: task.id })));
        expect(done.status?.state).toBe(STATE.COMPLETED);
        const hit = await waitFor(
          () =>
            receiver.hits.find(
              (h) =>
                h.path === `/v10/${binding}` &&
                h.json["statusUpdate"]?.["status"]?.["state"] === "TASK_STATE_COMPLETED",
            ),
          10_000,
          "the 1.0 push",
        );
        expect(hit.headers["content-type"]).toBe("application/a2a+json");
        expect(hit.headers["authorization"]).toBe("Bearer cred-456");
        expect(hit.json["statusUpdate"]["taskId"]).toBe(task.id);
        expect(hit.json["kind"]).toBeUndefined();
        expect(hit.json["statusUpdate"]["final"]).toBeUndefined();

        await sdk.deleteTaskPushNotificationConfig({ tenant: "", taskId: task.id, id: configId });
        const after = await sdk.listTaskPushNotificationConfig({
          tenant: "",
          taskId: task.id,
          pageSize: 0,
          pageToken: "",
        });
        expect(after.configs).toEqual([]);
        await expect(
          sdk.getTaskPushNotificationConfig({ tenant: "", taskId: task.id, id: configId }),
        ).rejects.toBeInstanceOf(TaskNotFoundError);
      });
    });

    it("the same SDK in its 0.3 compat mode, on the card's 0.3 interfaces, against the same server and tasks", async () => {
      const resolver = new DefaultAgentCardResolver({ legacyCompat: { enabled: true } });
      const card = await resolver.resolve(t.baseUrl);
      const legacyCard = {
        ...card,
        supportedInterfaces: card.supportedInterfaces.filter((i) => i.protocolVersion === "0.3"),
      };
      const v10 = await sdkFor(t.baseUrl, "JSONRPC");
      for (const binding of ["JSONRPC", "HTTP+JSON", "GRPC"] as const) {
        const factory = new ClientFactory({
          transports: [
            new JsonRpcTransportFactory({ legacyCompat: { enabled: true } }),
            new RestTransportFactory({ legacyCompat: { enabled: true } }),
            new GrpcTransportFactory({ legacyCompat: { enabled: true } }),
          ],
          preferredTransports: [binding],
          cardResolver: resolver,
          clientConfig: { interceptors: [withApiKey] },
        });
        const legacy = await factory.createFromAgentCard(legacyCard);
        expect(legacy.protocolVersion).toBe("0.3");
        const task = taskOf(await legacy.sendMessage(send([textPart(`legacy ${binding}`)], { skillId: "echo" })));
        expect(task.status?.state).toBe(STATE.COMPLETED);
        // The task a 0.3 client created, read by a 1.0 client.
        const read = await v10.getTask({ tenant: "", id: task.id });
        expect(read.artifacts[0]?.parts[0]?.content).toEqual({ $case: "text", value: `legacy ${binding}` });
        await expect(legacy.getTask({ tenant: "", id: `missing-${randomUUID()}` })).rejects.toThrow(/not found/i);
      }
    });
  },
);
