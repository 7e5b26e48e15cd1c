// MongoDB wire protocol framing: splitting a TCP byte stream into messages, parsing OP_MSG
// (body section plus kind-1 document sequences) and legacy OP_QUERY (still used by drivers
// for the first hello/isMaster of a connection), and encoding OP_MSG / OP_REPLY responses.
//
// Every message starts with a 16-byte header: messageLength, requestID, responseTo, opCode
// (little-endian int32s).

import { decodeDocument, encodeDocument, type Doc } from "./bson-values.js";
import { CommandError, ErrorCode } from "./errors.js";

export const OP_REPLY = 1;
export const OP_QUERY = 2004;
export const OP_COMPRESSED = 2012;
export const OP_MSG = 2013;

export const MSG_CHECKSUM_PRESENT = 1 << 0;
export const MSG_MORE_TO_COME = 1 << 1;
export const MSG_EXHAUST_ALLOWED = 1 << 16;
/** Flag bits 0-15 are "required": a receiver must reject bits it does not know. */
const MSG_KNOWN_REQUIRED_BITS = MSG_CHECKSUM_PRESENT | MSG_MORE_TO_COME;

const HEADER_SIZE = 16;

export interface MessageHeader {
  readonly messageLength: number;
  readonly requestId: number;
  readonly responseTo: number;
  readonly opCode: number;
}

export type Request =
  | { readonly kind: "msg"; readonly header: MessageHeader; readonly flags: number; readonly body: Doc }
  | {
      readonly kind: "query";
      readonly header: MessageHeader;
      readonly fullCollectionName: string;
      readonly query: Doc;
    };

/** The stream cannot be trusted any more; the connection must be closed. */
export class ProtocolError extends Error {
  override name = "ProtocolError";
}

/** Splits a byte stream into whole messages (TCP may deliver them in pieces or together). */
export class MessageFramer {
  private chunks: Buffer[] = [];
  private buffered = 0;

  constructor(private readonly maxMessageSize: number) {}

  push(chunk: Buffer): Buffer[] {
    this.chunks.push(chunk);
    this.buffered += chunk.length;
    const messages: Buffer[] = [];
    while (this.buffered >= 4) {
      const head = this.peek(4);
      const length = head.readInt32LE(0);
      if (length < HEADER_SIZE || length > this.maxMessageSize) {
        throw new ProtocolError(`invalid message length ${length}`);
      }
      if (this.buffered < length) break;
      messages.push(this.take(length));
    }
    return messages;
  }

  private peek(n: number): Buffer {
    if ((this.chunks[0] as Buffer).length < n) this.chunks = [Buffer.concat(this.chunks)];
    return (this.chunks[0] as Buffer).subarray(0, n);
  }

  private take(n: number): Buffer {
    const all = this.chunks.length === 1 ? (this.chunks[0] as Buffer) : Buffer.concat(this.chunks);
    const message = all.subarray(0, n);
    const rest = all.subarray(n);
    this.chunks = rest.length > 0 ? [rest] : [];
    this.buffered = rest.length;
    return message;
  }
}

export function readHeader(message: Buffer): MessageHeader {
  return {
    messageLength: message.readInt32LE(0),
    requestId: message.readInt32LE(4),
    responseTo: message.readInt32LE(8),
    opCode: message.readInt32LE(12),
  };
}

function readCString(buffer: Buffer, start: number, end: number): { value: string; next: number } {
  const zero = buffer.indexOf(0, start);
  if (zero < 0 || zero >= end) throw new CommandError(ErrorCode.InvalidBSON, "unterminated string in message");
  return { value: buffer.toString("utf8", start, zero), next: zero + 1 };
}

/** Decodes the BSON document at `start`, checking it lies within `end`. */
function readDocument(buffer: Buffer, start: number, end: number): { doc: Doc; next: number } {
  if (start + 4 > end) throw new CommandError(ErrorCode.InvalidBSON, "truncated BSON document in message");
  const size = buffer.readInt32LE(start);
  if (size < 5 || start + size > end)
    throw new CommandError(ErrorCode.InvalidBSON, `invalid BSON document size ${size} in message`);
  try {
    return { doc: decodeDocument(buffer.subarray(start, start + size)), next: start + size };
  } catch (error) {
    throw new CommandError(ErrorCode.InvalidBSON, `invalid BSON in message: ${(error as Error).message}`);
  }
}

/**
 * Parses an OP_MSG or OP_QUERY message. Malformed content throws a CommandError (answered as
 * an error reply to that request); other opcodes return undefined.
 */
export function parseRequest(message: Buffer): Request | undefined {
  const header = readHeader(message);
  if (header.opCode === OP_MSG) return parseOpMsg(message, header);
  if (header.opCode === OP_QUERY) return parseOpQuery(message, header);
  return undefined;
}

function parseOpMsg(message: Buffer, header: MessageHeader): Request {
  const flags = message.readUInt32LE(HEADER_SIZE);
  const unknownRequired = flags & 0xffff & ~MSG_KNOWN_REQUIRED_BITS;
  if (unknownRequired !== 0)
    throw new CommandError(ErrorCode.BadValue, `Unrecognized required flags in OP_MSG: ${unknownRequired}`);
  // The optional CRC-32C checksum trails the sections; it is not verified (TCP on loopback).
  const end = message.length - (flags & MSG_CHECKSUM_PRESENT ? 4 : 0);
  let position = HEADER_SIZE + 4;
  let body: Doc | undefined;
  const sequences: { identifier: string; docs: Doc[] }[] = [];

  while (position < end) {
    const kind = message.readUInt8(position);
    position += 1;
    if (kind === 0) {
      if (body) throw new CommandError(40430, "Multiple body sections in message");
      const { doc, next } = readDocument(message, position, end);
      body = doc;
      position = next;
    } else if (kind === 1) {
      // Kind 1: int32 size (including itself), cstring identifier, then BSON documents.
      const size = message.readInt32LE(position);
      const sectionEnd = position + size;
      if (size < 5 || sectionEnd > end)
        throw new CommandError(ErrorCode.InvalidBSON, "invalid document sequence size in OP_MSG");
      const identifier = readCString(message, position + 4, sectionEnd);
      const docs: Doc[] = [];
      let cursor = identifier.next;
      while (cursor < sectionEnd) {
        const { doc, next } = readDocument(message, cursor, sectionEnd);
        docs.push(doc);
        cursor = next;
      }
      sequences.push({ identifier: identifier.value, docs });
      position = sectionEnd;
    } else {
      throw new CommandError(40432, `Unknown section kind ${kind}`);
    }
  }
  if (!body) throw new CommandError(40587, "OP_MSG messages must have a body");
  // A document sequence is the same as an array field of the body ({insert: "c", documents: [...]}).
  for (const { identifier, docs } of sequences) {
    if (Object.hasOwn(body, identifier))
      throw new CommandError(40431, `Duplicate field name in OP_MSG document sequence and body: ${identifier}`);
    body[identifier] = docs;
  }
  return { kind: "msg", header, flags, body };
}

function parseOpQuery(message: Buffer, header: MessageHeader): Request {
  // flags int32, fullCollectionName cstring, numberToSkip int32, numberToReturn int32, query.
  const name = readCString(message, HEADER_SIZE + 4, message.length);
  const { doc } = readDocument(message, name.next + 8, message.length);
  return { kind: "query", header, fullCollectionName: name.value, query: doc };
}

let nextResponseId = 1;

function header(buffer: Buffer, responseTo: number, opCode: number): void {
  buffer.writeInt32LE(buffer.length, 0);
  buffer.writeInt32LE(nextResponseId, 4);
  nextResponseId = nextResponseId >= 0x7fffffff ? 1 : nextResponseId + 1;
  buffer.writeInt32LE(responseTo, 8);
  buffer.writeInt32LE(opCode, 12);
}

export function encodeOpMsg(responseTo: number, body: Doc, flags = 0): Buffer {
  const bson = encodeDocument(body);
  const buffer = Buffer.alloc(HEADER_SIZE + 4 + 1 + bson.length);
  header(buffer, responseTo, OP_MSG);
  buffer.writeUInt32LE(flags, HEADER_SIZE); // flags (moreToCome in an exhaust stream)
  buffer.writeUInt8(0, HEADER_SIZE + 4); // section kind 0: body
  buffer.set(bson, HEADER_SIZE + 5);
  return buffer;
}

/** OP_REPLY answering an OP_QUERY command: a single document, no cursor. */
export function encodeOpReply(responseTo: number, doc: Doc): Buffer {
  const bson = encodeDocument(doc);
  const buffer = Buffer.alloc(HEADER_SIZE + 20 + bson.length);
  header(buffer, responseTo, OP_REPLY);
  buffer.writeInt32LE(8, HEADER_SIZE); // responseFlags: AwaitCapable, as mongod sets it
  buffer.writeBigInt64LE(0n, HEADER_SIZE + 4); // cursorID
  buffer.writeInt32LE(0, HEADER_SIZE + 12); // startingFrom
  buffer.writeInt32LE(1, HEADER_SIZE + 16); // numberReturned
  buffer.set(bson, HEADER_SIZE + 20);
  return buffer;
}
