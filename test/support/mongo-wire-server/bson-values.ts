// BSON values as the server keeps them, and MongoDB's rules for comparing them.
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

function bsonTag(value: unknown): string | undefined {
  if (value === null || typeof value !== "object") return undefined;
  const tag = (value as { _bsontype?: unknown })._bsontype;
  return typeof tag === "string" ? tag : undefined;
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
function toExactBigInt(value: unknown): bigint | undefined {
  if (bsonTag(value) === "Long") return (value as BSON.Long).toBigInt();
  if (typeof value === "bigint") return value;
  const n = toDouble(value);
  return Number.isInteger(n) ? BigInt(n) : undefined;
}

function compareNumbers(a: unknown, b: unknown): number {
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
// Comparison

/** Compares strings by Unicode code point, which is the byte order of their UTF-8 (as mongod). */
export function compareStrings(a: string, b: string): number {
  if (a === b) return 0;
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) {
    let x = a.charCodeAt(i);
    let y = b.charCodeAt(i);
    if (x === y) continue;
    // UTF-16 code units order surrogates (U+D800..U+DFFF) before U+E000..U+FFFF, code points do not.
    if (x >= 0xd800 && y >= 0xd800) {
      x = x >= 0xe000 ? x - 0x800 : x + 0x2000;
      y = y >= 0xe000 ? y - 0x800 : y + 0x2000;
    }
    return x < y ? -1 : 1;
  }
  return a.length - b.length < 0 ? -1 : a.length === b.length ? 0 : 1;
}

function sign(n: number): number {
  return n < 0 ? -1 : n > 0 ? 1 : 0;
}

function asDocumentEntries(value: unknown): [string, unknown][] {
  if (bsonTag(value) === "DBRef") return Object.entries((value as BSON.DBRef).toJSON() as unknown as Doc);
  return Object.entries(value as Doc);
}

function compareEntries(a: [string, unknown][], b: [string, unknown][], compareNames: boolean): number {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) {
    const [ka, va] = a[i] as [string, unknown];
    const [kb, vb] = b[i] as [string, unknown];
    const byType = canonicalTypeOrder(va) - canonicalTypeOrder(vb);
    if (byType !== 0) return sign(byType);
    if (compareNames) {
      const byName = compareStrings(ka, kb);
      if (byName !== 0) return byName;
    }
    const byValue = compareValues(va, vb);
    if (byValue !== 0) return byValue;
  }
  return sign(a.length - b.length);
}

function compareBytes(a: Uint8Array, b: Uint8Array): number {
  return sign(
    Buffer.compare(
      Buffer.from(a.buffer, a.byteOffset, a.byteLength),
      Buffer.from(b.buffer, b.byteOffset, b.byteLength),
    ),
  );
}

/**
 * MongoDB's total order over BSON values (BSONElement::woCompare without collation): first by
 * canonical type, then by value. 1, 1.0 and NumberLong(1) are equal; documents compare field by
 * field including field names and order.
 */
export function compareValues(a: unknown, b: unknown): number {
  const byType = canonicalTypeOrder(a) - canonicalTypeOrder(b);
  if (byType !== 0) return sign(byType);
  const type = bsonTypeName(a);
  switch (type) {
    case undefined:
    case "null":
    case "minKey":
    case "maxKey":
      return 0;
    case "int":
    case "long":
    case "double":
    case "decimal":
      return compareNumbers(a, b);
    case "string":
    case "symbol":
      return compareStrings(String(a), String(b));
    case "object":
      return compareEntries(asDocumentEntries(a), asDocumentEntries(b), true);
    case "array":
      return compareEntries(Object.entries(a as unknown[]), Object.entries(b as unknown[]), false);
    case "binData": {
      const x = a as BSON.Binary;
      const y = b as BSON.Binary;
      if (x.position !== y.position) return sign(x.position - y.position);
      if (x.sub_type !== y.sub_type) return sign(x.sub_type - y.sub_type);
      return compareBytes(x.value(), y.value());
    }
    case "objectId":
      return compareStrings((a as BSON.ObjectId).toHexString(), (b as BSON.ObjectId).toHexString());
    case "bool":
      return sign(Number(a) - Number(b));
    case "date":
      return sign((a as Date).getTime() - (b as Date).getTime());
    case "timestamp": {
      const x = a as BSON.Timestamp;
      const y = b as BSON.Timestamp;
      return x.t !== y.t ? sign(x.t - y.t) : sign(x.i - y.i);
    }
    case "regex": {
      const x = a as BSON.BSONRegExp;
      const y = b as BSON.BSONRegExp;
      return compareStrings(x.pattern, y.pattern) || compareStrings(x.options, y.options);
    }
    case "javascript":
    case "javascriptWithScope":
      return compareStrings((a as BSON.Code).code, (b as BSON.Code).code);
    default:
      return 0;
  }
}

/** BSON equality as used by queries, `$addToSet`, `$pull` and unique indexes. */
export function valuesEqual(a: unknown, b: unknown): boolean {
  return compareValues(a, b) === 0;
}

/**
 * A string that is equal for two values exactly when `valuesEqual` says they are equal, for
 * hashing index keys and group keys.
 */
export function canonicalKey(value: unknown): string {
  const type = bsonTypeName(value);
  switch (type) {
    case undefined:
    case "null":
      return "null";
    case "int":
    case "long":
    case "double":
    case "decimal": {
      const exact = toExactBigInt(value);
      if (exact !== undefined && numericKind(value) === "long") return `n:${exact}`;
      const n = toDouble(value);
      if (Object.is(n, -0)) return "n:0";
      return Number.isInteger(n) ? `n:${BigInt(n)}` : `n:${n}`;
    }
    case "string":
    case "symbol":
      return `s:${JSON.stringify(String(value))}`;
    case "object":
      return `o:{${asDocumentEntries(value)
        .map(([k, v]) => `${JSON.stringify(k)}:${canonicalKey(v)}`)
        .join(",")}}`;
    case "array":
      return `a:[${(value as unknown[]).map(canonicalKey).join(",")}]`;
    case "objectId":
      return `oid:${(value as BSON.ObjectId).toHexString()}`;
    case "bool":
      return `b:${String(value)}`;
    case "date":
      return `d:${(value as Date).getTime()}`;
    case "binData": {
      const bin = value as BSON.Binary;
      return `bin:${bin.sub_type}:${Buffer.from(bin.value()).toString("base64")}`;
    }
    case "timestamp":
      return `ts:${(value as BSON.Timestamp).t}:${(value as BSON.Timestamp).i}`;
    case "regex":
      return `re:${JSON.stringify([(value as BSON.BSONRegExp).pattern, (value as BSON.BSONRegExp).options])}`;
    case "javascript":
    case "javascriptWithScope":
      return `code:${JSON.stringify((value as BSON.Code).code)}`;
    default:
      return `${type}`;
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
