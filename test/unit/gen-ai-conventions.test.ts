import { describe, expect, it } from "vitest";
import {
  agentUrlId,
  errorTypeOf,
  genAiOptedIn,
  invokeAgentSpanName,
} from "../../src/observability/gen-ai-conventions.js";
import { noteRequest, withRequestNotes, type RequestNotes } from "../../src/observability/request-notes.js";
import { createTelemetry } from "../../src/observability/telemetry.js";
import { HandlerError, type TaskHandler } from "../../src/workflows/workflow-types.js";
import { observedHandlers } from "../../src/observed/observed-egress.js";
import { PeerCallError } from "../../src/peer/peer-http-client.js";

describe("the GenAI conventions opt-in and its small rules", () => {
  it("reads OTEL_SEMCONV_STABILITY_OPT_IN as a comma-separated list naming gen_ai_latest_experimental", () => {
    expect(genAiOptedIn("gen_ai_latest_experimental")).toBe(true);
    expect(genAiOptedIn("http, gen_ai_latest_experimental ,database")).toBe(true);
    expect(genAiOptedIn(undefined)).toBe(false);
    expect(genAiOptedIn("")).toBe(false);
    expect(genAiOptedIn("http/dup")).toBe(false);
    expect(genAiOptedIn("gen_ai_latest_experimental_v2")).toBe(false);
  });

  it("is on only with tracing: the opt-in alone creates no span", async () => {
    const off = await createTelemetry({ env: { OTEL_SEMCONV_STABILITY_OPT_IN: "gen_ai_latest_experimental" } });
    expect(off.tracer).toBeUndefined();
    expect(off.genAi).toBe(false);
    await off.shutdown();
    const on = await createTelemetry({
      env: {
        OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: "http://127.0.0.1:9/v1/traces",
        OTEL_SEMCONV_STABILITY_OPT_IN: "gen_ai_latest_experimental",
      },
    });
    expect(on.genAi).toBe(true);
    const plain = await createTelemetry({
      env: { OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: "http://127.0.0.1:9/v1/traces" },
    });
    expect(plain.genAi).toBe(false);
    await Promise.all([on.shutdown(), plain.shutdown()]);
  });

  it("names spans as the conventions say, with the bare name when no agent name is at hand", () => {
    expect(invokeAgentSpanName("Travel agent")).toBe("invoke_agent Travel agent");
    expect(invokeAgentSpanName(undefined)).toBe("invoke_agent");
  });

  it("error.type is a class of failure, never its message", () => {
    expect(errorTypeOf(new HandlerError("quota_exceeded", "tenant acme used 100 of 100"))).toBe("quota_exceeded");
    expect(errorTypeOf(new PeerCallError("the peer said: secret-token-123 is wrong", "rpc", false))).toBe("rpc");
    expect(errorTypeOf(new TypeError("x is undefined"))).toBe("TypeError");
    expect(errorTypeOf(new Error("plain"))).toBe("_OTHER");
    expect(errorTypeOf("a string")).toBe("_OTHER");
  });

  it("an agent id from a URL keeps no credentials or query", () => {
    expect(agentUrlId("https://user:pass@agent.example:8443/.well-known/agent-card.json?key=abc#x")).toBe(
      "https://agent.example:8443/.well-known/agent-card.json",
    );
    expect(agentUrlId("not a url")).toBeUndefined();
  });

  it("a call's conversation is the one of the task it names first", () => {
    const notes: RequestNotes = {};
    withRequestNotes(notes, () => {
      noteRequest({ invokesAgent: true });
      noteRequest({ taskId: "t1", contextId: "c1" });
      noteRequest({ taskId: "t2", contextId: "c2" });
    });
    expect(notes).toEqual({ invokesAgent: true, taskId: "t1", contextId: "c1" });
    const fromMessage: RequestNotes = {};
    withRequestNotes(fromMessage, () => {
      noteRequest({ contextId: "from-the-message" });
      noteRequest({ taskId: "t3", contextId: "from-the-message" });
    });
    expect(fromMessage).toEqual({ taskId: "t3", contextId: "from-the-message" });
  });
});

describe("handler wrappers keep what the engine reads off a handler", () => {
  const pure: TaskHandler = Object.assign(async () => ({ output: {} }), { pure: true });
  for (const genAi of [false, true]) {
    it(`keeps \`pure\` with tracing on${genAi ? " and the GenAI opt-in" : ""} (a blocking send's one-write path)`, async () => {
      const telemetry = await createTelemetry({
        env: {
          OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: "http://127.0.0.1:9/v1/traces",
          ...(genAi ? { OTEL_SEMCONV_STABILITY_OPT_IN: "gen_ai_latest_experimental" } : {}),
        },
      });
      const wrapped = observedHandlers({ pure, plain: async () => ({ output: {} }) }, telemetry);
      expect(wrapped.pure).not.toBe(pure);
      expect(wrapped.pure?.pure).toBe(true);
      expect(wrapped.plain?.pure).toBeUndefined();
      await telemetry.shutdown();
    });
  }
});
