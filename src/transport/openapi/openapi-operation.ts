/** One documented REST operation (openapi-document.ts renders them). */
export type Method = "get" | "post" | "delete" | "head";

export interface Operation {
  methods: Method[];
  path: string;
  tag: Tag;
  summary: string;
  /** Answers `text/event-stream` instead of JSON. */
  sse?: boolean;
  /** Needs no API key. */
  public?: boolean;
  /** Answers plain text. */
  text?: boolean;
}

export type Tag =
  | "OpenWOP runs"
  | "OpenWOP 2"
  | "OpenWOP interrupts"
  | "Discovery"
  | "Operator console"
  | "Conformance seams"
  | "Steering"
  | "Host events"
  | "A2A 0.3 HTTP+JSON"
  | "A2A 1.0 HTTP+JSON";
