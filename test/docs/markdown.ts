import { existsSync, readFileSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

/** Helpers the docs tests share: where the repo is, the Markdown files, their sections, code blocks and headings. */
export const repoRoot = fileURLToPath(new URL("../../", import.meta.url));

export function readRepoFile(path: string): string {
  return readFileSync(join(repoRoot, path), "utf8");
}

/** README.md and every docs/*.md, as repo-relative paths. */
export function markdownFiles(): string[] {
  const docs = existsSync(join(repoRoot, "docs"))
    ? readdirSync(join(repoRoot, "docs"))
        .filter((f) => f.endsWith(".md"))
        .map((f) => `docs/${f}`)
    : [];
  return ["README.md", ...docs.sort()];
}

/** The lines of a Markdown text outside fenced code blocks (fences themselves dropped), with their indexes. */
export function proseLines(markdown: string): Array<{ line: string; index: number }> {
  const out: Array<{ line: string; index: number }> = [];
  let fence: string | undefined;
  markdown.split("\n").forEach((line, index) => {
    const match = /^\s*(```+|~~~+)/.exec(line);
    if (match) {
      if (fence === undefined) fence = match[1]![0]!.repeat(match[1]!.length);
      else if (line.trim().startsWith(fence)) fence = undefined;
      return;
    }
    if (fence === undefined) out.push({ line, index });
  });
  return out;
}

/** The text of the section under the heading whose title is `title` (any level), up to the next heading of the same or a higher level. */
export function section(markdown: string, title: string): string | undefined {
  const lines = markdown.split("\n");
  const heads = proseLines(markdown).filter(({ line }) => /^#{1,6}\s/.test(line));
  const start = heads.find(({ line }) => line.replace(/^#+\s+/, "").trim() === title);
  if (!start) return undefined;
  const level = /^#+/.exec(start.line)![0].length;
  const end = heads.find(({ line, index }) => index > start.index && /^#+/.exec(line)![0].length <= level);
  return lines.slice(start.index + 1, end ? end.index : lines.length).join("\n");
}

/** The bodies of the fenced code blocks of one language (```sh). */
export function codeBlocks(markdown: string, language: string): string[] {
  const blocks: string[] = [];
  const re = new RegExp("^```" + language + "[ \\t]*\\n([\\s\\S]*?)^```[ \\t]*$", "gm");
  for (const match of markdown.matchAll(re)) blocks.push(match[1]!);
  return blocks;
}

/** GitHub's heading anchor: lower case, punctuation dropped (but `-` and `_`), spaces to `-`; repeats get -1, -2... */
export function headingAnchors(markdown: string): Set<string> {
  const anchors = new Set<string>();
  const seen = new Map<string, number>();
  for (const { line } of proseLines(markdown)) {
    const match = /^#{1,6}\s+(.*?)\s*#*\s*$/.exec(line);
    if (!match) continue;
    const text = match[1]!
      .replace(/!\[[^\]]*\]\([^)]*\)/g, "")
      .replace(/\[([^\]]*)\]\([^)]*\)/g, "$1")
      .replace(/<[^>]+>/g, "");
    const base = text
      .toLowerCase()
      .replace(/[^\p{L}\p{N}\s_-]/gu, "")
      .replace(/\s/g, "-");
    const count = seen.get(base) ?? 0;
    seen.set(base, count + 1);
    anchors.add(count === 0 ? base : `${base}-${count}`);
  }
  return anchors;
}

export interface Link {
  file: string;
  line: number;
  target: string;
}

/** Inline links and images `[text](target)` / `![alt](target)` and reference definitions `[id]: target`, outside code. */
export function linksOf(file: string, markdown: string): Link[] {
  const links: Link[] = [];
  for (const { line, index } of proseLines(markdown)) {
    const text = line.replace(/`[^`]*`/g, "``"); // links inside inline code are not links
    for (const match of text.matchAll(/!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g))
      links.push({ file, line: index + 1, target: match[1]! });
    const definition = /^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s+"[^"]*")?\s*$/.exec(text);
    if (definition) links.push({ file, line: index + 1, target: definition[1]! });
  }
  return links;
}

/** Not a URL with a scheme, nor protocol-relative: a path in this repository (or package). */
export function isRelative(target: string): boolean {
  return !/^[a-z][a-z0-9+.-]*:/i.test(target) && !target.startsWith("//");
}
