import {
  fromJson,
  ScalarType,
  type DescField,
  type DescMessage,
  type JsonObject,
  type JsonValue,
  type MessageShape,
} from "@bufbuild/protobuf";
import { invalidParams } from "../domain/errors.js";
import { A2A_VERSION_QUERY } from "../domain/a2a-version.js";

/**
 * An HTTP+JSON request message from its query string (and path), on every A2A version, as gRPC-transcoding
 * servers read it: each parameter by its JSON name or its proto name (`historyLength` or `history_length`),
 * its value read like ProtoJSON. Nothing is silently dropped: a parameter that names no field, a bad value,
 * a field given twice (in either spelling) or also given by the path is refused with invalid-params (400).
 * `A2A-Version` is the version selector, not a field.
 */
export function messageFromQuery<D extends DescMessage>(
  schema: D,
  query: URLSearchParams,
  fromPath: Record<string, string | undefined>,
): MessageShape<D> {
  const json: JsonObject = {};
  for (const [name, value] of query) {
    if (name.toLowerCase() === A2A_VERSION_QUERY.toLowerCase()) continue;
    const field = schema.fields.find((f) => f.jsonName === name || f.name === name);
    if (!field)
      throw invalidParams(`unknown query parameter "${name}" (${schema.typeName} has no such field)`, { path: name });
    if (fromPath[field.jsonName] !== undefined)
      throw invalidParams(`query parameter "${name}" is given by the path`, { path: name });
    if (json[field.jsonName] !== undefined)
      throw invalidParams(`query parameter "${name}" is given more than once`, { path: name });
    json[field.jsonName] = valueOf(field, name, value);
  }
  for (const [key, value] of Object.entries(fromPath)) if (value !== undefined) json[key] = value;
  try {
    return fromJson(schema, json, { ignoreUnknownFields: false });
  } catch (err) {
    throw invalidParams(
      `the query is not a valid ${schema.typeName}: ${err instanceof Error ? err.message : String(err)}`,
      { type: schema.typeName },
    );
  }
}

/** ProtoJSON reads numbers and enum names from strings; booleans it wants as JSON booleans. */
function valueOf(field: DescField, name: string, value: string): JsonValue {
  if (field.fieldKind !== "scalar" || field.scalar !== ScalarType.BOOL) return value;
  if (value === "true") return true;
  if (value === "false") return false;
  throw invalidParams(`query parameter "${name}" must be true or false (got ${JSON.stringify(value)})`, { path: name });
}
