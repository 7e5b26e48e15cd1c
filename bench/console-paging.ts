// How long the operator console's task list takes to appear with thousands of tasks, in headless Chromium:
// the first page (navigation to /console until its 50 rows are in the table) and the next page ("Load more"
// until 100 rows), on the memory store and on MongoDB (MONGODB_URI, else the wire-protocol test server in
// this process). Also the API alone (GET /console/api/tasks, first page and a page deep in the cursor chain).
// "Fresh" rounds open the page in a new browser context each time (empty cache, no open connection: what an
// operator's first visit costs), with the page's own timeline from the Performance API: the document, each
// script, the API call and the rows rendered.
//   npx tsx bench/console-paging.ts [--tasks 3000] [--rounds 5] [--store memory,mongodb] [--label before]
// Writes bench/results/console-paging-[<label>-]<UTC time>.json.
import { randomUUID } from "node:crypto";
import { mkdir, writeFile } from "node:fs/promises";
import { cpus } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { MongoClient } from "mongodb";
import { chromium } from "playwright-core";
import { MemoryTaskStore } from "../src/store/memory-task-store.js";
import { MongoTaskStore } from "../src/store/mongo-task-store.js";
import type { TaskStore } from "../src/store/task-store.js";
import { findChromium } from "../test/support/chromium.js";
import { seedCopies } from "../test/support/console-seed.js";
import { startMongoWireServer } from "../test/support/mongo-wire-server/server.js";
import { openwopClient } from "../test/support/openwop-client.js";
import { startTestApp } from "../test/support/start-server.js";

const { values } = parseArgs({
  options: {
    tasks: { type: "string", default: "3000" },
    rounds: { type: "string", default: "5" },
    store: { type: "string", default: "memory,mongodb" },
    label: { type: "string" },
  },
});
const TASKS = Number(values.tasks);
const ROUNDS = Number(values.rounds);

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const ms = async (f: () => Promise<unknown>) => {
  const t0 = performance.now();
  await f();
  return performance.now() - t0;
};

async function storeFor(kind: string): Promise<{ store: TaskStore; description: string; close: () => Promise<void> }> {
  if (kind === "memory") return { store: new MemoryTaskStore(), description: "memory store", close: async () => {} };
  const wire = process.env["MONGODB_URI"] ? undefined : await startMongoWireServer();
  const uri = process.env["MONGODB_URI"] ?? wire!.uri;
  const client = await MongoClient.connect(uri);
  const db = client.db(`console_bench_${randomUUID().slice(0, 8)}`);
  const store = new MongoTaskStore(client, db);
  await store.init();
  return {
    store,
    description: wire ? "MongoDB: the wire-protocol test server (in process)" : "MongoDB at MONGODB_URI",
    close: async () => {
      await db.dropDatabase();
      await client.close();
      await wire?.close();
    },
  };
}

async function measure(kind: string) {
  const { store, description, close } = await storeFor(kind);
  const t = await startTestApp({}, store);
  const browser = await chromium.launch({
    executablePath: findChromium()!,
    headless: true,
    args: ["--no-sandbox", "--disable-dev-shm-usage"],
  });
  try {
    const api = openwopClient(t.baseUrl);
    const template = await api.startRun("echo", { text: "Summarise the incident report\nfor the weekly review" });
    await api.waitForRun(template, (s) => s.status === "completed");
    const seedMs = await ms(() =>
      seedCopies(store, template, TASKS, { at: (i) => new Date(Date.now() - (TASKS - i) * 1000).toISOString() }),
    );

    const page = await browser.newPage({ viewport: { width: 1500, height: 1000 } });
    const rounds: Array<{
      firstPageMs: number;
      firstPageInPageMs: number;
      nextPageMs: number;
      nextPageInPageMs: number;
    }> = [];
    for (let round = 0; round <= ROUNDS; round++) {
      const firstPageMs = await ms(async () => {
        await page.goto(`${t.baseUrl}/console`);
        await page.waitForSelector('#tasks[data-loaded="50"]');
      });
      const firstPageInPageMs = Number(await page.locator("#tasks").getAttribute("data-first-page-ms"));
      const nextPageMs = await ms(async () => {
        await page.locator("#load-more").click();
        await page.waitForSelector('#tasks[data-loaded="100"]');
      });
      const nextPageInPageMs = Number(await page.locator("#tasks").getAttribute("data-last-page-ms"));
      if (round > 0) rounds.push({ firstPageMs, firstPageInPageMs, nextPageMs, nextPageInPageMs }); // round 0 warms up
    }

    // Fresh: a new context (empty HTTP cache, new connections) per round, with where the time went.
    const fresh: Array<Record<string, number>> = [];
    for (let round = 0; round <= ROUNDS; round++) {
      const context = await browser.newContext({ viewport: { width: 1500, height: 1000 } });
      const cold = await context.newPage();
      const firstPageMs = await ms(async () => {
        await cold.goto(`${t.baseUrl}/console`);
        await cold.waitForSelector('#tasks[data-loaded="50"]');
      });
      const timeline = await cold.evaluate<Record<string, number>>(`(() => {
        const at = (x) => Math.round(x);
        const nav = performance.getEntriesByType("navigation")[0];
        const out = { documentMs: at(nav.responseEnd) };
        for (const r of performance.getEntriesByType("resource")) {
          const name = new URL(r.name).pathname.replace("/console/assets/", "").replace("/console/api/tasks", "api");
          out[name + "StartMs"] = at(r.startTime);
          out[name + "EndMs"] = at(r.responseEnd);
        }
        const mark = performance.getEntriesByName("console-rows")[0];
        if (mark) out.rowsRenderedMs = at(mark.startTime);
        const start = performance.getEntriesByName("console-start")[0];
        if (start) out.scriptStartMs = at(start.startTime);
        const read = performance.getEntriesByName("console-api")[0];
        if (read) out.apiReadMs = at(read.startTime);
        const paint = performance.getEntriesByName("first-contentful-paint")[0];
        if (paint) out.firstPaintMs = at(paint.startTime);
        return out;
      })()`);
      if (round > 0) fresh.push({ firstPageMs: Math.round(firstPageMs), ...timeline }); // round 0 warms up the server
      await context.close();
    }

    // The API alone: the first page, and a page half-way down the cursor chain (keyset: no deeper, no slower).
    const get = (query: string) =>
      fetch(`${t.baseUrl}/console/api/tasks?${query}`).then(
        (r) => r.json() as Promise<{ nextCursor: string | null; total: number }>,
      );
    const firstApi: number[] = [];
    for (let i = 0; i < ROUNDS; i++) firstApi.push(await ms(() => get("limit=50")));
    let cursor: string | null = null;
    let pages = 0;
    while (pages < Math.floor(TASKS / 100)) {
      const page: { nextCursor: string | null } = await get(`limit=50${cursor ? `&cursor=${cursor}` : ""}`);
      cursor = page.nextCursor;
      pages += 1;
    }
    const deepApi: number[] = [];
    for (let i = 0; i < ROUNDS; i++) deepApi.push(await ms(() => get(`limit=50&cursor=${cursor}`)));
    const total = (await get("limit=1")).total;
    return {
      store: description,
      tasks: total,
      seedMs: Math.round(seedMs),
      browser: {
        firstPageMs: Math.round(median(rounds.map((r) => r.firstPageMs))),
        firstPageInPageMs: median(rounds.map((r) => r.firstPageInPageMs)),
        nextPageMs: Math.round(median(rounds.map((r) => r.nextPageMs))),
        nextPageInPageMs: median(rounds.map((r) => r.nextPageInPageMs)),
        rounds,
        fresh: {
          firstPageMs: Math.round(median(fresh.map((r) => r["firstPageMs"]!))),
          rowsRenderedMs: median(fresh.map((r) => r["rowsRenderedMs"] ?? NaN)),
          rounds: fresh,
        },
      },
      api: {
        firstPageMs: Number(median(firstApi).toFixed(1)),
        deepPageMs: Number(median(deepApi).toFixed(1)),
        deepPageIndex: pages,
      },
    };
  } finally {
    await browser.close();
    await t.close();
    await close();
  }
}

const results = [];
for (const kind of values.store!.split(",")) results.push(await measure(kind.trim()));
console.log(`console paging, ${TASKS} seeded tasks, median of ${ROUNDS} rounds (50 rows a page)`);
console.table(
  results.map((r) => ({
    store: r.store,
    tasks: r.tasks,
    "first page (browser)": `${r.browser.firstPageMs} ms`,
    "first page (fresh context)": `${r.browser.fresh.firstPageMs} ms`,
    "rows rendered (fresh, page clock)": `${r.browser.fresh.rowsRenderedMs} ms`,
    "next page (browser)": `${r.browser.nextPageMs} ms`,
    "API first page": `${r.api.firstPageMs} ms`,
    [`API page #${r.api.deepPageIndex}`]: `${r.api.deepPageMs} ms`,
  })),
);
await mkdir(join("bench", "results"), { recursive: true });
const out = join(
  "bench",
  "results",
  `console-paging-${values.label ? `${values.label}-` : ""}${new Date().toISOString().replace(/[:.]/g, "-")}.json`,
);
await writeFile(
  out,
  JSON.stringify(
    {
      machine: { cpu: cpus()[0]?.model, cores: cpus().length, node: process.version },
      settings: { tasks: TASKS, rounds: ROUNDS, pageSize: 50 },
      results,
    },
    null,
    2,
  ),
);
console.log(`wrote ${out}`);
