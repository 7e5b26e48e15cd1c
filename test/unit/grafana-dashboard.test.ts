// The Grafana dashboards (deploy/grafana/*.json) as Grafana's dashboard model needs them to import anywhere: a
// Prometheus datasource variable that every panel and query uses (no datasource uid of ours baked in), unique
// panel ids, panels that fit the 24-column grid without overlapping, and PromQL that parses. Whether the metrics
// they query exist is test/integration/dashboard-metrics.test.ts.
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { selectorsOf, withGrafanaVariables } from "../support/promql-selectors.js";
import { DEPLOY } from "../support/queried-metrics.js";

interface Panel {
  id: number;
  type: string;
  title: string;
  gridPos: { h: number; w: number; x: number; y: number };
  datasource?: { type: string; uid: string };
  targets?: Array<{ expr: string; refId: string; datasource?: { type: string; uid: string } }>;
  panels?: Panel[];
}
interface Dashboard {
  uid: string;
  title: string;
  panels: Panel[];
  templating: { list: Array<{ name: string; type: string; query?: unknown; datasource?: { uid: string } }> };
}

const files = readdirSync(join(DEPLOY, "grafana")).filter((f) => f.endsWith(".json"));
const PROMETHEUS = { type: "prometheus", uid: "${datasource}" };

describe.each(files)("Grafana dashboard %s", (file) => {
  const dashboard = JSON.parse(readFileSync(join(DEPLOY, "grafana", file), "utf8")) as Dashboard;
  const panels = dashboard.panels.flatMap((p) => [p, ...(p.panels ?? [])]);
  const graphs = panels.filter((p) => p.type !== "row");

  it("has a uid, a title and a Prometheus datasource variable", () => {
    expect(dashboard.uid).toMatch(/^[\w-]{1,40}$/);
    expect(dashboard.title).toBeTruthy();
    expect(dashboard.templating.list.find((v) => v.name === "datasource")).toMatchObject({
      type: "datasource",
      query: "prometheus",
    });
    for (const variable of dashboard.templating.list.filter((v) => v.type === "query"))
      expect(variable.datasource, variable.name).toEqual(PROMETHEUS);
  });

  it("reads every panel and query through that variable", () => {
    expect(graphs.length).toBeGreaterThan(10);
    for (const panel of graphs) {
      expect(panel.datasource, panel.title).toEqual(PROMETHEUS);
      expect(panel.targets?.length, panel.title).toBeGreaterThan(0);
      for (const target of panel.targets ?? []) expect(target.datasource, panel.title).toEqual(PROMETHEUS);
    }
  });

  it("has unique panel ids and query ids within a panel", () => {
    const ids = panels.map((p) => p.id);
    expect(new Set(ids).size).toBe(ids.length);
    for (const panel of graphs) {
      const refIds = (panel.targets ?? []).map((t) => t.refId);
      expect(new Set(refIds).size, panel.title).toBe(refIds.length);
    }
  });

  it("lays its panels on the 24-column grid without overlaps", () => {
    for (const { gridPos: g, title } of panels) {
      expect(g.x >= 0 && g.w > 0 && g.x + g.w <= 24 && g.y >= 0 && g.h > 0, title).toBe(true);
    }
    for (const [i, a] of panels.entries()) {
      for (const b of panels.slice(i + 1)) {
        const apart =
          a.gridPos.x + a.gridPos.w <= b.gridPos.x ||
          b.gridPos.x + b.gridPos.w <= a.gridPos.x ||
          a.gridPos.y + a.gridPos.h <= b.gridPos.y ||
          b.gridPos.y + b.gridPos.h <= a.gridPos.y;
        expect(apart, `${a.title} overlaps ${b.title}`).toBe(true);
      }
    }
  });

  it("has PromQL that parses, each selector limited to the chosen instances", () => {
    for (const panel of graphs) {
      for (const target of panel.targets ?? []) {
        const selectors = selectorsOf(withGrafanaVariables(target.expr));
        expect(selectors.length, `${panel.title}: ${target.expr}`).toBeGreaterThan(0);
        for (const selector of selectorsOf(target.expr.replaceAll("$__rate_interval", "5m"))) {
          expect(selector.matchers, `${panel.title}: ${target.expr}`).toContainEqual({
            label: "instance",
            op: "=~",
            value: "$instance",
          });
        }
      }
    }
  });
});
