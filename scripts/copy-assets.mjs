#!/usr/bin/env node
// After tsc: copies every `assets/` folder under src/ (the console's page, script and styles) next to its
// compiled module in dist/src/, so the package serves them from its own build and never reads src/.
import { cpSync, readdirSync } from "node:fs";
import { dirname, join, relative } from "node:path";
import { fileURLToPath } from "node:url";

const root = dirname(dirname(fileURLToPath(import.meta.url)));
const src = join(root, "src");

function copyAssets(dir) {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    if (!entry.isDirectory()) continue;
    const path = join(dir, entry.name);
    if (entry.name === "assets") cpSync(path, join(root, "dist", "src", relative(src, path)), { recursive: true });
    else copyAssets(path);
  }
}
copyAssets(src);
