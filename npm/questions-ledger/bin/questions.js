#!/usr/bin/env node
// `questions` from npm: runs the native binary that npm installed for this platform (the
// optional dependency questions-ledger-<os>-<cpu>), or $QUESTIONS_BINARY, with this
// process's stdin, stdout and stderr, and ends as it ends: same exit code, same signal.
// Node's start costs ~0.1 s a call: `questions --version --json` prints the native
// binary's own path, for configs that call it often (hooks, MCP servers).
"use strict";

const { spawn } = require("node:child_process");
const path = require("node:path");

const PACKAGES = {
  "linux x64": "questions-ledger-linux-x64",
  "linux arm64": "questions-ledger-linux-arm64",
  "darwin x64": "questions-ledger-darwin-x64",
  "darwin arm64": "questions-ledger-darwin-arm64",
};
const OTHER_WAYS =
  "Other ways to install: pipx install questions-ledger; cargo install questions --locked; " +
  "or a release archive with its SHA-256 sum (see the README). " +
  "Set QUESTIONS_BINARY to a questions binary to run that one.";

function fail(code, message) {
  // The contract's failure document on stdout, the message on stderr.
  const body = { ok: false, error: message, error_code: "io_error" };
  process.stdout.write(JSON.stringify(body, null, 2) + "\n");
  process.stderr.write(`questions: ${message}\n`);
  process.exit(code);
}

function nativeBinary() {
  if (process.env.QUESTIONS_BINARY) return process.env.QUESTIONS_BINARY;
  const platform = `${process.platform} ${process.arch}`;
  const name = PACKAGES[platform];
  if (!name) {
    fail(127, `no questions binary is published on npm for ${platform}. ${OTHER_WAYS}`);
  }
  try {
    const dir = path.dirname(require.resolve(`${name}/package.json`));
    return path.join(dir, process.platform === "win32" ? "questions.exe" : "questions");
  } catch {
    fail(
      127,
      `the package ${name}, which holds the questions binary for ${platform}, is not ` +
        `installed (npm leaves optional dependencies out with --omit=optional or ` +
        `--no-optional). Reinstall questions-ledger without that option. ${OTHER_WAYS}`,
    );
  }
}

const binary = nativeBinary();
const child = spawn(binary, process.argv.slice(2), { stdio: "inherit" });

// A signal sent to this launcher goes to the binary, so that stopping `questions serve`
// or `questions mcp` started through npm leaves no process behind.
const SIGNALS = ["SIGTERM", "SIGINT", "SIGHUP", "SIGQUIT"];
const forward = (signal) => {
  if (child.exitCode === null && child.signalCode === null) child.kill(signal);
};
for (const signal of SIGNALS) process.on(signal, forward);

child.on("error", (err) => {
  const code = err.code === "EACCES" ? 126 : 127;
  fail(code, `could not run ${binary}: ${err.message}. ${OTHER_WAYS}`);
});
child.on("exit", (code, signal) => {
  if (signal) {
    // End by the same signal, as a shell reports it (128 + n).
    for (const s of SIGNALS) process.removeListener(s, forward);
    process.kill(process.pid, signal);
    return;
  }
  process.exit(code ?? 1);
});
