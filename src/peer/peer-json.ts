/**
 * Reading a peer's JSON, whatever the version: the body parsed and bounded in depth, ProtoJSON read into a proto
 * message (unknown fields ignored), and the error a malformed answer gives.
 */
import {
  fromJson,
  toJson,
  type DescMessage,
  type JsonObject,
  type JsonValue,
  type MessageShape,
} from "@bufbuild/protobuf";
import { nestingDepth, WIRE_MAX_DEPTH } from "../domain/json-input.js";
import { PeerCallError } from "./peer-http-client.js";

/** The most an int32 history length can say: every message (1.0 reads an unset length as "the server's default"). */
export const ALL_HISTORY = 2_147_483_647;

export function invalidAnswer(what: string): PeerCallError {
  return new PeerCallError(`the remote agent sent an invalid ${what}`, "protocol", false);
}

/** A peer's JSON body (JSON-RPC envelope, ProtoJSON): parsed, and no deeper than the wire may carry back out. */
export function parsePeerJson(text: string, what: string): unknown {
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    throw invalidAnswer(`${what} (not JSON)`);
  }
  // A peer's answer is stored in our task: nothing deeper than the wire can carry back out.
  if (nestingDepth(body, WIRE_MAX_DEPTH) > WIRE_MAX_DEPTH)
    throw invalidAnswer(`${what} (nested deeper than ${WIRE_MAX_DEPTH} levels)`);
  return body;
}

/** ProtoJSON of a request (JSON-RPC params, HTTP+JSON bodies). */
export function protoJson<D extends DescMessage>(schema: D, message: MessageShape<D>): JsonObject {
  return toJson(schema, message) as JsonObject;
}

/** A peer's ProtoJSON as a proto message; unknown fields are ignored, a value of the wrong type is invalid. */
export function readProtoJson<D extends DescMessage>(schema: D, json: unknown, what: string): MessageShape<D> {
  if (typeof json !== "object" || json === null || Array.isArray(json))
    throw invalidAnswer(`${what} (not a JSON object)`);
  try {
    return fromJson(schema, json as JsonValue, { ignoreUnknownFields: true });
  } catch {
    throw invalidAnswer(`${what} (not ${schema.typeName} in ProtoJSON)`);
  }
}
