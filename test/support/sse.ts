/** Reads a text/event-stream response into parsed frames (event name and JSON data). */
export interface SseFrame {
  event?: string;
  id?: string;
  data: unknown;
}

export async function readSse(response: Response, onFrame?: (frame: SseFrame) => boolean | void): Promise<SseFrame[]> {
  const frames: SseFrame[] = [];
  const reader = response.body!.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    buffer += value;
    let end: number;
    while ((end = buffer.indexOf("\n\n")) >= 0) {
      const block = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      const frame: Partial<SseFrame> & { lines: string[] } = { lines: [] };
      for (const line of block.split("\n")) {
        if (line.startsWith(":")) continue;
        const [field, ...rest] = line.split(":");
        const val = rest.join(":").replace(/^ /, "");
        if (field === "data") frame.lines.push(val);
        else if (field === "event") frame.event = val;
        else if (field === "id") frame.id = val;
      }
      if (frame.lines.length === 0) continue;
      const parsed: SseFrame = {
        data: JSON.parse(frame.lines.join("\n")),
        ...(frame.event ? { event: frame.event } : {}),
        ...(frame.id ? { id: frame.id } : {}),
      };
      frames.push(parsed);
      if (onFrame?.(parsed) === true) {
        await reader.cancel();
        return frames;
      }
    }
  }
  return frames;
}
