import type { DescMessage, JsonValue } from "@bufbuild/protobuf";

/**
 * Unknown fields in ProtoJSON input are ignored (A2A 1.0 §5.7), everything else is read strictly: this drops
 * the members no field of the schema names (by JSON or proto name), at every level, so the strict reader
 * that follows still refuses wrong types and unknown enum names (`ignoreUnknownFields` would silently drop
 * those too, turning a bogus filter into no filter). Well-known types (Struct, Value, Timestamp...) have
 * JSON of their own and are left as they are. The walk keeps its own stack. The input is not modified.
 */
export function withoutUnknownFields(schema: DescMessage, json: JsonValue): JsonValue {
  const root = { value: json };
  const pending: Array<{ holder: Record<string, JsonValue> | JsonValue[]; key: string | number; schema: DescMessage }> =
    [{ holder: root as unknown as Record<string, JsonValue>, key: "value", schema }];
  while (pending.length > 0) {
    const { holder, key, schema: desc } = pending.pop()!;
    const value = (holder as Record<string | number, JsonValue>)[key];
    if (!isObject(value) || desc.typeName.startsWith("google.protobuf.")) continue;
    const kept: Record<string, JsonValue> = {};
    for (const [name, member] of Object.entries(value)) {
      const field = desc.fields.find((f) => f.jsonName === name || f.name === name);
      if (!field) continue;
      kept[name] = member;
      if (field.fieldKind === "message") pending.push({ holder: kept, key: name, schema: field.message });
      else if (field.fieldKind === "list" && field.listKind === "message" && Array.isArray(member)) {
        const items = [...member];
        kept[name] = items;
        items.forEach((_, i) => pending.push({ holder: items, key: i, schema: field.message }));
      } else if (field.fieldKind === "map" && field.mapKind === "message" && isObject(member)) {
        const entries = { ...member };
        kept[name] = entries;
        for (const entry of Object.keys(entries)) pending.push({ holder: entries, key: entry, schema: field.message });
      }
    }
    (holder as Record<string | number, JsonValue>)[key] = kept;
  }
  return root.value;
}

function isObject(value: unknown): value is Record<string, JsonValue> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
