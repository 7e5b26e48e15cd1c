import { context, createContextKey, SpanStatusCode } from "@opentelemetry/api";
import type { A2APeerClient } from "../peer/a2a-peer-client.js";
import { parsePeerEndpoint } from "../peer/peer-endpoint.js";
import { agentUrlId, errorTypeOf, GEN_AI_PROVIDER, invokeAgentSpanName } from "../observability/gen-ai-conventions.js";
import { inSpan, SpanKind } from "../observability/spans.js";
import type { Telemetry } from "../observability/telemetry.js";

/** The agent an a2a.invoke node calls, as its execute_tool span knows it: the configured peer's name, the card's URL. */
export interface PeerAgent {
  name?: string;
  cardUrl: string;
}

const PEER_AGENT = createContextKey("openwop.a2a-invoke.peer-agent");

/** Runs `work` with the called agent known to the peer client's spans below it (the client sees only an endpoint). */
export function withPeerAgent<T>(agent: PeerAgent, work: () => Promise<T>): Promise<T> {
  return context.with(context.active().setValue(PEER_AGENT, agent), work);
}

/**
 * Under the GenAI opt-in, each message sent to a peer (the first send, a forwarded reply; every wire) is an
 * `invoke_agent {peer}` CLIENT span: the peer's server span (its `invoke_agent`, when it is one of ours) descends from it
 * through the wire's own client span, which carries the `traceparent`. After the answer it names the peer's task and
 * conversation, as the peer's own span does. Nothing of the message itself is recorded. Without the opt-in the client is
 * returned as it is.
 */
export function observedPeerClient(client: A2APeerClient, telemetry: Telemetry): A2APeerClient {
  const { tracer } = telemetry;
  if (!tracer || !telemetry.genAi) return client;
  return {
    discover: (ref, signal) => client.discover(ref, signal),
    getTask: (target, taskId, signal) => client.getTask(target, taskId, signal),
    cancelTask: (target, taskId, signal) => client.cancelTask(target, taskId, signal),
    ...(client.subscribe ? { subscribe: client.subscribe.bind(client) } : {}),
    ...(client.canStream ? { canStream: client.canStream.bind(client) } : {}),
    close: () => client.close(),
    send(target, message, signal, push) {
      const agent = context.active().getValue(PEER_AGENT) as PeerAgent | undefined;
      const name = agent?.name ?? target.peer;
      const id = agent ? agentUrlId(agent.cardUrl) : undefined;
      const server = serverOf(target.endpoint);
      const attributes = {
        "gen_ai.operation.name": "invoke_agent",
        "gen_ai.provider.name": GEN_AI_PROVIDER,
        ...(name ? { "gen_ai.agent.name": name } : {}),
        ...(id ? { "gen_ai.agent.id": id } : {}),
        ...(message.contextId ? { "gen_ai.conversation.id": message.contextId } : {}),
        ...server,
      };
      return inSpan(
        tracer,
        invokeAgentSpanName(name),
        attributes,
        async (span) => {
          try {
            const reply = await client.send(target, message, signal, push);
            const answered =
              reply.kind === "task"
                ? { taskId: reply.task.id, contextId: reply.task.contextId }
                : { contextId: reply.message.contextId };
            if (answered.contextId) span?.setAttribute("gen_ai.conversation.id", answered.contextId);
            if (answered.taskId) span?.setAttribute("a2a.task.id", answered.taskId);
            return reply;
          } catch (err) {
            span?.setAttribute("error.type", errorTypeOf(err));
            span?.setStatus({ code: SpanStatusCode.ERROR, message: errorTypeOf(err) });
            throw err;
          }
        },
        SpanKind.CLIENT,
      );
    },
  };
}

/** `server.address` and `server.port` of a recorded endpoint (`<binding>+<version>+<url>`). */
function serverOf(endpoint: string): { "server.address"?: string; "server.port"?: number } {
  try {
    const parsed = new URL(parsePeerEndpoint(endpoint).url);
    const port = parsed.port ? Number(parsed.port) : parsed.protocol === "https:" ? 443 : 80;
    return { "server.address": parsed.hostname, "server.port": port };
  } catch {
    return {};
  }
}
