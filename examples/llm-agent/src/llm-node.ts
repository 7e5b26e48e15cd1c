import { HandlerError, type ArtifactChunk, type NodeHttpClient, type NodeKind } from "openwop-a2a-host";

/** An `llm` node as a definition writes it. */
export interface LlmNode {
  kind: "llm";
  id: string;
  title?: string;
  /** The instructions sent with every prompt. */
  system?: string;
  /** The prompt; by default the caller's text. */
  prompt?: string;
  /** The streamed artifact's name (default `answer`). */
  artifact?: string;
}

/** What the kind's executor calls the model with: a client through the host's egress guard. */
interface LlmServices {
  http: NodeHttpClient;
}

/**
 * The `llm` node kind: sends the prompt to a model that streams its answer as server-sent events
 * (`data: {"token": "..."}` events, then `data: [DONE]`), and streams each token on to the caller as an artifact
 * chunk, committed before the next is read. The node's output is the whole text.
 *
 * The model is called through the host's HTTP client for node kinds, so its URL passes the host's egress guard:
 * https and public addresses, or the private services listed in HTTP_NODE_PRIVATE_HOSTS.
 */
export function llmNodeKind(options: { modelUrl: string }): NodeKind<LlmNode, LlmServices> {
  return {
    kind: "llm",
    schema: {
      type: "object",
      additionalProperties: false,
      required: ["kind", "id"],
      properties: {
        kind: { const: "llm" },
        id: { $ref: "#/$defs/Id" },
        title: { $ref: "#/$defs/Title" },
        system: { type: "string" },
        prompt: { type: "string", minLength: 1 },
        artifact: { type: "string", minLength: 1 },
      },
    },
    check: (node) =>
      node.prompt?.trim() === ""
        ? `node "${node.id}": prompt is blank (leave it out to send the caller's text)`
        : undefined,
    createServices: (host) => ({ services: { http: host.httpClient({ accept: "text/event-stream" }) } }),
    executor: ({ http }) => ({
      // The model is outside this host: node.started is stored before it is called, and the call runs outside the lock.
      step: (node, run) =>
        run.effect(async ({ signal, idempotencyKey, emitArtifactChunk }) => {
          const prompt = node.prompt ?? run.input.text;
          const response = await http.stream({
            method: "POST",
            url: options.modelUrl,
            headers: { "content-type": "application/json", "idempotency-key": idempotencyKey },
            body: JSON.stringify({ system: node.system ?? "", prompt }),
            signal,
          });
          if (response.status !== 200) {
            for await (const _ of response.text); // read to the end, so the connection goes back to the pool
            throw new HandlerError("model_error", `the model answered HTTP ${response.status}`, response.status >= 500);
          }
          const artifactId = `${node.id}.${node.artifact ?? "answer"}`;
          const chunks = new ChunkStream(artifactId, node.artifact ?? "answer", emitArtifactChunk);
          for await (const token of tokensOf(response.text)) await chunks.add(token);
          await chunks.end();
          return { output: { text: chunks.text, tokens: chunks.count } };
        }),
    }),
    view: { title: () => "ask the model", label: () => "llm (streamed)" },
  };
}

/**
 * Turns tokens into artifact chunks, one behind: a token is sent once the next has come, so the last one can carry
 * `lastChunk: true` (the caller's stream then knows the artifact is whole).
 */
class ChunkStream {
  text = "";
  count = 0;
  private held: string | undefined;

  constructor(
    private readonly artifactId: string,
    private readonly name: string,
    private readonly emit: (chunk: ArtifactChunk) => Promise<void>,
  ) {}

  async add(token: string): Promise<void> {
    if (this.held !== undefined) await this.send(this.held, false);
    this.held = token;
    this.text += token;
  }

  async end(): Promise<void> {
    if (this.held !== undefined) await this.send(this.held, true);
    this.held = undefined;
  }

  private async send(token: string, lastChunk: boolean): Promise<void> {
    await this.emit({
      artifactId: this.artifactId,
      name: this.name,
      parts: [{ kind: "text", text: token }],
      append: this.count > 0,
      lastChunk,
    });
    this.count++;
  }
}

/** The tokens of a server-sent event stream of `{"token": "..."}` data lines, until `[DONE]`. */
async function* tokensOf(text: AsyncIterable<string>): AsyncGenerator<string> {
  let buffer = "";
  for await (const piece of text) {
    buffer += piece.replace(/\r\n/g, "\n");
    let end: number;
    while ((end = buffer.indexOf("\n\n")) >= 0) {
      const event = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      const data = event
        .split("\n")
        .filter((line) => line.startsWith("data:"))
        .map((line) => line.slice(5).trim())
        .join("\n");
      if (data === "[DONE]") return;
      if (!data) continue;
      const token = (JSON.parse(data) as { token?: unknown }).token;
      if (typeof token !== "string") throw new HandlerError("model_error", "the model sent an event without a token");
      yield token;
    }
  }
  throw new HandlerError("model_error", "the model's stream ended before [DONE]", true);
}
