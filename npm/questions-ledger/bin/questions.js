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

// The commands, to name the `procedure` of a failure document as the binary would.
const COMMANDS = new Set([
  "log", "answer", "skip", "list", "check", "clear", "reset", "history", "ingest", "render",
  "import", "answers", "accept-defaults", "ask", "info", "decline", "events", "watch", "serve",
  "approve", "reject", "group", "completions", "man", "mcp", "hook", "init",
]);

// The command word of this call, past the global flags and their values.
function procedure(args) {
  for (let i = 0; i < args.length; i++) {
    const word = args[i];
    if (word === "--db" || word === "--by") {
      i++;
    } else if (!word.startsWith("-")) {
      return COMMANDS.has(word) ? word : undefined;
    }
  }
  return undefined;
}

// The contract's failure document on stdout, the message on stderr, and exit 1: every
// failure of the launcher itself is an operational error (the contract has no 126/127).
function fail(message) {
  const body = { ok: false };
  const name = procedure(process.argv.slice(2));
  if (name) body.procedure = name;
  body.error = message;
  body.error_code = "io_error";
  process.stdout.write(JSON.stringify(body, null, 2) + "\n");
  process.stderr.write(`questions: ${message}\n`);
  process.exit(1);
}

function nativeBinary() {
  if (process.env.QUESTIONS_BINARY) return process.env.QUESTIONS_BINARY;
  const platform = `${process.platform} ${process.arch}`;
  const name = PACKAGES[platform];
  if (!name) {
    fail(`no questions binary is published on npm for ${platform}. ${OTHER_WAYS}`);
  }
  try {
    const dir = path.dirname(require.resolve(`${name}/package.json`));
    return path.join(dir, process.platform === "win32" ? "questions.exe" : "questions");
  } catch {
    fail(
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
const forwarded = new Set();
const forward = (signal) => {
  forwarded.add(signal);
  if (child.exitCode === null && child.signalCode === null) child.kill(signal);
};
for (const signal of SIGNALS) process.on(signal, forward);

child.on("error", (err) => {
  const why = err.code === "EACCES" ? "it is not executable (chmod +x it)" : err.message;
  fail(`could not run ${binary}: ${why}. ${OTHER_WAYS}`);
});
child.on("exit", (code, signal) => {
  if (signal && forwarded.has(signal)) {
    // Stopped as asked: end by the same signal, as a shell reports it (128 + n).
    for (const s of SIGNALS) process.removeListener(s, forward);
    process.kill(process.pid, signal);
    return;
  }
  if (signal) {
    // Killed by a signal nobody sent through here: a crash (SIGSEGV, SIGABRT) or the
    // system (SIGKILL when out of memory).
    fail(`the questions binary ${binary} was stopped by ${signal}, which it does not send itself (a crash, or the system ending it); what it was doing may not have finished`);
  }
  process.exit(code ?? 1);
});
