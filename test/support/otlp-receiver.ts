import http from "node:http";
import type { AddressInfo } from "node:net";

/** One span as OTLP/HTTP JSON carries it, with the `service.name` of the resource that sent it. */
export interface ReceivedSpan {
  service: string;
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  /** 1 INTERNAL, 2 SERVER, 3 CLIENT. */
  kind: number;
  attributes: Array<{ key: string; value: Record<string, unknown> }>;
}

export const SPAN_KIND = { INTERNAL: 1, SERVER: 2, CLIENT: 3 } as const;

/** An OTLP/HTTP (JSON) trace receiver on loopback, shared by several hosts: what a collector would get. */
export class OtlpReceiver {
  readonly spans: ReceivedSpan[] = [];
  private readonly server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      if (req.url === "/v1/traces") {
        type Body = {
          resourceSpans: Array<{
            resource?: { attributes?: ReceivedSpan["attributes"] };
            scopeSpans: Array<{ spans: Array<Omit<ReceivedSpan, "service">> }>;
          }>;
        };
        const body = JSON.parse(Buffer.concat(chunks).toString("utf8")) as Body;
        for (const rs of body.resourceSpans) {
          const service = String(
            Object.values(rs.resource?.attributes?.find((a) => a.key === "service.name")?.value ?? {})[0] ?? "",
          );
          for (const ss of rs.scopeSpans) for (const span of ss.spans) this.spans.push({ ...span, service });
        }
      }
      res.writeHead(200, { "content-type": "application/json" }).end("{}");
    });
  });

  async start(): Promise<string> {
    await new Promise<void>((resolve) => this.server.listen(0, "127.0.0.1", resolve));
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  inTrace(traceId: string): ReceivedSpan[] {
    return this.spans.filter((s) => s.traceId === traceId);
  }

  stop(): Promise<void> {
    return new Promise((resolve) => this.server.close(() => resolve()));
  }
}

/** A span's attribute value (whatever its OTLP type), or undefined. */
export function attributeOf(span: ReceivedSpan, key: string): unknown {
  const value = span.attributes.find((a) => a.key === key)?.value;
  if (!value) return undefined;
  const raw = Object.values(value)[0];
  // OTLP JSON sends 64-bit integers as strings.
  return "intValue" in value ? Number(raw) : raw;
}
