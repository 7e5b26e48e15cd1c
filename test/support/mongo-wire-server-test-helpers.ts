// Helpers of the wire-protocol test server's own tests (mongo-wire-server*.test.ts).
import { MongoServerError, type Document, type ObjectId, type UpdateFilter } from "mongodb";
import { expect } from "vitest";

/** Test documents use plain string / number _ids; the driver's typings assume ObjectId. */
export const id = (value: string | number): ObjectId => value as unknown as ObjectId;
/** The driver's update typings reject some valid updates on untyped collections. */
export const ops = (spec: Document): UpdateFilter<Document> => spec;

export async function expectServerError(promise: Promise<unknown>, code: number): Promise<MongoServerError> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error, "expected the operation to fail").toBeInstanceOf(MongoServerError);
  expect((error as MongoServerError).code, (error as Error).message).toBe(code);
  return error as MongoServerError;
}

/** Polls `check` every 100 ms until it holds or `timeoutMs` passed; answers its last result. */
export async function eventually(check: () => Promise<boolean>, timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await check()) return true;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  return check();
}
