/**
 * The OpenTelemetry GenAI conventions our spans follow when asked to (semantic-conventions v1.41.1, the last release
 * holding them before they moved to open-telemetry/semantic-conventions-genai: gen-ai-agent-spans.md "Invoke agent
 * client span", gen-ai-spans.md "Execute tool span"). They are still "Development": the conventions themselves ask
 * instrumentations to emit them only under `OTEL_SEMCONV_STABILITY_OPT_IN=gen_ai_latest_experimental` and to keep
 * what they emitted before otherwise, so without the opt-in every span stays as it was.
 */

/** The `OTEL_SEMCONV_STABILITY_OPT_IN` value (a comma-separated list) that switches our spans to the GenAI conventions. */
export const GEN_AI_OPT_IN = "gen_ai_latest_experimental";

/** Whether `OTEL_SEMCONV_STABILITY_OPT_IN` names the GenAI conventions. */
export function genAiOptedIn(value: string | undefined): boolean {
  return (value ?? "").split(",").some((entry) => entry.trim() === GEN_AI_OPT_IN);
}

/**
 * `gen_ai.provider.name` (required on invoke_agent spans). The conventions call it the discriminator of the telemetry's
 * flavor; no well-known value fits an A2A host, so ours names ours: these spans carry `openwop.*` and `a2a.*` attributes.
 */
export const GEN_AI_PROVIDER = "openwop";

/** Who this host is as an agent: its card's name and version, and its card's URL as the id. */
export interface AgentIdentity {
  name: string;
  id?: string;
  version?: string;
}

/** `invoke_agent {gen_ai.agent.name}`, or `invoke_agent` when no name is at hand (as the conventions say). */
export function invokeAgentSpanName(agentName: string | undefined): string {
  return agentName ? `invoke_agent ${agentName}` : "invoke_agent";
}

/** `execute_tool {gen_ai.tool.name}`. */
export function executeToolSpanName(toolName: string): string {
  return `execute_tool ${toolName}`;
}

/**
 * `error.type`: a low-cardinality class of the failure: a HandlerError's code, a peer call's kind (rpc, http, timeout…),
 * an error class's name, else `_OTHER`. Never the message (it may quote the peer or the handler's input).
 */
export function errorTypeOf(err: unknown): string {
  if (typeof err === "object" && err !== null) {
    const { code, kind, name } = err as { code?: unknown; kind?: unknown; name?: unknown };
    if (typeof code === "string" && code) return code;
    if (typeof kind === "string" && kind) return kind;
    if (typeof name === "string" && name && name !== "Error") return name;
  }
  return "_OTHER";
}

/** A URL as an agent id: scheme, host, port and path; never credentials or a query (a token may ride there). */
export function agentUrlId(url: string): string | undefined {
  try {
    const parsed = new URL(url);
    return `${parsed.protocol}//${parsed.host}${parsed.pathname}`;
  } catch {
    return undefined;
  }
}
