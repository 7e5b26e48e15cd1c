/**
 * Server-sent events as a peer streams them (JSON-RPC `SendStreamingMessage` / `SubscribeToTask` /
 * `tasks/resubscribe`): events split on a blank line, `data:` lines joined with "\n", comments (`: keepalive`)
 * and other fields ignored. One event's data is capped: a peer cannot make us buffer without bound.
 */
import { PeerCallError } from "./peer-http-client.js";

export async function* sseData(chunks: AsyncIterable<string>, maxEventBytes: number): AsyncGenerator<string> {
  let buffer = "";
  for await (const chunk of chunks) {
    buffer += chunk;
    for (;;) {
      const match = /\r\n\r\n|\n\n|\r\r/.exec(buffer);
      if (!match) break;
      const block = buffer.slice(0, match.index);
      buffer = buffer.slice(match.index + match[0].length);
      const data = block
        .split(/\r\n|\n|\r/)
        .filter((line) => line.startsWith("data:"))
        .map((line) => line.slice(line.startsWith("data: ") ? 6 : 5));
      if (data.length > 0) yield data.join("\n");
    }
    if (buffer.length > maxEventBytes)
      throw new PeerCallError(
        `the remote agent sent a stream event of more than ${maxEventBytes} bytes`,
        "protocol",
        false,
      );
  }
}
