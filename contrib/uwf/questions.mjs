#!/usr/bin/env node
// A drop-in for the uwf question protocol's questions.mjs: the same arguments, the same
// JSON and exit codes, answered by `questions` on the ledger beside this file
// (uwf-questions.db), so the skill's callers, its companion extension and reset-all.mjs
// keep seeing one ledger. Put it where the skill's questions.mjs was. The binary is
// $QUESTIONS_BINARY when set, else `questions` on the PATH.
import { spawnSync } from "node:child_process";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const binary = process.env.QUESTIONS_BINARY || "questions";
const args = ["--db", join(here, "uwf-questions.db"), ...process.argv.slice(2)];
const run = spawnSync(binary, args, { stdio: "inherit" });

if (run.error) {
  const error =
    `cannot run ${binary}: ${run.error.message}. Install questions (npx questions-ledger, ` +
    "pipx install questions-ledger or cargo install questions) or set QUESTIONS_BINARY";
  process.stdout.write(
    JSON.stringify({ ok: false, error, error_code: "io_error" }, null, 2) + "\n",
  );
  process.stderr.write(error + "\n");
  process.exit(1);
}
process.exit(run.status ?? 1);
