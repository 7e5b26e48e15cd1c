/** The OpenWOP extension our tasks carry (`metadata.openwop`: run status, interrupt carrier, error). */
export const OPENWOP_EXTENSION_URI = "https://openwop.dev/extensions/a2a-durable-tasks/v1";

/** How the agent card declares it (capabilities.extensions): optional for clients. */
export const OPENWOP_EXTENSION = {
  uri: OPENWOP_EXTENSION_URI,
  description: "metadata.openwop on tasks and status updates: run status, interrupt kind and id, error code",
  required: false,
} as const;
