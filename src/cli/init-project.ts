import { existsSync, readFileSync, readdirSync, statSync } from "node:fs";
import { mkdir, writeFile } from "node:fs/promises";
import { basename, dirname, join, relative, resolve } from "node:path";
import { projectRoot } from "../domain/project-root.js";
import { packageVersion } from "../domain/package-version.js";

/** The agent project `init` writes: real files shipped in the package (package.json "files"). */
export const templateDir = join(projectRoot, "templates", "agent");

/** npm drops a `.gitignore` from a package, so the template ships it as `gitignore`. */
const RENAMED: Record<string, string> = { gitignore: ".gitignore" };

export type InitResult = { ok: true; dir: string; name: string; files: string[] } | { ok: false; problem: string };

/**
 * A folder name as an npm package name: lower case, URL-safe characters, no leading dot or underscore
 * ("My Agent" → "my-agent", "Été" → "ete"). A name with nothing usable left is "my-agent".
 */
export function packageNameFor(folder: string): string {
  const name = folder
    .normalize("NFD")
    .replace(/[\u0300-\u036f]/g, "") // "Été" → "Ete"
    .toLowerCase()
    .replace(/[^a-z0-9._~-]+/g, "-")
    .replace(/^[._~-]+/, "")
    .replace(/-+$/, "")
    .slice(0, 214);
  return name || "my-agent";
}

/**
 * `init [dir]`: the agent project of templates/agent/ written into `dir` (created if missing), `{{name}}` the
 * folder's name as a package name, `{{version:pkg}}` the version this package pins for pkg (so `npm install`
 * finds what the host itself is tested with). Only into a new or empty folder: anything there is refused before
 * a file is written, and each file is created exclusively, so nothing of the user's is ever overwritten.
 */
export async function initProject(target: string): Promise<InitResult> {
  const dir = resolve(target);
  if (existsSync(dir)) {
    if (!statSync(dir).isDirectory())
      return { ok: false, problem: `${dir} is a file, not a folder; nothing was written` };
    const present = readdirSync(dir);
    if (present.length > 0) {
      const shown = present.slice(0, 5).join(", ") + (present.length > 5 ? ", …" : "");
      return {
        ok: false,
        problem: `${dir} is not empty (${shown}); init writes only into a new or empty folder, so nothing was written`,
      };
    }
  }
  const name = packageNameFor(basename(dir));
  const versions = pinnedVersions();
  // Every file rendered before the first is written: a template problem leaves the folder as it was.
  const rendered = templateFiles(templateDir)
    .map((file) => ({ file: shippedAs(file), text: render(file, name, versions) }))
    .sort((a, b) => a.file.localeCompare(b.file));
  for (const { file, text } of rendered) {
    const to = join(dir, file);
    await mkdir(dirname(to), { recursive: true });
    await writeFile(to, text, { flag: "wx" });
  }
  return { ok: true, dir, name, files: rendered.map((r) => r.file) };
}

/** Where a template file lands in the project (`gitignore` → `.gitignore`). */
function shippedAs(file: string): string {
  const renamed = RENAMED[basename(file)];
  return renamed ? join(dirname(file), renamed) : file;
}

function render(file: string, name: string, versions: Record<string, string>): string {
  return readFileSync(join(templateDir, file), "utf8")
    .replaceAll("{{name}}", name)
    .replace(/\{\{version:([^}]+)\}\}/g, (_, pkg: string) => {
      const version = versions[pkg];
      if (!version)
        throw new Error(`templates/agent/${file}: no version for ${pkg} in openwop-a2a-host's package.json`);
      return version;
    });
}

/** The versions the generated package.json pins: ours (a caret range) and those of our dependencies. */
function pinnedVersions(): Record<string, string> {
  const pkg = JSON.parse(readFileSync(join(projectRoot, "package.json"), "utf8")) as {
    name: string;
    version: string;
    dependencies?: Record<string, string>;
    devDependencies?: Record<string, string>;
  };
  return { ...pkg.dependencies, ...pkg.devDependencies, [pkg.name]: `^${pkg.version}` };
}

/** Every file under `root`, as paths relative to it. */
function templateFiles(root: string): string[] {
  const out: string[] = [];
  const walk = (dir: string): void => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const path = join(dir, entry.name);
      if (entry.isDirectory()) walk(path);
      else out.push(relative(root, path));
    }
  };
  walk(root);
  return out;
}

/** What `init` prints when it has written the project: the files and the commands a new user types next. */
export function initSummary(result: Extract<InitResult, { ok: true }>, target: string): string {
  const cd =
    resolve(target) === resolve(".") ? "" : `  cd ${/^[\w./~-]+$/.test(target) ? target : JSON.stringify(target)}\n`;
  return `Created the agent project "${result.name}" in ${result.dir}:
${result.files.map((f) => `  ${f}`).join("\n")}

Next:
${cd}  npm install
  npm test          # the agent end to end with an A2A client
  npm start         # the agent on http://localhost:8080

Got openwop-a2a-host as a tarball, not from the npm registry? Instead of the plain "npm install", run
  npm install /path/to/openwop-a2a-host-${packageVersion}.tgz
which installs it from the file, and everything else the project needs from the registry.
`;
}
