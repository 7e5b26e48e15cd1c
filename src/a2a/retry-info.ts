import { BinaryWriter, WireType } from "@bufbuild/protobuf/wire";
import type { ConnectDetail, WireError } from "./version-module.js";

/**
 * `google.rpc.RetryInfo` (google/rpc/error_details.proto): how long a refused caller should wait before retrying,
 * beside the ErrorInfo of a limit's refusal. gRPC clients read it from the status details; A2A 1.0's JSON shapes
 * carry it in the same array as the ErrorInfo, in its ProtoJSON form (`retryDelay` a Duration string).
 */
export const RETRY_INFO_TYPE = "type.googleapis.com/google.rpc.RetryInfo";

export interface RetryInfoJson {
  "@type": typeof RETRY_INFO_TYPE;
  retryDelay: string;
}

/** The ProtoJSON RetryInfo of an error that names a retry time, else undefined. */
export function retryInfoJson(err: WireError): RetryInfoJson | undefined {
  return err.retryAfterSeconds === undefined
    ? undefined
    : { "@type": RETRY_INFO_TYPE, retryDelay: `${err.retryAfterSeconds}s` };
}

/** The RetryInfo status detail (retry_delay = 1, a Duration with seconds = 1), for gRPC, Connect and gRPC-Web. */
export function retryInfoDetail(err: WireError): ConnectDetail | undefined {
  if (err.retryAfterSeconds === undefined) return undefined;
  const writer = new BinaryWriter();
  writer.tag(1, WireType.LengthDelimited).fork();
  writer.tag(1, WireType.Varint).int64(err.retryAfterSeconds);
  writer.join();
  return {
    type: "google.rpc.RetryInfo",
    value: writer.finish(),
    debug: { retryDelay: `${err.retryAfterSeconds}s` },
  };
}
