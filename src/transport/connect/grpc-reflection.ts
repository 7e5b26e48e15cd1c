import { create, toBinary, type DescFile, type DescMessage, type DescService } from "@bufbuild/protobuf";
import { FileDescriptorProtoSchema } from "@bufbuild/protobuf/wkt";
import type { ServiceImpl } from "@connectrpc/connect";
import * as v1 from "../../gen/grpc/reflection/v1/reflection_pb.js";
import * as v1alpha from "../../gen/grpc/reflection/v1alpha/reflection_pb.js";

/** gRPC status NOT_FOUND, the code reflection answers for an unknown file or symbol. */
const NOT_FOUND = 5;

/** Every file, symbol and extension reachable from the served services, for reflection look-ups. */
class DescriptorIndex {
  readonly files = new Map<string, DescFile>();
  readonly symbols = new Map<string, DescFile>();
  readonly extensions = new Map<string, Map<number, DescFile>>();

  constructor(readonly services: DescService[]) {
    for (const service of services) this.addFile(service.file);
  }

  private addFile(file: DescFile): void {
    if (this.files.has(file.proto.name)) return;
    this.files.set(file.proto.name, file);
    for (const dep of file.dependencies) this.addFile(dep);
    for (const message of file.messages) this.addMessage(message);
    for (const e of file.enums) this.symbols.set(e.typeName, file);
    for (const ext of file.extensions) this.addExtension(ext.extendee.typeName, ext.number, file);
    for (const service of file.services) {
      this.symbols.set(service.typeName, file);
      for (const method of service.methods) this.symbols.set(`${service.typeName}.${method.name}`, file);
    }
  }

  private addMessage(message: DescMessage): void {
    this.symbols.set(message.typeName, message.file);
    for (const field of message.fields) this.symbols.set(`${message.typeName}.${field.name}`, message.file);
    for (const nested of message.nestedMessages) this.addMessage(nested);
    for (const e of message.nestedEnums) this.symbols.set(e.typeName, message.file);
    for (const ext of message.nestedExtensions) this.addExtension(ext.extendee.typeName, ext.number, message.file);
  }

  private addExtension(extendee: string, number: number, file: DescFile): void {
    let byNumber = this.extensions.get(extendee);
    if (!byNumber) this.extensions.set(extendee, (byNumber = new Map()));
    byNumber.set(number, file);
  }

  /** The file and everything it imports, dependencies first, each serialized once. */
  closure(file: DescFile): Uint8Array[] {
    const out: Uint8Array[] = [];
    const seen = new Set<string>();
    const visit = (f: DescFile): void => {
      if (seen.has(f.proto.name)) return;
      seen.add(f.proto.name);
      out.push(toBinary(FileDescriptorProtoSchema, f.proto));
      for (const dep of f.dependencies) visit(dep);
    };
    visit(file);
    return out;
  }
}

type Request = v1.ServerReflectionRequest | v1alpha.ServerReflectionRequest;
type ResponseInit = Pick<v1.ServerReflectionResponse, "messageResponse">;

function answer(index: DescriptorIndex, request: Request): ResponseInit["messageResponse"] {
  const files = (file: DescFile | undefined, what: string): ResponseInit["messageResponse"] =>
    file
      ? {
          case: "fileDescriptorResponse",
          value: create(v1.FileDescriptorResponseSchema, { fileDescriptorProto: index.closure(file) }),
        }
      : {
          case: "errorResponse",
          value: create(v1.ErrorResponseSchema, { errorCode: NOT_FOUND, errorMessage: `${what} not found` }),
        };
  const req = request.messageRequest;
  switch (req.case) {
    case "listServices":
      return {
        case: "listServicesResponse",
        value: create(v1.ListServiceResponseSchema, {
          service: index.services.map((s) => create(v1.ServiceResponseSchema, { name: s.typeName })),
        }),
      };
    case "fileByFilename":
      return files(index.files.get(req.value), `file ${req.value}`);
    case "fileContainingSymbol":
      return files(index.symbols.get(req.value), `symbol ${req.value}`);
    case "fileContainingExtension":
      return files(
        index.extensions.get(req.value.containingType)?.get(req.value.extensionNumber),
        `extension ${req.value.containingType}(${req.value.extensionNumber})`,
      );
    case "allExtensionNumbersOfType": {
      const numbers = index.extensions.get(req.value);
      if (!numbers && !index.symbols.has(req.value)) return files(undefined, `type ${req.value}`);
      return {
        case: "allExtensionNumbersResponse",
        value: create(v1.ExtensionNumberResponseSchema, {
          baseTypeName: req.value,
          extensionNumber: [...(numbers?.keys() ?? [])],
        }),
      };
    }
    default:
      return {
        case: "errorResponse",
        value: create(v1.ErrorResponseSchema, { errorCode: 3, errorMessage: "no request set in message_request" }),
      };
  }
}

/**
 * gRPC server reflection (v1, and v1alpha for older grpcurl and grpc_cli) from the generated descriptors:
 * `list` names the served services, symbol and file look-ups answer the file with its imports. The two
 * versions have the same messages under two package names, so one implementation serves both.
 */
export function createReflectionServices(services: DescService[]): {
  v1: ServiceImpl<typeof v1.ServerReflection>;
  v1alpha: ServiceImpl<typeof v1alpha.ServerReflection>;
} {
  const index = new DescriptorIndex(services);
  return {
    v1: {
      async *serverReflectionInfo(requests) {
        for await (const request of requests) {
          const messageResponse = answer(index, request);
          yield create(v1.ServerReflectionResponseSchema, {
            validHost: request.host,
            originalRequest: request,
            messageResponse,
          });
        }
      },
    },
    v1alpha: {
      async *serverReflectionInfo(requests) {
        for await (const request of requests) {
          // Same field numbers and shapes: the v1 answer re-encodes as v1alpha field for field.
          const messageResponse = answer(index, request) as v1alpha.ServerReflectionResponse["messageResponse"];
          yield create(v1alpha.ServerReflectionResponseSchema, {
            validHost: request.host,
            originalRequest: request,
            messageResponse,
          });
        }
      },
    },
  };
}
