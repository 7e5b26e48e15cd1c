import { create } from "@bufbuild/protobuf";
import * as pb from "../../gen/a2a/v1/a2a_pb.js";
import type { AgentCard } from "../agent-card.js";

/* The agent card as `a2a.v1.AgentCard` (0.3 `GetAgentCard`, `/v1/card`), derived from the superset card. */

function str(value: unknown): string {
  return typeof value === "string" ? value : "";
}

function scopesOf(value: unknown): Record<string, string> {
  if (typeof value !== "object" || value === null) return {};
  return Object.fromEntries(Object.entries(value).filter((e): e is [string, string] => typeof e[1] === "string"));
}

/** JSON `flows` may name several flows; the v0.3 proto's oneof keeps the first one present. */
function encodeOAuthFlows(flows: unknown): pb.OAuthFlows {
  const f = (typeof flows === "object" && flows !== null ? flows : {}) as Record<
    string,
    Record<string, unknown> | undefined
  >;
  const common = (x: Record<string, unknown>) => ({ refreshUrl: str(x["refreshUrl"]), scopes: scopesOf(x["scopes"]) });
  let flow: pb.OAuthFlows["flow"] = { case: undefined };
  if (f["authorizationCode"]) {
    const x = f["authorizationCode"];
    flow = {
      case: "authorizationCode",
      value: create(pb.AuthorizationCodeOAuthFlowSchema, {
        ...common(x),
        authorizationUrl: str(x["authorizationUrl"]),
        tokenUrl: str(x["tokenUrl"]),
      }),
    };
  } else if (f["clientCredentials"]) {
    const x = f["clientCredentials"];
    flow = {
      case: "clientCredentials",
      value: create(pb.ClientCredentialsOAuthFlowSchema, { ...common(x), tokenUrl: str(x["tokenUrl"]) }),
    };
  } else if (f["implicit"]) {
    const x = f["implicit"];
    flow = {
      case: "implicit",
      value: create(pb.ImplicitOAuthFlowSchema, { ...common(x), authorizationUrl: str(x["authorizationUrl"]) }),
    };
  } else if (f["password"]) {
    const x = f["password"];
    flow = {
      case: "password",
      value: create(pb.PasswordOAuthFlowSchema, { ...common(x), tokenUrl: str(x["tokenUrl"]) }),
    };
  }
  return create(pb.OAuthFlowsSchema, { flow });
}

/** v0.3 JSON SecurityScheme (discriminated by `type`) → the proto oneof; unknown types stay empty. */
function encodeSecurityScheme(scheme: Record<string, unknown>): pb.SecurityScheme {
  const description = str(scheme["description"]);
  switch (scheme["type"]) {
    case "apiKey":
      return create(pb.SecuritySchemeSchema, {
        scheme: {
          case: "apiKeySecurityScheme",
          value: create(pb.APIKeySecuritySchemeSchema, {
            description,
            location: str(scheme["in"]),
            name: str(scheme["name"]),
          }),
        },
      });
    case "http":
      return create(pb.SecuritySchemeSchema, {
        scheme: {
          case: "httpAuthSecurityScheme",
          value: create(pb.HTTPAuthSecuritySchemeSchema, {
            description,
            scheme: str(scheme["scheme"]),
            bearerFormat: str(scheme["bearerFormat"]),
          }),
        },
      });
    case "oauth2":
      return create(pb.SecuritySchemeSchema, {
        scheme: {
          case: "oauth2SecurityScheme",
          value: create(pb.OAuth2SecuritySchemeSchema, {
            description,
            flows: encodeOAuthFlows(scheme["flows"]),
            oauth2MetadataUrl: str(scheme["oauth2MetadataUrl"]),
          }),
        },
      });
    case "openIdConnect":
      return create(pb.SecuritySchemeSchema, {
        scheme: {
          case: "openIdConnectSecurityScheme",
          value: create(pb.OpenIdConnectSecuritySchemeSchema, {
            description,
            openIdConnectUrl: str(scheme["openIdConnectUrl"]),
          }),
        },
      });
    case "mutualTLS":
      return create(pb.SecuritySchemeSchema, {
        scheme: { case: "mtlsSecurityScheme", value: create(pb.MutualTlsSecuritySchemeSchema, { description }) },
      });
    default:
      return create(pb.SecuritySchemeSchema, {});
  }
}

function encodeSecurity(requirements: Array<Record<string, string[]>> | undefined): pb.Security[] {
  return (requirements ?? []).map((req) =>
    create(pb.SecuritySchema, {
      schemes: Object.fromEntries(
        Object.entries(req).map(([name, scopes]) => [name, create(pb.StringListSchema, { list: scopes })]),
      ),
    }),
  );
}

/** `capabilities.stateTransitionHistory` has no field in the v0.3 proto and is dropped. */
export function encodeAgentCard(card: AgentCard): pb.AgentCard {
  return create(pb.AgentCardSchema, {
    protocolVersion: card.protocolVersion,
    name: card.name,
    description: card.description,
    url: card.url,
    preferredTransport: card.preferredTransport,
    additionalInterfaces: card.additionalInterfaces.map((i) =>
      create(pb.AgentInterfaceSchema, { url: i.url, transport: i.transport }),
    ),
    provider: card.provider
      ? create(pb.AgentProviderSchema, { organization: card.provider.organization, url: card.provider.url })
      : undefined,
    version: card.version,
    documentationUrl: card.documentationUrl ?? "",
    iconUrl: card.iconUrl ?? "",
    capabilities: create(pb.AgentCapabilitiesSchema, {
      streaming: card.capabilities.streaming,
      pushNotifications: card.capabilities.pushNotifications,
      extensions: (card.capabilities.extensions ?? []).map((e) =>
        create(pb.AgentExtensionSchema, {
          uri: e.uri,
          description: e.description ?? "",
          required: e.required ?? false,
        }),
      ),
    }),
    securitySchemes: Object.fromEntries(
      Object.entries(card.securitySchemes ?? {}).map(([name, scheme]) => [name, encodeSecurityScheme(scheme)]),
    ),
    security: encodeSecurity(card.security),
    defaultInputModes: card.defaultInputModes,
    defaultOutputModes: card.defaultOutputModes,
    skills: card.skills.map((s) =>
      create(pb.AgentSkillSchema, {
        id: s.id,
        name: s.name,
        description: s.description,
        tags: s.tags,
        examples: s.examples ?? [],
        inputModes: s.inputModes ?? [],
        outputModes: s.outputModes ?? [],
      }),
    ),
    supportsAuthenticatedExtendedCard: card.supportsAuthenticatedExtendedCard,
  });
}
