// The `http` node's pure parts: the request body it sends, the answer it accepts (a HandlerResult) and the
// error detail it keeps, its load-time checks, its settings, and Retry-After in the one retry policy.
import { inspect } from "node:util";
import { describe, expect, it } from "vitest";
import { decideRetry, retryAfterMs } from "../../src/domain/retry-policy.js";
import { HandlerError, type HttpNode, type WorkflowDefinition } from "../../src/workflows/workflow-types.js";
import { httpNodeProblem, httpNodeRequestBody } from "../../src/engine/nodes/http/http-node.js";
import { errorDetailOf, parseHttpNodeAnswer } from "../../src/engine/nodes/http/http-node-answer.js";
import { loadHttpNodeSettings, workflowVariableValues } from "../../src/engine/nodes/node-egress-settings.js";
import type { TaskContext } from "../../src/machine/task-context.js";

const WHERE = "https://svc.example.com";

function errorOf(fn: () => unknown): HandlerError {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(HandlerError);
    return err as HandlerError;
  }
  throw new Error("expected a HandlerError");
}

describe("the request body", () => {
  const node: HttpNode = { kind: "http", id: "call", url: "https://svc.example.com/run", params: { tone: "formal" } };
  const workflow: WorkflowDefinition = {
    id: "flow",
    name: "Flow",
    description: "",
    nodes: [
      { kind: "task", id: "draft", handler: "echo" },
      node,
      { kind: "approval", id: "gate", title: "OK?", onRefine: { goto: "call" } },
    ],
  };
  const request = {
    messageId: "m1",
    role: "user" as const,
    parts: [
      { kind: "text" as const, text: "hello" },
      { kind: "data" as const, data: { n: 1 } },
      { kind: "file" as const, file: { uri: "https://files.example.com/a.pdf", mimeType: "application/pdf" } },
    ],
  };
  const context = {
    taskId: "task-1",
    contextId: "ctx-1",
    workflowId: "flow",
    cursor: "call",
    nodeStarted: true,
    attempt: 2,
    visits: { call: 1 },
    outputs: { draft: { text: "d" }, gate: { action: "refine", refineFeedback: { text: "shorter" } } },
    request,
    lastUserMessage: {
      messageId: "m2",
      role: "user" as const,
      parts: [{ kind: "text" as const, text: "shorter please" }],
      metadata: { via: "console" },
    },
    history: [],
    historyCount: 2,
  } as unknown as TaskContext;

  it("carries the ids, the idempotency key, the input with all its parts, the newest message, params, outputs and feedback", () => {
    expect(httpNodeRequestBody(node, context, workflow)).toEqual({
      taskId: "task-1",
      runId: "task-1",
      contextId: "ctx-1",
      workflowId: "flow",
      nodeId: "call",
      attempt: 2,
      idempotencyKey: "task-1:call:2",
      input: { text: "hello", data: { n: 1 }, parts: request.parts },
      message: { messageId: "m2", parts: [{ kind: "text", text: "shorter please" }], metadata: { via: "console" } },
      params: { tone: "formal" },
      outputs: { draft: { text: "d" }, gate: { action: "refine", refineFeedback: { text: "shorter" } } },
      feedback: ["shorter"],
    });
  });

  it("sends empty params when the node has none", () => {
    expect(httpNodeRequestBody({ ...node, params: undefined } as HttpNode, context, workflow).params).toEqual({});
  });
});

describe("the answer", () => {
  it("accepts an empty body, output only, and artifacts of every part kind", () => {
    expect(parseHttpNodeAnswer("", WHERE)).toEqual({});
    expect(parseHttpNodeAnswer("{}", WHERE)).toEqual({});
    expect(parseHttpNodeAnswer('{"output": [1, 2]}', WHERE)).toEqual({ output: [1, 2] });
    expect(parseHttpNodeAnswer('{"output": null}', WHERE)).toEqual({ output: null });
    const artifacts = [
      {
        artifactId: "a",
        name: "report",
        description: "d",
        parts: [{ kind: "text", text: "t", metadata: { lang: "en" } }],
      },
      {
        name: "files",
        parts: [
          { kind: "file", file: { bytes: "aGk=", mimeType: "text/plain", name: "hi.txt" } },
          { kind: "data", data: { x: 1 } },
        ],
      },
    ];
    expect(parseHttpNodeAnswer(JSON.stringify({ output: { ok: true }, artifacts }), WHERE)).toEqual({
      output: { ok: true },
      artifacts,
    });
  });

  it("refuses what is not a HandlerResult, saying where and why, with the stable code", () => {
    const cases: [string, string][] = [
      ["not json", "the body is not JSON"],
      ["[1]", "the body must be a JSON object {output?, artifacts?}"],
      ['{"result": 1}', 'unknown field "result" (expected output, artifacts)'],
      ['{"artifacts": {}}', "artifacts must be an array"],
      ['{"artifacts": [{"parts": [{"kind": "text", "text": "t"}]}]}', "artifacts[0].name must be a non-empty string"],
      ['{"artifacts": [{"name": "a", "parts": []}]}', "artifacts[0].parts must be a non-empty array"],
      [
        '{"artifacts": [{"name": "a", "artifactId": 3, "parts": [{"kind": "text", "text": "t"}]}]}',
        "artifacts[0].artifactId must be a non-empty string",
      ],
      [
        '{"artifacts": [{"name": "a", "parts": [{"kind": "text", "text": 1}]}]}',
        "artifacts[0].parts[0].text must be a string",
      ],
      [
        '{"artifacts": [{"name": "a", "parts": [{"kind": "data", "data": [1]}]}]}',
        "artifacts[0].parts[0].data must be an object",
      ],
      [
        '{"artifacts": [{"name": "a", "parts": [{"kind": "file", "file": {"name": "x"}}]}]}',
        "artifacts[0].parts[0].file needs uri or bytes",
      ],
      [
        '{"artifacts": [{"name": "a", "parts": [{"kind": "text", "text": "t", "metadata": 1}]}]}',
        "artifacts[0].parts[0].metadata must be an object",
      ],
    ];
    for (const [body, reason] of cases) {
      const error = errorOf(() => parseHttpNodeAnswer(body, WHERE));
      expect(error.code, body).toBe("http_bad_response");
      expect(error.message, body).toBe(`${WHERE} answered a malformed result: ${reason}`);
    }
  });
});

describe("the error detail of a 4xx answer", () => {
  it("takes error, error.message, message, detail or title; one line, truncated, secrets redacted", () => {
    expect(errorDetailOf('{"error": "no such account"}')).toBe("no such account");
    expect(errorDetailOf('{"error": {"code": 7, "message": "bad amount"}}')).toBe("bad amount");
    expect(errorDetailOf('{"detail": "Not\\nfound"}')).toBe("Not found");
    expect(errorDetailOf('{"title": "Bad Request"}')).toBe("Bad Request");
    expect(errorDetailOf('{"message": "token abcd1234 is wrong"}', ["abcd1234"])).toBe("token [redacted] is wrong");
    expect(errorDetailOf(JSON.stringify({ message: "x".repeat(500) }))!.length).toBe(201);
    expect(errorDetailOf("<html>oops</html>")).toBeUndefined();
    expect(errorDetailOf('{"error": 3}')).toBeUndefined();
  });
});

describe("load-time checks", () => {
  const node = (fields: Partial<HttpNode>): HttpNode => ({
    kind: "http",
    id: "call",
    url: "https://svc.example.com/x",
    ...fields,
  });

  it("accepts known variables, configured or not, in the url and header values", () => {
    const variables = { SVC_URL: "https://svc.example.com", SVC_TOKEN: undefined };
    expect(
      httpNodeProblem(node({ url: "${SVC_URL}/run", headers: { Authorization: "Bearer ${SVC_TOKEN}" } }), variables),
    ).toBeUndefined();
    expect(httpNodeProblem(node({ url: "https://${SVC_TOKEN}/run" }), variables)).toBeUndefined();
  });

  it("refuses a non-http(s) url, unknown variables and headers the host owns", () => {
    expect(httpNodeProblem(node({ url: "ftp://svc.example.com/x" }), {})).toBe(
      'node "call": url must be an absolute http(s) URL (got "ftp://svc.example.com/x")',
    );
    expect(httpNodeProblem(node({ url: "svc.example.com/x" }), {})).toContain("url must be an absolute http(s) URL");
    expect(httpNodeProblem(node({ url: "${SVC_URL}/x" }), { SVC_URL: "file:///etc" })).toContain(
      "url must be an absolute http(s) URL",
    );
    expect(httpNodeProblem(node({ url: "https://${NOPE}/x" }), {})).toBe(
      'node "call": url refers to ${NOPE}, which is not a variable workflows may use (add NOPE to WORKFLOW_VARIABLES; known: none)',
    );
    expect(httpNodeProblem(node({ headers: { "X-Key": "${NOPE}" } }), { A: "a" })).toBe(
      'node "call": header "X-Key" refers to ${NOPE}, which is not a variable workflows may use (add NOPE to WORKFLOW_VARIABLES; known: A)',
    );
    // Listed but unset, where the url needs it to be absolute: the variable and the fix, not only the raw url.
    expect(httpNodeProblem(node({ url: "${SCORER_URL}/score" }), { SCORER_URL: undefined })).toBe(
      'node "call": url refers to ${SCORER_URL}, listed in WORKFLOW_VARIABLES but not set (set SCORER_URL in the environment; got "${SCORER_URL}/score")',
    );
    for (const name of ["Host", "content-type", "Idempotency-Key", "Transfer-Encoding", "Connection"]) {
      expect(httpNodeProblem(node({ headers: { [name]: "x" } }), {})).toBe(
        `node "call": header "${name}" is set by the host and may not be given`,
      );
    }
  });
});

describe("settings", () => {
  it("has defaults, reads every HTTP_NODE_* variable and WORKFLOW_VARIABLES, and never prints a value", () => {
    const defaults = loadHttpNodeSettings({}, false);
    expect(defaults).toMatchObject({
      timeoutMs: 30_000,
      maxAttempts: 3,
      retryBaseMs: 500,
      retryMaxMs: 10_000,
      maxResponseBytes: 1024 * 1024,
      egress: { allowHttpLoopback: false, allowedPorts: [], allowHosts: [], denyHosts: [], privateHosts: [] },
      variableNames: [],
    });
    const settings = loadHttpNodeSettings(
      {
        HTTP_NODE_TIMEOUT_MS: "5000",
        HTTP_NODE_MAX_ATTEMPTS: "5",
        HTTP_NODE_ALLOWED_PORTS: "8443",
        HTTP_NODE_ALLOW_HOSTS: "*.svc.example.com",
        HTTP_NODE_DENY_HOSTS: "bad.svc.example.com",
        HTTP_NODE_PRIVATE_HOSTS: "sidecar:8080, 10.0.0.0/8:9000",
        HTTP_NODE_ALLOW_LOOPBACK_FOR_TESTS: "true",
        WORKFLOW_VARIABLES: "SVC_URL, SVC_TOKEN,UNSET_ONE",
        SVC_URL: "https://a.svc.example.com",
        SVC_TOKEN: "t0ps3cret",
      },
      false,
    );
    if (typeof settings === "string") throw new Error(settings);
    expect(settings.egress).toEqual({
      allowHttpLoopback: true,
      allowedPorts: [8443],
      allowHosts: ["*.svc.example.com"],
      denyHosts: ["bad.svc.example.com"],
      privateHosts: ["sidecar:8080", "10.0.0.0/8:9000"],
      settings: {
        allowedPorts: "HTTP_NODE_ALLOWED_PORTS",
        allowHosts: "HTTP_NODE_ALLOW_HOSTS",
        denyHosts: "HTTP_NODE_DENY_HOSTS",
        privateHosts: "HTTP_NODE_PRIVATE_HOSTS",
      },
    });
    expect(settings.timeoutMs).toBe(5000);
    expect(settings.maxAttempts).toBe(5);
    expect(workflowVariableValues(settings)).toEqual({
      SVC_URL: "https://a.svc.example.com",
      SVC_TOKEN: "t0ps3cret",
      UNSET_ONE: undefined,
    });
    expect(JSON.stringify(settings)).not.toContain("t0ps3cret");
    expect(inspect(settings, { depth: 10 })).not.toContain("t0ps3cret");
  });

  it("refuses the test-only loopback allowance in production, and bad values", () => {
    expect(loadHttpNodeSettings({ HTTP_NODE_ALLOW_LOOPBACK_FOR_TESTS: "true" }, true)).toBe(
      "HTTP_NODE_ALLOW_LOOPBACK_FOR_TESTS is test-only and is refused when NODE_ENV=production",
    );
    expect(loadHttpNodeSettings({ HTTP_NODE_ALLOW_LOOPBACK_FOR_TESTS: "false" }, true)).not.toBeTypeOf("string");
    const problems = loadHttpNodeSettings(
      {
        HTTP_NODE_TIMEOUT_MS: "0",
        HTTP_NODE_MAX_ATTEMPTS: "11",
        HTTP_NODE_ALLOWED_PORTS: "x",
        WORKFLOW_VARIABLES: "OK,not-a-name",
        HTTP_NODE_RETRY_BASE_MS: "100",
        HTTP_NODE_RETRY_MAX_MS: "50",
      },
      false,
    );
    expect(problems).toBeTypeOf("string");
    for (const name of [
      "HTTP_NODE_TIMEOUT_MS",
      "HTTP_NODE_MAX_ATTEMPTS",
      "HTTP_NODE_ALLOWED_PORTS",
      'WORKFLOW_VARIABLES must be a comma-separated list of environment variable names (got "not-a-name")',
      "HTTP_NODE_RETRY_MAX_MS must not be smaller",
    ]) {
      expect(problems).toContain(name);
    }
  });
});

describe("Retry-After in the retry policy", () => {
  const policy = { baseMs: 100, maxMs: 5_000, maxAttempts: 3, jitter: { min: 1, max: 1 } };

  it("parses delay-seconds and HTTP dates", () => {
    const now = Date.parse("2026-01-01T00:00:00Z");
    expect(retryAfterMs("2", now)).toBe(2000);
    expect(retryAfterMs(" 0 ", now)).toBe(0);
    expect(retryAfterMs("Thu, 01 Jan 2026 00:00:03 GMT", now)).toBe(3000);
    expect(retryAfterMs("Wed, 31 Dec 2025 23:00:00 GMT", now)).toBe(0);
    expect(retryAfterMs("soon", now)).toBeUndefined();
    expect(retryAfterMs(undefined, now)).toBeUndefined();
  });

  it("waits at least what the server asked, up to the policy's maxMs; never shorter than the backoff", () => {
    expect(decideRetry(policy, { retryable: true, retryAfterMs: 2_000 }, 1)).toEqual({ retry: true, delayMs: 2_000 });
    expect(decideRetry(policy, { retryable: true, retryAfterMs: 60_000 }, 1)).toEqual({ retry: true, delayMs: 5_000 });
    expect(decideRetry(policy, { retryable: true, retryAfterMs: 10 }, 2)).toEqual({ retry: true, delayMs: 200 });
    expect(decideRetry(policy, { retryable: true, retryAfterMs: 2_000 }, 3)).toEqual({
      retry: false,
      reason: "max-attempts",
    });
  });
});

describe("production configuration", () => {
  it("refuses HTTP_NODE_ALLOW_LOOPBACK_FOR_TESTS through loadConfig", async () => {
    const { loadConfig } = await import("../../src/config/config.js");
    expect(() => loadConfig({ NODE_ENV: "production", HTTP_NODE_ALLOW_LOOPBACK_FOR_TESTS: "true" })).toThrow(
      /HTTP_NODE_ALLOW_LOOPBACK_FOR_TESTS is test-only and is refused when NODE_ENV=production/,
    );
  });
});
