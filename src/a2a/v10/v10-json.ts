import {
  fromJson,
  toJson,
  type DescMessage,
  type JsonObject,
  type JsonValue,
  type MessageShape,
} from "@bufbuild/protobuf";
import { reflect, type ReflectMessage } from "@bufbuild/protobuf/reflect";
import { invalidParams } from "../../domain/errors.js";
import type * as pb from "../../gen/lf/a2a/v1/a2a_pb.js";
import { withoutUnknownFields } from "../proto-json-unknown-fields.js";

/**
 * The `lf.a2a.v1` message schemas a binding reads and writes: 1.0's generated module, or a draft's that keeps
 * 1.0's shapes (the 1.1 draft's messages are 1.0's plus fields), so one binding table serves both.
 */
export type LfA2ASchemas = Omit<typeof pb, "file_lf_a2a_v1_a2a">;

/**
 * ProtoJSON for the A2A 1.0 JSON bindings (JSON-RPC params/results, HTTP+JSON bodies, SSE events).
 * Reading ignores unknown fields (A2A 1.0 §5.7); wrong types and unknown enum names are refused with
 * invalid-params.
 * Writing follows proto3 JSON, except that repeated and map fields are always present (`[]` / `{}`), so
 * loosely typed clients can iterate `task.artifacts` or `card.skills` without a presence check.
 */

export function readV10<D extends DescMessage>(schema: D, json: unknown, what: string): MessageShape<D> {
  if (typeof json !== "object" || json === null || Array.isArray(json))
    throw invalidParams(`${what} must be a JSON object (${schema.typeName} in ProtoJSON)`);
  try {
    return fromJson(schema, withoutUnknownFields(schema, json as JsonValue), { ignoreUnknownFields: false });
  } catch (err) {
    const detail = err instanceof Error ? err.message : String(err);
    throw invalidParams(`${what} is not a valid ${schema.typeName} in ProtoJSON: ${detail}`, { type: schema.typeName });
  }
}

export function writeV10<D extends DescMessage>(schema: D, message: MessageShape<D>): JsonObject {
  const json = toJson(schema, message) as JsonObject;
  withRepeatedDefaults(reflect(schema, message), json);
  return json;
}

/** Fills in absent repeated/map fields, recursing into set message fields (well-known types excepted). */
function withRepeatedDefaults(message: ReflectMessage, json: JsonObject): void {
  for (const field of message.fields) {
    const value = json[field.jsonName];
    switch (field.fieldKind) {
      case "list":
        if (value === undefined) json[field.jsonName] = [];
        else if (field.listKind === "message" && !isWellKnown(field.message.typeName) && Array.isArray(value)) {
          const list = message.get(field);
          value.forEach((item, i) => {
            const element = list.get(i);
            if (isJsonObject(item) && element !== undefined) withRepeatedDefaults(element as ReflectMessage, item);
          });
        }
        break;
      case "map":
        if (value === undefined) json[field.jsonName] = {};
        else if (field.mapKind === "message" && !isWellKnown(field.message.typeName) && isJsonObject(value)) {
          const map = message.get(field);
          for (const [key, item] of Object.entries(value)) {
            const element = map.get(key); // every map in the A2A proto has string keys
            if (isJsonObject(item) && element !== undefined) withRepeatedDefaults(element as ReflectMessage, item);
          }
        }
        break;
      case "message":
        if (isJsonObject(value) && !isWellKnown(field.message.typeName) && message.isSet(field))
          withRepeatedDefaults(message.get(field), value);
        break;
      default:
        break;
    }
  }
}

function isWellKnown(typeName: string): boolean {
  return typeName.startsWith("google.protobuf.");
}

function isJsonObject(value: unknown): value is JsonObject {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** A page response: `nextPageToken` is "always present, "" on the last page" (proto comment), and so are the sizes. */
export function writeTaskPageV10(schema: DescMessage, message: MessageShape<DescMessage>): JsonObject {
  const json = writeV10(schema, message);
  for (const field of schema.fields) {
    if (json[field.jsonName] !== undefined) continue;
    if (field.jsonName === "nextPageToken") json[field.jsonName] = "";
    if (field.jsonName === "pageSize" || field.jsonName === "totalSize") json[field.jsonName] = 0;
  }
  return json;
}
