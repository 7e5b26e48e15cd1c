import { invalidParams } from "./errors.js";

/**
 * Small readers for decoding JSON wire input. Each failure names the path and what was expected, so a
 * caller can fix the request without reading our code.
 */
export type JsonObject = Record<string, unknown>;

export function isObject(value: unknown): value is JsonObject {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

export function expectObject(value: unknown, path: string): JsonObject {
  if (!isObject(value)) throw invalidParams(`${path} must be an object`, { path });
  return value;
}

export function onlyKnownFields(value: JsonObject, path: string, known: readonly string[]): void {
  const unknown = Object.keys(value).filter((k) => !known.includes(k));
  if (unknown.length > 0)
    throw invalidParams(`${path} has unknown field${unknown.length > 1 ? "s" : ""}: ${unknown.join(", ")}`, {
      path,
      unknown,
    });
}

export function requiredString(obj: JsonObject, key: string, path: string): string {
  const value = obj[key];
  if (typeof value !== "string" || value.length === 0)
    throw invalidParams(`${path}.${key} must be a non-empty string`, { path: `${path}.${key}` });
  return value;
}

export function optionalString(obj: JsonObject, key: string, path: string): string | undefined {
  const value = obj[key];
  if (value === undefined || value === null) return undefined;
  if (typeof value !== "string") throw invalidParams(`${path}.${key} must be a string`, { path: `${path}.${key}` });
  return value;
}

export function optionalObject(obj: JsonObject, key: string, path: string): JsonObject | undefined {
  const value = obj[key];
  if (value === undefined || value === null) return undefined;
  return expectObject(value, `${path}.${key}`);
}

export function optionalStringArray(obj: JsonObject, key: string, path: string): string[] | undefined {
  const value = obj[key];
  if (value === undefined || value === null) return undefined;
  if (!Array.isArray(value) || value.some((v) => typeof v !== "string"))
    throw invalidParams(`${path}.${key} must be an array of strings`, { path: `${path}.${key}` });
  return value as string[];
}

export function optionalBoolean(obj: JsonObject, key: string, path: string): boolean | undefined {
  const value = obj[key];
  if (value === undefined || value === null) return undefined;
  if (typeof value !== "boolean")
    throw invalidParams(`${path}.${key} must be true or false`, { path: `${path}.${key}` });
  return value;
}

export function optionalNonNegativeInt(obj: JsonObject, key: string, path: string): number | undefined {
  const value = obj[key];
  if (value === undefined || value === null) return undefined;
  if (typeof value !== "number" || !Number.isInteger(value) || value < 0)
    throw invalidParams(`${path}.${key} must be a non-negative integer`, { path: `${path}.${key}` });
  return value;
}
