import type { Operation } from "./openapi-operation.js";

/**
 * The OpenWOP 2 operations (unversioned paths, OpenWOP-Version: 2; spec/v2/path-manifest.json): the twins of the
 * /v1 operations above, with tenant-bound ids. A header-less request on these paths is OpenWOP 1 through the
 * overlap, and is answered 400.
 */
export const OPENWOP_V2: Operation[] = [
  {
    methods: ["post"],
    path: "/runs",
    tag: "OpenWOP 2",
    summary: "createRun: 201 {runId (tenant-bound), status, eventsUrl, statusUrl}",
  },
  {
    methods: ["get"],
    path: "/runs/{runId}",
    tag: "OpenWOP 2",
    summary: "getRun: the v2 RunSnapshot (runId as acme~2F… or acme%2F…)",
  },
  {
    methods: ["get"],
    path: "/runs/{runId}/events",
    tag: "OpenWOP 2",
    summary: "streamRunEvents: v2 RunEventDocs as SSE (streamMode=updates)",
    sse: true,
  },
  {
    methods: ["get"],
    path: "/runs/{runId}/events/poll",
    tag: "OpenWOP 2",
    summary: "pollRunEvents: ?afterSequence=&timeout= (seconds)",
  },
  { methods: ["post"], path: "/runs/{runId}/cancel", tag: "OpenWOP 2", summary: "cancelRun: 200 {runId, status}" },
  { methods: ["post"], path: "/runs/{runId}:pause", tag: "OpenWOP 2", summary: "pauseRun: 202, run.paused" },
  { methods: ["post"], path: "/runs/{runId}:resume", tag: "OpenWOP 2", summary: "resumeRun: 202, run.resumed" },
  { methods: ["post"], path: "/runs/{runId}/interrupts/{nodeId}", tag: "OpenWOP 2", summary: "resolveInterruptByRun" },
  { methods: ["get"], path: "/interrupts/{token}", tag: "OpenWOP 2", summary: "inspectInterruptByToken", public: true },
  {
    methods: ["post"],
    path: "/interrupts/{token}",
    tag: "OpenWOP 2",
    summary: "resolveInterruptByToken",
    public: true,
  },
  { methods: ["get"], path: "/workflows/{workflowId}", tag: "OpenWOP 2", summary: "getWorkflow" },
  { methods: ["get"], path: "/openapi.json", tag: "OpenWOP 2", summary: "getOpenApiSpec: this document" },
];
