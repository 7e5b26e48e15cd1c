// BSON values as the server keeps them (MongoDB's rules for comparing them are bson-compare.ts).
//
// Documents are decoded with `promoteValues: false`, so numbers stay Int32 / Double / Long /
// Decimal128 wrappers: the server must give back exactly the BSON types it was sent (an int
// stays an int, a double a double), and `$inc` must keep or promote types like mongod does.
// Plain JS numbers still appear in values the server computes itself; they are accepted
// everywhere a number is.

import { BSON } from "mongodb";

export type Doc = { [key: string]: unknown };

const { Long, Int32, Double } = BSON;

const DECODE_OPTIONS = { promoteValues: false, bsonRegExp: true } as const;

export function decodeDocument(bytes: Uint8Array): Doc {
  return BSON.deserialize(bytes, DECODE_OPTIONS) as Doc;
}

export function encodeDocument(doc: Doc): Uint8Array {
  return BSON.serialize(doc);
}

export function bsonSize(doc: Doc): number {
  return BSON.calculateObjectSize(doc);
}

/** Deep copy through a BSON round trip: the copy shares nothing with the original. */
export function cloneDocument(doc: Doc): Doc {
  return decodeDocument(encodeDocument(doc));
}

export function cloneValue(value: unknown): unknown {
  if (value === null || typeof value !== "object") return value;
  return cloneDocument({ v: value }).v;
}

/** True when two documents serialize to the same bytes (same fields, order and BSON types). */
export function sameBytes(a: Doc, b: Doc): boolean {
  return Buffer.from(encodeDocument(a)).equals(encodeDocument(b));
}

export function bsonTag(value: unknown): string | undefined {
  if (value === null || typeof value !== "object") return undefined;
  const tag = (value as { _bsontype?: unknown })._bsontype;
  return typeof tag === "string" ? tag : undefined;
}

/** The fields of an embedded document, in order (a DBRef's as its `$ref`, `$id`, `$db`). */
export function asDocumentEntries(value: unknown): [string, unknown][] {
  if (bsonTag(value) === "DBRef") return Object.entries((value as BSON.DBRef).toJSON() as unknown as Doc);
  return Object.entries(value as Doc);
}

/** A BSON embedded document (not an array, Date, or BSON wrapper class). */
export function isDocument(value: unknown): value is Doc {
  return (
    typeof value === "object" &&
    value !== null &&
    !Array.isArray(value) &&
    !(value instanceof Date) &&
    !(value instanceof Uint8Array) &&
    bsonTag(value) === undefined
  );
}

export function isRegex(value: unknown): value is BSON.BSONRegExp {
  return bsonTag(value) === "BSONRegExp";
}

export function isObjectId(value: unknown): value is BSON.ObjectId {
  return bsonTag(value) === "ObjectId";
}

// ---------------------------------------------------------------------------------------
// Numbers

export type NumericKind = "int" | "long" | "double" | "decimal";

export function numericKind(value: unknown): NumericKind | undefined {
  if (typeof value === "number") return Number.isInteger(value) && Math.abs(value) <= 0x7fffffff ? "int" : "double";
  if (typeof value === "bigint") return "long";
  switch (bsonTag(value)) {
    case "Int32":
      return "int";
    case "Double":
      return "double";
    case "Long":
      return "long";
    case "Decimal128":
      return "decimal";
    default:
      return undefined;
  }
}

export function isNumeric(value: unknown): boolean {
  return numericKind(value) !== undefined;
}

/** The value as a JS number (Longs beyond 2^53 and decimals lose precision). */
export function toDouble(value: unknown): number {
  if (typeof value === "number") return value;
  if (typeof value === "bigint") return Number(value);
  switch (bsonTag(value)) {
    case "Int32":
      return (value as BSON.Int32).value;
    case "Double":
      return (value as BSON.Double).value;
    case "Long":
      return (value as BSON.Long).toNumber();
    case "Decimal128":
      return Number((value as BSON.Decimal128).toString());
    default:
      return Number.NaN;
  }
}

/** The value as an exact integer, when it is one. */
export function toExactBigInt(value: unknown): bigint | undefined {
  if (bsonTag(value) === "Long") return (value as BSON.Long).toBigInt();
  if (typeof value === "bigint") return value;
  const n = toDouble(value);
  return Number.isInteger(n) ? BigInt(n) : undefined;
}

/** Compares two numbers of any BSON numeric type (exactly when both are integers and one is a Long). */
export function compareNumbers(a: unknown, b: unknown): number {
  const x = toDouble(a);
  const y = toDouble(b);
  // MongoDB orders NaN below every other number and equal to itself.
  if (Number.isNaN(x) || Number.isNaN(y)) return Number.isNaN(x) ? (Number.isNaN(y) ? 0 : -1) : 1;
  if (numericKind(a) === "long" || numericKind(b) === "long") {
    // Compare exactly when both are integers: a double cannot hold every int64.
    const bx = toExactBigInt(a);
    const by = toExactBigInt(b);
    if (bx !== undefined && by !== undefined) return bx < by ? -1 : bx > by ? 1 : 0;
  }
  return x < y ? -1 : x > y ? 1 : 0;
}

const INT32_MIN = -(2 ** 31);
const INT32_MAX = 2 ** 31 - 1;
const INT64_MIN = -(2n ** 63n);
const INT64_MAX = 2n ** 63n - 1n;

/** Wraps an integer result the way mongod does: int32 if it fits, else int64, else double. */
function integerResult(value: bigint, widest: NumericKind): unknown {
  if (widest === "int" && value >= BigInt(INT32_MIN) && value <= BigInt(INT32_MAX)) return new Int32(Number(value));
  if (value >= INT64_MIN && value <= INT64_MAX) return Long.fromBigInt(value);
  return new Double(Number(value));
}

function widerKind(a: NumericKind, b: NumericKind): NumericKind {
  const order: NumericKind[] = ["int", "long", "double", "decimal"];
  return order[Math.max(order.indexOf(a), order.indexOf(b))] ?? "double";
}

function arithmetic(a: unknown, b: unknown, op: "add" | "multiply"): unknown {
  const kind = widerKind(numericKind(a) ?? "double", numericKind(b) ?? "double");
  if (kind === "int" || kind === "long") {
    const x = toExactBigInt(a) ?? 0n;
    const y = toExactBigInt(b) ?? 0n;
    return integerResult(op === "add" ? x + y : x * y, kind);
  }
  const result = op === "add" ? toDouble(a) + toDouble(b) : toDouble(a) * toDouble(b);
  if (kind === "decimal") return BSON.Decimal128.fromString(String(result));
  return new Double(result);
}

/** `a + b` with mongod's type promotion (int32 overflow becomes int64, any double makes a double). */
export function addNumbers(a: unknown, b: unknown): unknown {
  return arithmetic(a, b, "add");
}

export function multiplyNumbers(a: unknown, b: unknown): unknown {
  return arithmetic(a, b, "multiply");
}

/** Zero of the same BSON numeric type as `value` (what `$mul` stores into a missing field). */
export function zeroLike(value: unknown): unknown {
  return multiplyNumbers(value, new Int32(0));
}

// ---------------------------------------------------------------------------------------
// Type names and canonical type order

/** The `$type` name of a value (undefined for a missing field). */
export function bsonTypeName(value: unknown): string | undefined {
  if (value === undefined) return undefined;
  if (value === null) return "null";
  if (typeof value === "string") return "string";
  if (typeof value === "boolean") return "bool";
  if (typeof value === "number" || typeof value === "bigint") return numericKind(value);
  if (Array.isArray(value)) return "array";
  if (value instanceof Date) return "date";
  switch (bsonTag(value)) {
    case undefined:
      return "object";
    case "Int32":
      return "int";
    case "Double":
      return "double";
    case "Long":
      return "long";
    case "Decimal128":
      return "decimal";
    case "ObjectId":
      return "objectId";
    case "Binary":
      return "binData";
    case "BSONRegExp":
      return "regex";
    case "Timestamp":
      return "timestamp";
    case "Code":
      return (value as BSON.Code).scope ? "javascriptWithScope" : "javascript";
    case "BSONSymbol":
      return "symbol";
    case "MinKey":
      return "minKey";
    case "MaxKey":
      return "maxKey";
    case "DBRef":
      return "object";
    default:
      return "object";
  }
}

/** mongod's canonical type order (canonicalizeBSONType): values of different types sort by it. */
export function canonicalTypeOrder(value: unknown): number {
  const name = bsonTypeName(value);
  switch (name) {
    case "minKey":
      return -1;
    case undefined:
    case "null":
      return 5; // a missing field compares like null
    case "int":
    case "long":
    case "double":
    case "decimal":
      return 10;
    case "string":
    case "symbol":
      return 15;
    case "object":
      return 20;
    case "array":
      return 25;
    case "binData":
      return 30;
    case "objectId":
      return 35;
    case "bool":
      return 40;
    case "date":
      return 45;
    case "timestamp":
      return 47;
    case "regex":
      return 50;
    case "javascript":
      return 60;
    case "javascriptWithScope":
      return 65;
    case "maxKey":
      return 127;
    default:
      return 100;
  }
}

// ---------------------------------------------------------------------------------------
// Rendering values the way mongod's error messages do (BSONObj::toString)

export function formatValue(value: unknown): string {
  const type = bsonTypeName(value);
  switch (type) {
    case undefined:
      return "undefined";
    case "null":
      return "null";
    case "string":
    case "symbol":
      return JSON.stringify(String(value));
    case "int":
    case "long":
      return String(toExactBigInt(value));
    case "double": {
      const n = toDouble(value);
      return Number.isInteger(n) ? `${n}.0` : String(n);
    }
    case "decimal":
      return `NumberDecimal("${String(value)}")`;
    case "bool":
      return String(value);
    case "date":
      return `new Date(${(value as Date).getTime()})`;
    case "objectId":
      return `ObjectId('${(value as BSON.ObjectId).toHexString()}')`;
    case "array": {
      const items = (value as unknown[]).map(formatValue);
      return items.length === 0 ? "[]" : `[ ${items.join(", ")} ]`;
    }
    case "object":
      return formatDocument(Object.fromEntries(asDocumentEntries(value)));
    case "regex":
      return `/${(value as BSON.BSONRegExp).pattern}/${(value as BSON.BSONRegExp).options}`;
    case "timestamp":
      return `Timestamp(${(value as BSON.Timestamp).t}, ${(value as BSON.Timestamp).i})`;
    case "binData": {
      const bin = value as BSON.Binary;
      if (bin.sub_type === 4 && bin.position === 16) {
        return `UUID("${bin.toUUID().toHexString(true)}")`;
      }
      return `BinData(${bin.sub_type}, ${Buffer.from(bin.value()).toString("hex").toUpperCase()})`;
    }
    case "minKey":
      return "MinKey";
    case "maxKey":
      return "MaxKey";
    default:
      return String(value);
  }
}

export function formatDocument(doc: Doc): string {
  const entries = Object.entries(doc).map(([k, v]) => `${k}: ${formatValue(v)}`);
  return entries.length === 0 ? "{}" : `{ ${entries.join(", ")} }`;
}

// ---------------------------------------------------------------------------------------
// Misc helpers shared by the command implementations

/** MongoDB's truthiness for option values: false, 0 and null/missing are false. */
export function isTruthy(value: unknown): boolean {
  if (value === undefined || value === null || value === false) return false;
  if (isNumeric(value)) return toDouble(value) !== 0;
  return true;
}

/** An integral numeric argument (`limit`, `skip`, `$slice`...), or undefined when not one. */
export function integerValue(value: unknown): number | undefined {
  if (!isNumeric(value)) return undefined;
  const n = toDouble(value);
  return Number.isInteger(n) ? n : undefined;
}

/** Returns a copy of `doc` with `_id` as its first field, as mongod stores documents. */
export function withIdFirst(doc: Doc): Doc {
  if (!Object.hasOwn(doc, "_id") || Object.keys(doc)[0] === "_id") return doc;
  const { _id, ...rest } = doc;
  return { _id, ...rest };
}
