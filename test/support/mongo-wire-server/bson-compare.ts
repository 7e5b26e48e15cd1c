// MongoDB's rules for comparing BSON values: the order of sorts, indexes and range queries (across types by
// mongod's canonical type order), equality as queries, `$addToSet`, `$pull` and unique indexes use it, and the
// canonical key equal values share. The values themselves are bson-values.ts.

import type { BSON } from "mongodb";
import {
  asDocumentEntries,
  bsonTypeName,
  canonicalTypeOrder,
  compareNumbers,
  numericKind,
  toDouble,
  toExactBigInt,
} from "./bson-values.js";

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
