import type { AuthDescription } from "../../auth/authenticator.js";
import { HOST_PREFIX } from "../rest/host-steering-routes.js";
import type { Method, Operation, Tag } from "./openapi-operation.js";
import { OPENWOP_V2 } from "./openapi-v2-operations.js";

/**
 * The OpenAPI 3.1 description of the REST surface: OpenWOP runs, interrupts, discovery, the operator console's
 * JSON API, and A2A HTTP+JSON for 0.3 and 1.0. Written by hand as documentation; a test checks it against the
 * routes the app registers, both ways, so a route cannot be added or dropped without this table following.
 * JSON-RPC and the gRPC / Connect services are described by the A2A spec and `proto/`, not here.
 * The OpenWOP 2 twins of the runs and interrupts operations are in openapi-v2-operations.ts.
 */
const OPENWOP: Operation[] = [
  {
    methods: ["post"],
    path: "/v1/runs",
    tag: "OpenWOP runs",
    summary: "Start a run (Idempotency-Key honoured; a replay answers OpenWOP-Idempotent-Replay: true)",
  },
  { methods: ["get"], path: "/v1/runs/{runId}", tag: "OpenWOP runs", summary: "The RunSnapshot" },
  {
    methods: ["get"],
    path: "/v1/runs/{runId}/events",
    tag: "OpenWOP runs",
    summary: "The run's events as SSE (resumes after Last-Event-ID or ?after=)",
    sse: true,
  },
  {
    methods: ["get"],
    path: "/v1/runs/{runId}/events/poll",
    tag: "OpenWOP runs",
    summary: "Long-poll for events after ?after=",
  },
  {
    methods: ["post"],
    path: "/v1/runs/{runId}/cancel",
    tag: "OpenWOP runs",
    summary: "Cancel: 200 with the run in cancelling",
  },
  { methods: ["post"], path: "/v1/runs/{runId}:pause", tag: "OpenWOP runs", summary: "Pause: 202, run.paused" },
  { methods: ["post"], path: "/v1/runs/{runId}:resume", tag: "OpenWOP runs", summary: "Resume: 202, run.resumed" },
  { methods: ["post"], path: `${HOST_PREFIX}/runs/{runId}:retry`, tag: "Steering", summary: "Retry the failed node" },
  { methods: ["post"], path: `${HOST_PREFIX}/runs/{runId}:restart`, tag: "Steering", summary: "Restart from a node" },
  {
    methods: ["post"],
    path: `${HOST_PREFIX}/runs/{runId}:move`,
    tag: "Steering",
    summary: "Move a waiting or paused run to another workflow version ({toVersion, nodes})",
  },
  {
    methods: ["get"],
    path: `${HOST_PREFIX}/events`,
    tag: "Host events",
    summary: "The host's own event log (negotiation.decided), for the caller's tenant (?type, ?after, ?limit)",
  },
  {
    methods: ["post"],
    path: "/v1/runs/{runId}/interrupts/{nodeId}",
    tag: "OpenWOP interrupts",
    summary: "Resolve the interrupt at a node ({resumeValue})",
  },
  {
    methods: ["get"],
    path: "/v1/interrupts/{token}",
    tag: "OpenWOP interrupts",
    summary: "Inspect an interrupt with its signed token",
    public: true,
  },
  {
    methods: ["post"],
    path: "/v1/interrupts/{token}",
    tag: "OpenWOP interrupts",
    summary: "Resolve an interrupt with its signed token",
    public: true,
  },
  { methods: ["get"], path: "/v1/workflows", tag: "OpenWOP runs", summary: "The workflows this host runs" },
  { methods: ["get"], path: "/v1/workflows/{workflowId}", tag: "OpenWOP runs", summary: "One workflow definition" },
  {
    methods: ["get"],
    path: "/v1/push/dead-letters",
    tag: "OpenWOP runs",
    summary: "Push deliveries given up on (webhooks:manage)",
  },
  {
    methods: ["post"],
    path: "/v1/peer-callbacks/{taskId}",
    tag: "OpenWOP runs",
    summary:
      "Pushes from peers our a2a.invoke nodes call (the per-task token is the credential; a body signed with the peer's key is committed before the 2xx, an unsigned one only wakes the node to read the peer)",
    public: true,
  },
  {
    methods: ["get"],
    path: "/v1/a2a/tasks/{taskId}",
    tag: "OpenWOP runs",
    summary: "The durable A2ATaskState read model",
  },
  {
    methods: ["get"],
    path: "/v1/a2a/task-machine.json",
    tag: "Discovery",
    summary: "The task machine's JSON definition (XState / Stately visualizer)",
  },
  {
    methods: ["get", "head"],
    path: "/.well-known/agent-card.json",
    tag: "Discovery",
    summary: "The A2A agent card (A2A-Version picks the shape; cacheable, ETag, 304)",
    public: true,
  },
  {
    methods: ["get", "head"],
    path: "/.well-known/jwks.json",
    tag: "Discovery",
    summary: "The public keys of the host's push JWTs and agent card signature (JWKS, cacheable)",
    public: true,
  },
  {
    methods: ["get", "head"],
    path: "/.well-known/openwop",
    tag: "Discovery",
    summary: "The OpenWOP discovery document (cacheable, ETag, 304)",
    public: true,
  },
  { methods: ["get"], path: "/healthz", tag: "Discovery", summary: "Liveness", public: true },
  {
    methods: ["get"],
    path: "/readyz",
    tag: "Discovery",
    summary:
      "Readiness: 200 when the store answers in time and the instance neither drains nor sheds new tasks, else 503 with the reason",
    public: true,
  },
  {
    methods: ["get"],
    path: "/metrics",
    tag: "Discovery",
    summary: "Metrics in the Prometheus text format",
    public: true,
    text: true,
  },
  { methods: ["get"], path: "/v1/openapi.json", tag: "Discovery", summary: "This document" },
  {
    methods: ["get"],
    path: "/console/auth/session",
    tag: "Operator console",
    summary:
      "Whether this browser is signed in (its tenant and CSRF token) and whether sign-in through the identity provider is offered",
    public: true,
  },
  {
    methods: ["get"],
    path: "/console/auth/login",
    tag: "Operator console",
    summary:
      "Starts the sign-in through the identity provider (authorization code with PKCE): a redirect to its authorization endpoint",
    public: true,
    text: true,
  },
  {
    methods: ["get"],
    path: "/console/auth/callback",
    tag: "Operator console",
    summary: "The identity provider's redirect back (code, state): sets the session cookie and redirects to /console",
    public: true,
    text: true,
  },
  {
    methods: ["post"],
    path: "/console/auth/logout",
    tag: "Operator console",
    summary: "Ends the console session (X-CSRF-Token and the console's Origin with a session), clears its cookie",
    public: true,
  },
  {
    methods: ["get"],
    path: "/console/api/machine",
    tag: "Operator console",
    summary: "The task machine for the console's diagram",
  },
  {
    methods: ["get"],
    path: "/console/api/tasks",
    tag: "Operator console",
    summary:
      "One page of the key's tenant's tasks (every configured tenant with console:all-tenants): limit, cursor, filters; nextCursor and counts per state",
  },
  {
    methods: ["get"],
    path: "/console/api/limits",
    tag: "Operator console",
    summary: "Each visible tenant's limits (TENANT_LIMITS), its usage on this instance and its refusals by reason",
  },
  {
    methods: ["get"],
    path: "/console/api/workflows/{skillId}",
    tag: "Operator console",
    summary: "A workflow's graph: its nodes and edges",
  },
  {
    methods: ["post"],
    path: "/console/api/tasks/{taskId}/interrupts/{nodeId}",
    tag: "Operator console",
    summary: "Answer a task's pending interrupt as the operator",
  },
  { methods: ["post"], path: "/console/api/bulk/cancel", tag: "Operator console", summary: "Cancel selected tasks" },
  {
    methods: ["post"],
    path: "/console/api/bulk/retry-push",
    tag: "Operator console",
    summary: "Retry the pushes of selected tasks now",
  },
  {
    methods: ["get"],
    path: "/console/api/tasks/stream",
    tag: "Operator console",
    summary: "Task summaries as they change (SSE)",
    sse: true,
  },
  {
    methods: ["get"],
    path: "/console/api/tasks/{taskId}",
    tag: "Operator console",
    summary: "One task with its log and state path",
  },
  {
    methods: ["get"],
    path: "/console/api/tasks/{taskId}/events",
    tag: "Operator console",
    summary: "One task's events (SSE)",
    sse: true,
  },
  { methods: ["post"], path: "/console/api/tasks/{taskId}/cancel", tag: "Operator console", summary: "Cancel a task" },
  ...(["pause", "resume", "retry", "restart", "move"] as const).map((action) => steerInConsole(action)),
  {
    methods: ["get"],
    path: "/console/api/tasks/{taskId}/push",
    tag: "Operator console",
    summary: "A task's push deliveries and dead letters",
  },
  {
    methods: ["post"],
    path: "/console/api/tasks/{taskId}/push/{configId}/retry",
    tag: "Operator console",
    summary: "Retry a push delivery now",
  },
  {
    methods: ["post"],
    path: "/v1/host/sample/a2a/tasks/start",
    tag: "Conformance seams",
    summary: "Start an A2A task for the conformance suite (CONFORMANCE_SEAMS)",
  },
  {
    methods: ["get"],
    path: "/v1/host/sample/a2a/tasks/{taskId}",
    tag: "Conformance seams",
    summary: "Read a task's A2ATaskState (CONFORMANCE_SEAMS)",
  },
  {
    methods: ["post"],
    path: "/v1/host/sample/a2a/tasks/push-config",
    tag: "Conformance seams",
    summary: "Check a push config (CONFORMANCE_SEAMS)",
  },
  {
    methods: ["post"],
    path: "/v1/host/sample/a2a/invoke",
    tag: "Conformance seams",
    summary: "Drive the a2a.invoke client against a peer: negotiated version, peer authority (CONFORMANCE_SEAMS)",
  },
];

const A2A_03: Operation[] = [
  { methods: ["post"], path: "/v1/message:send", tag: "A2A 0.3 HTTP+JSON", summary: "SendMessage" },
  {
    methods: ["post"],
    path: "/v1/message:stream",
    tag: "A2A 0.3 HTTP+JSON",
    summary: "SendStreamingMessage (ends at a terminal or input-required state)",
    sse: true,
  },
  { methods: ["get"], path: "/v1/tasks/{id}", tag: "A2A 0.3 HTTP+JSON", summary: "GetTask" },
  { methods: ["post"], path: "/v1/tasks/{id}:cancel", tag: "A2A 0.3 HTTP+JSON", summary: "CancelTask" },
  {
    methods: ["get", "post"],
    path: "/v1/tasks/{id}:subscribe",
    tag: "A2A 0.3 HTTP+JSON",
    summary: "TaskSubscription (open through interrupts, ends at a terminal state)",
    sse: true,
  },
  {
    methods: ["post", "get"],
    path: "/v1/tasks/{id}/pushNotificationConfigs",
    tag: "A2A 0.3 HTTP+JSON",
    summary: "Create / list push notification configs",
  },
  {
    methods: ["get", "delete"],
    path: "/v1/tasks/{id}/pushNotificationConfigs/{configId}",
    tag: "A2A 0.3 HTTP+JSON",
    summary: "Get / delete a push notification config",
  },
  { methods: ["get"], path: "/v1/card", tag: "A2A 0.3 HTTP+JSON", summary: "GetAgentCard" },
];

/** The 1.0 paths; each is also served under `/{tenant}` (the tenant must be the API key's). */
const A2A_10: Operation[] = [
  { methods: ["post"], path: "/message:send", tag: "A2A 1.0 HTTP+JSON", summary: "SendMessage" },
  {
    methods: ["post"],
    path: "/message:stream",
    tag: "A2A 1.0 HTTP+JSON",
    summary: "SendStreamingMessage (ends at a terminal or input-required state)",
    sse: true,
  },
  { methods: ["get"], path: "/tasks", tag: "A2A 1.0 HTTP+JSON", summary: "ListTasks" },
  { methods: ["get"], path: "/tasks/{id}", tag: "A2A 1.0 HTTP+JSON", summary: "GetTask" },
  { methods: ["post"], path: "/tasks/{id}:cancel", tag: "A2A 1.0 HTTP+JSON", summary: "CancelTask" },
  {
    methods: ["get", "post"],
    path: "/tasks/{id}:subscribe",
    tag: "A2A 1.0 HTTP+JSON",
    summary: "SubscribeToTask (open through interrupts, ends at a terminal state)",
    sse: true,
  },
  {
    methods: ["post", "get"],
    path: "/tasks/{taskId}/pushNotificationConfigs",
    tag: "A2A 1.0 HTTP+JSON",
    summary: "Create / list push notification configs",
  },
  {
    methods: ["get", "delete"],
    path: "/tasks/{taskId}/pushNotificationConfigs/{id}",
    tag: "A2A 1.0 HTTP+JSON",
    summary: "Get / delete a push notification config",
  },
  { methods: ["get"], path: "/extendedAgentCard", tag: "A2A 1.0 HTTP+JSON", summary: "GetExtendedAgentCard" },
];

export const DOCUMENTED_OPERATIONS: readonly Operation[] = [
  ...OPENWOP,
  ...OPENWOP_V2,
  ...A2A_03,
  ...A2A_10,
  ...A2A_10.map((op) => ({ ...op, path: `/{tenant}${op.path}` })),
];

const ERROR_SCHEMAS = {
  OpenwopError: {
    type: "object",
    required: ["error", "message"],
    properties: { error: { type: "string" }, message: { type: "string" }, details: { type: "object" } },
  },
  A2A03Error: {
    type: "object",
    required: ["code", "message"],
    properties: { code: { type: "integer" }, message: { type: "string" }, data: {} },
  },
  A2A10Error: {
    type: "object",
    required: ["error"],
    properties: {
      error: {
        type: "object",
        required: ["code", "status", "message"],
        properties: {
          code: { type: "integer" },
          status: { type: "string" },
          message: { type: "string" },
          details: { type: "array" },
        },
      },
    },
  },
};

function steerInConsole(action: string): Operation {
  return { methods: ["post"], path: `/console/api/tasks/{taskId}/${action}`, tag: "Operator console", summary: action };
}

function errorSchemaOf(tag: Tag): string {
  if (tag === "A2A 0.3 HTTP+JSON") return "A2A03Error";
  if (tag === "A2A 1.0 HTTP+JSON") return "A2A10Error";
  return "OpenwopError";
}

function operationObject(op: Operation, method: Method): Record<string, unknown> {
  const params = [...op.path.matchAll(/\{([a-zA-Z]+)\}/g)].map((m) => ({
    name: m[1],
    in: "path",
    required: true,
    schema: { type: "string" },
  }));
  const json = { "application/json": { schema: { type: "object" } } };
  const ok = op.sse
    ? {
        description: "A stream of Server-Sent Events",
        content: { "text/event-stream": { schema: { type: "string" } } },
      }
    : op.text
      ? { description: "OK", content: { "text/plain": { schema: { type: "string" } } } }
      : { description: "OK", content: json };
  return {
    tags: [op.tag],
    summary: op.summary,
    operationId: `${method}${op.path.replace(/[^A-Za-z0-9]+(.)?/g, (_m, c: string | undefined) => (c ? c.toUpperCase() : ""))}`,
    ...(params.length > 0 ? { parameters: params } : {}),
    ...(method === "post" ? { requestBody: { required: false, content: json } } : {}),
    responses: {
      "200": ok,
      default: {
        description: "An error in this binding's shape",
        content: { "application/json": { schema: { $ref: `#/components/schemas/${errorSchemaOf(op.tag)}` } } },
      },
    },
    ...(op.public ? { security: [] } : {}),
  };
}

/** `auth`: the configured ways in (the authenticator's description); none (auth off) declares no scheme. */
export function openApiDocument(options: {
  publicUrl: string;
  version: string;
  auth: Pick<AuthDescription, "schemes" | "requirements">;
}): Record<string, unknown> {
  const paths: Record<string, Record<string, unknown>> = {};
  for (const op of DOCUMENTED_OPERATIONS) {
    const item = (paths[op.path] ??= {});
    for (const method of op.methods) item[method] = operationObject(op, method);
  }
  return {
    openapi: "3.1.0",
    info: {
      title: "openwop-a2a-host REST surface",
      version: options.version,
      description:
        "OpenWOP runs and interrupts, discovery, the operator console API, and A2A HTTP+JSON (0.3 and 1.0, A2A-Version picks).",
    },
    servers: [{ url: options.publicUrl }],
    tags: [...new Set(DOCUMENTED_OPERATIONS.map((o) => o.tag))].map((name) => ({ name })),
    paths,
    components: { schemas: ERROR_SCHEMAS, securitySchemes: options.auth.schemes },
    security: options.auth.requirements,
  };
}
