import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { parse } from "yaml";
import type { PrometheusSample } from "./prometheus-text.js";
import { selectorsOf, withGrafanaVariables, type QueriedSelector } from "./promql-selectors.js";

export const DEPLOY = new URL("../../deploy/", import.meta.url).pathname;

/** Labels Prometheus adds to every series it scrapes (the target's), never on /metrics itself. */
export const TARGET_LABELS: ReadonlySet<string> = new Set(["instance", "job"]);

export interface Query {
  /** Where it is: the file, and the panel or alert. */
  source: string;
  expr: string;
}

interface GrafanaPanel {
  title?: string;
  panels?: GrafanaPanel[];
  targets?: Array<{ expr?: string }>;
}

/** Every PromQL query of the Grafana dashboards: each panel's targets, and `label_values(metric, label)` variables. */
export function dashboardQueries(): Query[] {
  const queries: Query[] = [];
  for (const file of readdirSync(join(DEPLOY, "grafana")).filter((f) => f.endsWith(".json"))) {
    const dashboard = JSON.parse(readFileSync(join(DEPLOY, "grafana", file), "utf8")) as {
      panels: GrafanaPanel[];
      templating: { list: Array<{ name: string; type: string; query?: string | { query: string } }> };
    };
    const walk = (panels: GrafanaPanel[]): void => {
      for (const panel of panels) {
        for (const target of panel.targets ?? [])
          if (target.expr) queries.push({ source: `${file}: ${panel.title}`, expr: withGrafanaVariables(target.expr) });
        walk(panel.panels ?? []);
      }
    };
    walk(dashboard.panels);
    for (const variable of dashboard.templating.list.filter((v) => v.type === "query")) {
      const query = typeof variable.query === "string" ? variable.query : (variable.query?.query ?? "");
      const labelValues = /^label_values\((\w+),\s*(\w+)\)$/.exec(query);
      if (!labelValues)
        throw new Error(`${file}: variable ${variable.name} is not label_values(metric, label): ${query}`);
      queries.push({
        source: `${file}: variable ${variable.name}`,
        expr: `count by (${labelValues[2]}) (${labelValues[1]})`,
      });
    }
  }
  return queries;
}

/** Every alert and recording rule expression under deploy/prometheus/ (the promtool test files left out). */
export function ruleQueries(): Query[] {
  const queries: Query[] = [];
  for (const file of readdirSync(join(DEPLOY, "prometheus")).filter(
    (f) => f.endsWith(".yaml") && !f.endsWith(".test.yaml"),
  )) {
    const rules = parse(readFileSync(join(DEPLOY, "prometheus", file), "utf8")) as {
      groups: Array<{ rules: Array<{ alert?: string; record?: string; expr: string }> }>;
    };
    for (const group of rules.groups)
      for (const rule of group.rules)
        queries.push({ source: `${file}: ${rule.alert ?? rule.record}`, expr: rule.expr });
  }
  return queries;
}

/**
 * What a scrape lacks for one selector: the metric itself, a label the selector matches on or groups by (a
 * target label aside), or, for an `=` matcher, a series with that value. Regex matchers are checked for
 * their label only: the values they pick (UNAVAILABLE, a console path) may rightly not have happened yet.
 */
export function missingFor(selector: QueriedSelector, samples: readonly PrometheusSample[]): string[] {
  const series = samples.filter((s) => s.name === selector.metric);
  if (series.length === 0) return [`${selector.metric}: no such metric`];
  const problems: string[] = [];
  const labels = [...selector.matchers.map((m) => m.label), ...selector.groupedBy].filter((l) => !TARGET_LABELS.has(l));
  for (const label of new Set(labels))
    if (!series.some((s) => label in s.labels)) problems.push(`${selector.metric}: no series has the label ${label}`);
  for (const m of selector.matchers) {
    if (m.op === "=" && !TARGET_LABELS.has(m.label) && !series.some((s) => s.labels[m.label] === m.value))
      problems.push(`${selector.metric}: no series with ${m.label}="${m.value}"`);
  }
  return problems;
}

/** Every selector of every query, with where it came from. */
export function queriedSelectors(queries: readonly Query[]): Array<QueriedSelector & { source: string }> {
  return queries.flatMap((q) => selectorsOf(q.expr).map((s) => ({ ...s, source: q.source })));
}
