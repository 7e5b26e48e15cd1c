import { parser } from "@prometheus-io/lezer-promql";

type SyntaxNode = ReturnType<typeof parser.parse>["topNode"];

/** One metric a PromQL expression reads, with the labels it reads it by. */
export interface QueriedSelector {
  metric: string;
  /** Its label matchers (`name op "value"`). */
  matchers: Array<{ label: string; op: "=" | "!=" | "=~" | "!~"; value: string }>;
  /** Labels an enclosing `by (...)` groups it by: each series must carry them for the grouping to mean anything. */
  groupedBy: string[];
}

/**
 * Grafana's variables as Prometheus would see them once Grafana has filled them in: the interval ones become a
 * duration, any other (`$instance`) a match-all regex.
 */
export function withGrafanaVariables(expr: string): string {
  return expr
    .replace(/\$__(rate_interval|interval|range)|\$\{__(rate_interval|interval|range)\}/g, "5m")
    .replace(/\$\{?\w+\}?/g, ".*");
}

/**
 * Every metric selector of a PromQL expression, parsed with Prometheus's own grammar (lezer-promql). Label-making
 * and label-matching constructs this check cannot follow (`without`, `on`, `ignoring`, `label_replace`,
 * `label_join`) are refused rather than guessed at, as is any syntax error.
 */
export function selectorsOf(expr: string): QueriedSelector[] {
  const tree = parser.parse(expr);
  const found: QueriedSelector[] = [];
  const text = (node: SyntaxNode): string => expr.slice(node.from, node.to);
  const refuse = (what: string, node: SyntaxNode): never => {
    throw new Error(`${what} at ${node.from} in: ${expr}`);
  };
  const visit = (node: SyntaxNode, groupedBy: string[]): void => {
    if (node.type.isError) refuse("a PromQL syntax error", node);
    if (["Without", "On", "Ignoring", "LabelReplace", "LabelJoin"].includes(node.name))
      refuse(`${node.name} (not followed by this check)`, node);
    let grouping = groupedBy;
    if (node.name === "AggregateExpr") {
      const modifier = node.getChild("AggregateModifier");
      if (modifier?.getChild("By"))
        grouping = [...groupedBy, ...(modifier.getChild("GroupingLabels")?.getChildren("LabelName") ?? []).map(text)];
    }
    if (node.name === "VectorSelector") {
      const name = node.getChild("Identifier");
      if (!name) refuse("a selector without a metric name", node);
      const matchers = (node.getChild("LabelMatchers")?.getChildren("UnquotedLabelMatcher") ?? []).map((m) => ({
        label: text(m.getChild("LabelName")!),
        op: text(m.getChild("MatchOp")!) as QueriedSelector["matchers"][number]["op"],
        value: stringValue(text(m.getChild("StringLiteral")!)),
      }));
      if (node.getChild("LabelMatchers")?.getChild("QuotedLabelMatcher")) refuse("a quoted label name", node);
      found.push({ metric: text(name!), matchers, groupedBy: grouping });
      return;
    }
    for (let child = node.firstChild; child; child = child.nextSibling) visit(child, grouping);
  };
  visit(tree.topNode, []);
  return found;
}

/** A PromQL string literal's value: double-quoted (Go escapes, as JSON reads them), single-quoted or raw. */
function stringValue(literal: string): string {
  if (literal.startsWith("`")) return literal.slice(1, -1);
  if (literal.startsWith("'"))
    return JSON.parse(`"${literal.slice(1, -1).replace(/\\'/g, "'").replace(/"/g, '\\"')}"`) as string;
  return JSON.parse(literal) as string;
}
