// The CI gate: logs a question (or an approval) in the questions ledger, waits for the
// person's answer with `questions check --wait`, and reports the decision as the CI
// system's outputs. The gate itself is the binary's: this file only translates inputs
// into its arguments and its JSON into outputs, so it needs no npm package and no build
// step. The binary is the only thing that reaches the ledger, and it never calls GitHub's
// API. The action's one network call of its own comes first, before anything is logged:
// with no `questions` on PATH (nor QUESTIONS_BINARY), it downloads the release's static
// binary for the runner and checks it against the release's SHA-256.
//
// One file serves three CI systems, told apart by their environments:
//   GitHub Actions  inputs INPUT_*, outputs to $GITHUB_OUTPUT, a line in $GITHUB_STEP_SUMMARY
//   GitLab CI/CD    inputs QUESTIONS_GATE_*, outputs as a dotenv report ($QUESTIONS_GATE_DOTENV)
//   Buildkite       inputs QUESTIONS_GATE_*, outputs as `buildkite-agent meta-data set`

import { spawnSync } from "node:child_process";
import { createHash, randomBytes } from "node:crypto";
import { appendFileSync, chmodSync, existsSync, mkdirSync, realpathSync, writeFileSync } from "node:fs";
import { delimiter, join } from "node:path";
import { pathToFileURL } from "node:url";

/** The decisions that fail the step; `answered`, `approved` and `skipped` pass it. */
const FAILING = new Set(["rejected", "declined", "expired"]);

/** Every output, in the order they are written. */
const OUTPUTS = [
  "decision",
  "answer",
  "answered-by",
  "channel",
  "question-id",
  "answered-at",
  "reason",
];

/** A failure of the step with a message for the log (not a decision). */
class GateError extends Error {}

/** Which CI system runs this, from its environment. */
function platformOf(env) {
  if (env.GITLAB_CI === "true") return "gitlab";
  if (env.BUILDKITE === "true") return "buildkite";
  return "github";
}

/** An input as GitHub passes it (INPUT_NAME), else as the other systems' steps do. */
function input(env, name) {
  const key = name.replace(/ /g, "_").toUpperCase();
  const value = env[`INPUT_${key}`] ?? env[`QUESTIONS_GATE_${key.replace(/-/g, "_")}`] ?? "";
  return value.trim();
}

/** Items of a list input: one a line, or comma-separated. */
function items(text) {
  return text
    .split(/[\n,]/)
    .map((s) => s.trim())
    .filter((s) => s !== "");
}

/** Seconds from `3600`, `90s`, `30m`, `2h` or `1d`. */
function seconds(text) {
  const m = /^(\d+)\s*([smhd]?)$/.exec(text);
  if (!m) {
    throw new GateError(`timeout '${text}' is not a duration: seconds, or 90s, 30m, 2h, 1d`);
  }
  const n = Number(m[1]) * { "": 1, s: 1, m: 60, h: 3600, d: 86400 }[m[2]];
  if (n < 1) throw new GateError("timeout must be at least one second");
  return n;
}

/** Hides a secret in the GitHub log (a `::add-mask::` command; other systems mask their own). */
function mask(platform, secret) {
  if (platform === "github" && secret) process.stdout.write(`::add-mask::${secret}\n`);
}

/** The password in a ledger URL (postgres://user:PASSWORD@host/db), if any. */
function passwordOf(ledger) {
  const m = /^[a-z][a-z0-9+.-]*:\/\/[^/@:]*:([^/@]*)@/i.exec(ledger);
  return m ? m[1] : "";
}

/**
 * Runs the binary with `args`; the ledger and the token reach it through its environment
 * (QUESTIONS_DB, QUESTIONS_TOKEN), never its command line. Returns its exit code, its
 * parsed JSON (null if none) and its stderr.
 */
function questions(ctx, args) {
  const result = spawnSync(ctx.binary, args, {
    env: ctx.childEnv,
    encoding: "utf8",
    maxBuffer: 64 * 1024 * 1024,
  });
  if (result.error) {
    throw new GateError(
      `cannot run '${ctx.binary}': ${result.error.message} (put questions on PATH, or set QUESTIONS_BINARY)`,
    );
  }
  let json = null;
  try {
    json = JSON.parse(result.stdout);
  } catch {
    json = null;
  }
  return { code: result.status, json, stderr: result.stderr.trim() };
}

/** The document of a call that must succeed, or the binary's own error. */
function must(ctx, args) {
  const run = questions(ctx, args);
  if (run.code !== 0 || !run.json || run.json.ok === false) {
    const why = run.json?.error ?? (run.stderr || `exit ${run.code}`);
    throw new GateError(`questions ${args[0]} failed: ${why}`);
  }
  return run.json;
}

/** The release targets, by Node's platform and architecture. */
const TARGETS = {
  "linux x64": "x86_64-unknown-linux-musl",
  "linux arm64": "aarch64-unknown-linux-musl",
  "darwin x64": "x86_64-apple-darwin",
  "darwin arm64": "aarch64-apple-darwin",
};

/** Whether `name` is an executable on the PATH of `env`. */
function onPath(env, name) {
  return (env.PATH ?? "").split(delimiter).some((dir) => dir !== "" && existsSync(join(dir, name)));
}

/**
 * The binary to run: QUESTIONS_BINARY, else `questions` on PATH, else the release's static
 * binary for this runner, downloaded once into the runner's temporary folder and checked
 * against the SHA-256 the release publishes beside it. The release is the action's own
 * (`GITHUB_ACTION_REPOSITORY`, the version of its ref or the `version` input), or
 * QUESTIONS_RELEASE_URL (a mirror: the folder holding the archive and its .sha256).
 */
async function binaryFor(env) {
  if (env.QUESTIONS_BINARY) return env.QUESTIONS_BINARY;
  if (onPath(env, "questions")) return "questions";
  const target = TARGETS[`${process.platform} ${process.arch}`];
  if (!target) {
    throw new GateError(`no release binary for ${process.platform} ${process.arch}: put questions on PATH, or set QUESTIONS_BINARY`);
  }
  const version = (input(env, "version") || env.GITHUB_ACTION_REF || "").replace(/^v/, "");
  if (!/^\d+\.\d+\.\d+([-+][0-9A-Za-z.-]+)?$/.test(version)) {
    throw new GateError(`the version '${version}' names no release: set the action's version input (e.g. 0.1.0), or put questions on PATH`);
  }
  const base = env.QUESTIONS_RELEASE_URL
    || (env.GITHUB_ACTION_REPOSITORY
      ? `https://github.com/${env.GITHUB_ACTION_REPOSITORY}/releases/download/v${version}`
      : "");
  if (!base) throw new GateError("no release to download from: put questions on PATH, or set QUESTIONS_BINARY");
  const name = `questions-${version}-${target}`;
  const folder = join(env.RUNNER_TEMP || env.TMPDIR || "/tmp", name);
  const binary = join(folder, name, "questions");
  if (existsSync(binary)) return binary;
  const get = async (file) => {
    let reply;
    try {
      reply = await fetch(`${base.replace(/\/$/, "")}/${file}`);
    } catch (e) {
      throw new GateError(`cannot download ${file}: ${e.cause?.message ?? e.message}`);
    }
    if (!reply.ok) throw new GateError(`cannot download ${file}: HTTP ${reply.status}`);
    return Buffer.from(await reply.arrayBuffer());
  };
  const archive = await get(`${name}.tar.gz`);
  const published = (await get(`${name}.tar.gz.sha256`)).toString("utf8").trim().split(/\s+/)[0].toLowerCase();
  const actual = createHash("sha256").update(archive).digest("hex");
  if (published !== actual) {
    throw new GateError(`${name}.tar.gz does not match its published SHA-256 (${published || "none"}, the download is ${actual}): not run`);
  }
  mkdirSync(folder, { recursive: true });
  const file = join(folder, `${name}.tar.gz`);
  writeFileSync(file, archive);
  const unpacked = spawnSync("tar", ["-xzf", file, "-C", folder], { encoding: "utf8" });
  if (unpacked.status !== 0 || !existsSync(binary)) {
    throw new GateError(`cannot unpack ${name}.tar.gz: ${unpacked.stderr || unpacked.error?.message || "no questions in it"}`);
  }
  chmodSync(binary, 0o755);
  console.log(`questions gate: questions ${version} for ${target}, its SHA-256 checked`);
  return binary;
}

/** The inputs, checked, and the `questions log` arguments they make. */
function logArgs(env, inputs, requester) {
  const args = ["log", "--stage", inputs.stage, "--question", inputs.question];
  if (inputs.context) args.push("--context", inputs.context);
  for (const option of items(inputs.options)) args.push("--option", option);
  if (inputs.approvers.length > 0) {
    args.push("--approval", "--approvers", inputs.approvers.join(","), "--min", inputs.min);
    if (requester) args.push("--requester", requester);
    // The ledger rejects the approval at the timeout, so that no card asks for a vote
    // nobody waits for any more.
    args.push("--expires-in", `${inputs.timeout}s`, "--on-expiry", "reject");
  } else {
    args.push("--expires-in", `${inputs.timeout}s`, "--on-expiry", "keep");
  }
  return args;
}

function readInputs(env) {
  const approvers = items(input(env, "approvers"));
  const runUrl =
    env.GITHUB_SERVER_URL && env.GITHUB_REPOSITORY && env.GITHUB_RUN_ID
      ? `${env.GITHUB_SERVER_URL}/${env.GITHUB_REPOSITORY}/actions/runs/${env.GITHUB_RUN_ID}`
      : env.CI_JOB_URL || env.BUILDKITE_BUILD_URL || "";
  // A stage of the run's own by default, so that a re-run (a new attempt) asks again.
  const run = env.GITHUB_RUN_ID
    ? `${env.GITHUB_RUN_ID}-${env.GITHUB_RUN_ATTEMPT || "1"}`
    : env.CI_PIPELINE_ID || env.BUILDKITE_BUILD_ID || "";
  let stage = input(env, "stage");
  if (!stage) {
    if (!run) throw new GateError("stage is required outside a CI run");
    stage = `ci-${run}`;
  }
  let question = input(env, "question");
  if (!question) {
    if (approvers.length === 0) throw new GateError("question is required (or approvers, for an approval)");
    const what = env.GITHUB_WORKFLOW || env.CI_PROJECT_PATH || env.BUILDKITE_PIPELINE_SLUG || "the run";
    question = `Approve ${what}${env.GITHUB_RUN_NUMBER ? ` #${env.GITHUB_RUN_NUMBER}` : ""}?`;
  }
  const min = input(env, "min") || "1";
  if (!/^\d+$/.test(min) || Number(min) < 1) {
    throw new GateError(`min '${min}' is not a number of approvers (1 or more)`);
  }
  const context = [input(env, "context"), runUrl ? `Run: ${runUrl}` : ""]
    .filter((s) => s !== "")
    .join("\n\n");
  return {
    stage,
    question,
    options: input(env, "options"),
    context,
    approvers,
    min,
    timeout: seconds(input(env, "timeout") || "3600"),
  };
}

/** The decision and the outputs, from the question's final state and the gate's result. */
function decide(q, gate, timeout) {
  const approval = q.approval ?? null;
  const out = {
    decision: "",
    answer: q.answer ?? "",
    "answered-by": q.answered_by ?? "",
    channel: q.channel ?? "",
    "question-id": String(q.id),
    "answered-at": q.answered_at ?? "",
    reason: "",
  };
  if (q.status === "answered") {
    out.decision = approval ? "approved" : "answered";
    if (approval) {
      out["answered-by"] = approval.votes
        .filter((v) => v.vote === "approve")
        .map((v) => v.by)
        .join(",");
    }
  } else if (q.status === "skipped") {
    out.decision = "skipped";
    out.reason = q.skip_reason ?? "";
    out["answered-at"] = q.updated_at ?? "";
  } else if (q.status === "declined") {
    const expired = q.channel === "expiry";
    out.decision = expired ? "expired" : approval ? "rejected" : "declined";
    out.reason = expired ? `nobody decided within ${timeout}s` : (q.decline_reason ?? "");
    out["answered-at"] = q.updated_at ?? "";
  } else if (gate.timed_out) {
    out.decision = "expired";
    out.reason = `nobody decided within ${timeout}s`;
    out["answered-by"] = "";
    out.channel = "expiry";
  } else {
    return null;
  }
  return out;
}

/** The audit line: who decided what, through which channel, when. */
function summaryLine(out, question) {
  const q = `“${question}”`;
  switch (out.decision) {
    case "expired":
      return `Nobody decided ${q}: expired at ${out["answered-at"]} (${out.reason}).`;
    case "answered":
      return `${out["answered-by"] || "someone"} answered ${q} with “${out.answer}” via ${out.channel} at ${out["answered-at"]}.`;
    case "approved":
      return `${out["answered-by"].split(",").join(" and ")} approved ${q} via ${out.channel} at ${out["answered-at"]}.`;
    case "rejected":
      return `${out["answered-by"]} rejected ${q} via ${out.channel} at ${out["answered-at"]}: ${out.reason}.`;
    case "declined":
      return `${out["answered-by"] || "someone"} declined ${q} via ${out.channel} at ${out["answered-at"]}: ${out.reason}.`;
    default:
      return `${out["answered-by"] || "someone"} skipped ${q} via ${out.channel} at ${out["answered-at"]}.`;
  }
}

/** Writes the outputs the way the CI system reads them. */
function writeOutputs(ctx, out, line) {
  const env = ctx.env;
  if (ctx.platform === "github") {
    if (env.GITHUB_OUTPUT) {
      // The multi-line syntax, with a delimiter no value contains.
      let text = "";
      for (const name of OUTPUTS) {
        let delimiter;
        do delimiter = `ghadelimiter_${randomBytes(16).toString("hex")}`;
        while (out[name].includes(delimiter));
        text += `${name}<<${delimiter}\n${out[name]}\n${delimiter}\n`;
      }
      appendFileSync(env.GITHUB_OUTPUT, text);
    }
    if (env.GITHUB_STEP_SUMMARY) appendFileSync(env.GITHUB_STEP_SUMMARY, `${line}\n`);
  } else if (ctx.platform === "gitlab") {
    // A dotenv report: one NAME=value a line, names as variables spell them, values on
    // one line.
    const file = env.QUESTIONS_GATE_DOTENV || "questions-gate.env";
    let text = "";
    for (const name of OUTPUTS) {
      const key = `QUESTIONS_${name.replace(/-/g, "_").toUpperCase()}`;
      text += `${key}=${out[name].replace(/[\r\n]+/g, " ")}\n`;
    }
    appendFileSync(file, text);
  } else {
    const agent = env.BUILDKITE_AGENT_BINARY || "buildkite-agent";
    for (const name of OUTPUTS) {
      const set = spawnSync(agent, ["meta-data", "set", `questions-${name}`, out[name]], {
        stdio: ["ignore", "inherit", "inherit"],
      });
      if (set.status !== 0) {
        throw new GateError(`buildkite-agent meta-data set questions-${name} failed`);
      }
    }
    spawnSync(agent, ["annotate", "--style", FAILING.has(out.decision) ? "error" : "success", "--context", `questions-${out["question-id"]}`, line], {
      stdio: ["ignore", "inherit", "inherit"],
    });
  }
}

function fail(ctx, message) {
  if (ctx.platform === "github") {
    // A workflow command's data, escaped as the runner reads it.
    const data = message.replace(/%/g, "%25").replace(/\r/g, "%0D").replace(/\n/g, "%0A");
    process.stdout.write(`::error::${data}\n`);
  } else {
    process.stderr.write(`questions gate: ${message}\n`);
  }
  process.exitCode = 1;
}

/** The gate: log, wait, report. Sets process.exitCode to 1 when the step fails. */
export async function run(env = process.env) {
  const platform = platformOf(env);
  const ctx = { env, platform, binary: "questions" };
  try {
    const ledger = input(env, "ledger");
    const token = input(env, "token");
    mask(platform, token);
    mask(platform, passwordOf(ledger || env.QUESTIONS_DB || ""));
    // The binary's environment: the ledger and the token, and none of the inputs (so the
    // token is in no child's INPUT_TOKEN either).
    ctx.childEnv = Object.fromEntries(
      Object.entries(env).filter(([k]) => !k.startsWith("INPUT_") && !k.startsWith("QUESTIONS_GATE_")),
    );
    if (ledger) ctx.childEnv.QUESTIONS_DB = ledger;
    if (token) ctx.childEnv.QUESTIONS_TOKEN = token;

    const inputs = readInputs(env);
    ctx.binary = await binaryFor(env);
    // Only GitHub's logins have an identity kind (github:<login>); elsewhere the
    // requester is whoever logs the approval, as on the command line.
    const login = platform === "github" ? env.GITHUB_ACTOR || "" : "";
    // The ledger names the person `people link NAME github:LOGIN` links the login to as
    // the requester (else the identity itself, which names no approver): the action
    // needs no read of the people, which an agent token may not make.
    const requester = inputs.approvers.length > 0 && login ? `github:${login.toLowerCase()}` : "";

    const logged = must(ctx, logArgs(env, inputs, requester));
    const asked = logged.question?.approval?.requester;
    if (requester && asked) console.log(`questions gate: ${login} started the run, so ${asked} may not approve it`);
    const id = String(logged.question_id);
    console.log(`questions gate: question ${id} in stage '${inputs.stage}'; waiting up to ${inputs.timeout}s`);

    // The wait: the binary's own, which reads again when the ledger changes.
    const gate = questions(ctx, ["check", "--stage", inputs.stage, "--ids", id, "--wait", "--timeout", String(inputs.timeout)]);
    if (!gate.json || (gate.json.error_code && gate.json.gate === undefined) || (gate.code !== 0 && gate.code !== 1)) {
      throw new GateError(`questions check failed: ${gate.json?.error ?? (gate.stderr || `exit ${gate.code}`)}`);
    }
    const listed = must(ctx, ["list", "--stage", inputs.stage]);
    const q = (listed.questions ?? []).find((x) => String(x.id) === id);
    if (!q) throw new GateError(`question ${id} is no longer in stage '${inputs.stage}'`);
    const out = decide(q, gate.json, inputs.timeout);
    if (!out) throw new GateError(`the gate ended with question ${id} ${q.status}: ${gate.stderr}`);
    if (out.decision === "expired" && !out["answered-at"]) out["answered-at"] = new Date().toISOString();

    const line = summaryLine(out, inputs.question);
    console.log(line);
    writeOutputs(ctx, out, line);
    if (FAILING.has(out.decision)) {
      fail(ctx, `${out.decision}: ${out.reason || "no reason given"}`);
    }
    return out;
  } catch (e) {
    if (!(e instanceof GateError)) throw e;
    fail(ctx, e.message);
    return null;
  }
}

// Run directly (`node main.js`, as the GitLab and Buildkite steps do).
if (process.argv[1] && import.meta.url === pathToFileURL(realpathSync(process.argv[1])).href) {
  run();
}
