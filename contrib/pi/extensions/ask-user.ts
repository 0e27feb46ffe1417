/**
 * questions for pi: the seeds' `ask_user` tool, backed by the `questions` ledger.
 *
 * Every call's questions are logged in the ledger (channel `pi`, a stage of the pi
 * session's own unless QUESTIONS_STAGE names one) and the tool returns when a person has
 * settled each of them: in pi's own dialog (interactive mode), in an RPC client's dialogs
 * (RPC mode), or anywhere else the ledger is answered (`questions answer`, the inbox, a
 * relay), in every mode. The result is the seed's `AskUserResult`: the answers under the
 * labels the model offered, a decline with its reason, the call's metadata. A dismissed
 * dialog records nothing: the model is told so, and the questions stay open.
 *
 * The binary is `questions hook pi` (see its --help): QUESTIONS_BINARY, else the command
 * in questions.json beside this file (written by `questions init pi`), else `questions`
 * on PATH, else the native binary of the npm package questions-ledger.
 */

import { spawn, type ChildProcess } from "node:child_process";
import * as fs from "node:fs";
import { createRequire } from "node:module";
import * as path from "node:path";
import { fileURLToPath } from "node:url";
import type { ExtensionAPI, ExtensionContext } from "@mariozechner/pi-coding-agent";
import { Editor, type EditorTheme, Key, matchesKey, truncateToWidth } from "@mariozechner/pi-tui";
import { Type } from "typebox";

const OptionSchema = Type.Object({
	label: Type.String({ description: "Display text" }),
	description: Type.Optional(Type.String({ description: "Help text" })),
});

const QuestionSchema = Type.Object({
	question: Type.String({ description: "The question to ask" }),
	header: Type.Optional(Type.String({ description: "Optional header/title for context" })),
	options: Type.Optional(Type.Array(OptionSchema, { description: "Suggested options" })),
	multiSelect: Type.Optional(Type.Boolean({ description: "Allow multiple selections" })),
});

const AskUserParams = Type.Object({
	questions: Type.Array(QuestionSchema, {
		description: "One or more questions to ask the user",
		minItems: 1,
	}),
	metadata: Type.Optional(
		Type.Object(
			{},
			{
				additionalProperties: true,
				description: "Optional metadata for tracking (e.g., { source: 'setup-wizard' })",
			},
		),
	),
});

interface AskOption {
	label: string;
	description?: string;
}
interface AskQuestion {
	question: string;
	header?: string;
	options?: AskOption[];
	multiSelect?: boolean;
}
interface AskInput {
	questions: AskQuestion[];
	metadata?: Record<string, unknown>;
}
/** One question's choice, as `questions hook pi` records it. */
type Given = { selected: string[]; text?: string } | { decline: string } | null;

const TOOL = "ask_user";
const OTHER = "Other (type your answer)";
/** What the model is told of a dismissed dialog: pi's spec discards its answers, and the
 * ledger records nothing, so the questions stay open and the stage's gate stays shut. */
const DISMISSED =
	"The person dismissed the dialog: nothing was recorded. The questions stay open in the ledger " +
	"(a person can still answer them elsewhere); do not proceed as if they were answered.";
const OTHER_WAYS =
	"Install it (npm install -g questions-ledger, pipx install questions-ledger, or cargo install questions --locked), " +
	"put it on PATH or set QUESTIONS_BINARY to its path, then run `questions init pi` in the project.";

// ---------------------------------------------------------------------------------------
// The binary

interface Binary {
	command: string;
	db?: string;
}

function here(): string | undefined {
	try {
		if (typeof __dirname === "string") return __dirname;
	} catch {}
	try {
		return path.dirname(fileURLToPath(import.meta.url));
	} catch {
		return undefined;
	}
}

/** What `questions init pi` wrote beside this file: the command and the ledger. */
function config(): { command?: string; db?: string } {
	const dir = here();
	if (!dir) return {};
	try {
		return JSON.parse(fs.readFileSync(path.join(dir, "questions.json"), "utf8"));
	} catch {
		return {};
	}
}

function onPath(name: string): string | undefined {
	for (const dir of (process.env.PATH ?? "").split(path.delimiter)) {
		if (!dir) continue;
		const file = path.join(dir, name);
		try {
			fs.accessSync(file, fs.constants.X_OK);
			if (fs.statSync(file).isFile()) return file;
		} catch {}
	}
	return undefined;
}

/** The native binary of the npm package questions-ledger, beside `from` or below it. */
function npmNative(from: string): string | undefined {
	const name = `questions-ledger-${process.platform}-${process.arch}`;
	try {
		const pkg = createRequire(from).resolve(`${name}/package.json`);
		const file = path.join(path.dirname(pkg), "questions");
		if (fs.existsSync(file)) return file;
	} catch {}
	return undefined;
}

/** The binary to run, or why there is none. */
function findBinary(): Binary | string {
	const cfg = config();
	const db = process.env.QUESTIONS_DB ? undefined : cfg.db;
	if (process.env.QUESTIONS_BINARY) return { command: process.env.QUESTIONS_BINARY, db };
	const named = cfg.command && cfg.command !== "questions" ? cfg.command : undefined;
	if (named && fs.existsSync(named)) return { command: named, db };
	const found = onPath("questions");
	if (found) {
		// The npm launcher costs a Node start a call: its native binary, when it is there.
		const real = fs.realpathSync(found);
		if (real.endsWith(".js")) {
			const native = npmNative(real);
			if (native) return { command: native, db };
		}
		return { command: found, db };
	}
	// Installed beside this package (`pi install npm:questions-ledger-pi` brings the npm
	// package questions-ledger), or in the project.
	const dir = here();
	for (const from of [dir && path.join(dir, "index.ts"), path.join(process.cwd(), "package.json")]) {
		const native = from && npmNative(from);
		if (native) return { command: native, db };
	}
	return `the questions binary was not found (QUESTIONS_BINARY is not set, and no \`questions\` is on PATH). ${OTHER_WAYS}`;
}

const live = new Set<ChildProcess>();
process.on("exit", () => {
	for (const child of live) child.kill("SIGTERM");
});

interface Running {
	reply: Promise<any>;
	stop: () => void;
}

/**
 * Runs `questions hook pi` with one event. A waiting call keeps its stdin open: pi gone,
 * whatever way, closes it, and the wait ends with it.
 */
function hook(binary: Binary, event: Record<string, unknown>, wait: boolean): Running {
	const args = binary.db ? ["--db", binary.db, "hook", "pi"] : ["hook", "pi"];
	let child: ChildProcess;
	const stop = () => {
		try {
			child?.stdin?.end();
		} catch {}
		if (child && child.exitCode === null && child.signalCode === null) child.kill("SIGTERM");
	};
	const reply = new Promise<any>((resolve, reject) => {
		child = spawn(binary.command, args, { stdio: ["pipe", "pipe", "pipe"] });
		live.add(child);
		let out = "";
		let err = "";
		child.stdout!.on("data", (d) => (out += d));
		child.stderr!.on("data", (d) => (err += d));
		child.stdin!.on("error", () => {});
		child.on("error", (e: NodeJS.ErrnoException) => {
			live.delete(child);
			reject(new Error(`questions: cannot run ${binary.command}: ${e.message}. ${OTHER_WAYS}`));
		});
		child.on("close", (code, signal) => {
			live.delete(child);
			let doc: any;
			try {
				doc = JSON.parse(out);
			} catch {}
			if (doc?.ok) resolve(doc);
			else if (doc?.error) reject(new Error(`questions: ${doc.error} (${doc.error_code})`));
			else
				reject(
					new Error(
						`questions: ${binary.command} hook pi ended (${signal ?? `exit ${code}`}) without a result: ${err.trim() || "nothing on stderr"}`,
					),
				);
		});
		child.stdin!.write(`${JSON.stringify(event)}\n`);
		if (!wait) child.stdin!.end();
	});
	return { reply, stop };
}

// ---------------------------------------------------------------------------------------
// Results

function toolResult(doc: any, input: AskInput, mode: string, extra: Record<string, unknown> = {}) {
	const result = { ...doc.result, ...extra };
	return {
		content: [{ type: "text" as const, text: JSON.stringify(result, null, 2) }],
		details: {
			questions: input.questions,
			answers: result.answers,
			answeredAt: Date.now(),
			mode,
			metadata: input.metadata,
			stage: doc.stage,
			questionIds: doc.question_ids,
			result,
		},
	};
}

/** Who settled the call elsewhere, as the dialog's closing note says it. */
function settledBy(doc: any): string {
	const who = new Set<string>();
	for (const a of doc.result?.answers ?? []) {
		const by = [a.answeredBy, a.channel ? `via ${a.channel}` : undefined].filter(Boolean).join(" ");
		if (by) who.add(by);
	}
	return who.size ? [...who].join(", ") : "someone else";
}

// ---------------------------------------------------------------------------------------
// Interactive mode: the seed's dialog

interface Chosen {
	given: Given[];
	cancelled: boolean;
}

function dialog(ctx: ExtensionContext, input: AskInput, close: { done?: (c: Chosen | undefined) => void }) {
	return ctx.ui.custom<Chosen | undefined>((tui, theme, _kb, done) => {
		close.done = done;
		const qs = input.questions;
		const multi = qs.length > 1;
		const tabs = qs.length + (multi ? 1 : 0);
		let tab = 0;
		let cursor = 0;
		let typing = false;
		let confirming = false;
		let cached: string[] | undefined;
		const answers: (Given | undefined)[] = qs.map(() => undefined);
		const checked: Set<number>[] = qs.map(() => new Set());
		const editorTheme: EditorTheme = {
			borderColor: (s) => theme.fg("accent", s),
			selectList: {
				selectedPrefix: (t) => theme.fg("accent", t),
				selectedText: (t) => theme.fg("accent", t),
				description: (t) => theme.fg("muted", t),
				scrollInfo: (t) => theme.fg("dim", t),
				noMatch: (t) => theme.fg("warning", t),
			},
		};
		const editor = new Editor(tui, editorTheme);
		const refresh = () => {
			cached = undefined;
			tui.requestRender();
		};
		const options = (i: number) => [...(qs[i]?.options ?? []).map((o) => o.label), OTHER];
		const answeredCount = () => answers.filter((a) => a !== undefined).length;
		const finish = () => done({ given: answers.map((a) => a ?? null), cancelled: false });
		const next = () => {
			if (!multi) return finish();
			tab = Math.min(tab + 1, qs.length);
			cursor = 0;
			refresh();
		};
		const cancel = () => {
			if (answeredCount() > 0) {
				confirming = true;
				refresh();
			} else done({ given: qs.map(() => null), cancelled: true });
		};
		editor.onSubmit = (value) => {
			const text = value.trim();
			typing = false;
			editor.setText("");
			if (!text) return refresh();
			const q = qs[tab];
			const selected = q.multiSelect ? [...checked[tab]].map((i) => q.options![i].label) : [];
			answers[tab] = { selected, text };
			next();
		};
		const handleInput = (data: string) => {
			if (confirming) {
				if (data === "y" || data === "Y") done({ given: qs.map(() => null), cancelled: true });
				else if (data === "n" || data === "N" || matchesKey(data, Key.escape)) {
					confirming = false;
					refresh();
				}
				return;
			}
			if (typing) {
				if (matchesKey(data, Key.escape)) {
					typing = false;
					editor.setText("");
					return refresh();
				}
				editor.handleInput(data);
				return refresh();
			}
			if (multi && (matchesKey(data, Key.tab) || matchesKey(data, Key.right))) {
				tab = (tab + 1) % tabs;
				cursor = 0;
				return refresh();
			}
			if (multi && (matchesKey(data, Key.shift("tab")) || matchesKey(data, Key.left))) {
				tab = (tab - 1 + tabs) % tabs;
				cursor = 0;
				return refresh();
			}
			if (matchesKey(data, Key.escape)) return cancel();
			if (tab === qs.length) {
				if (matchesKey(data, Key.enter) && answeredCount() === qs.length) finish();
				return;
			}
			const q = qs[tab];
			const opts = options(tab);
			if (matchesKey(data, Key.up)) {
				cursor = Math.max(0, cursor - 1);
				return refresh();
			}
			if (matchesKey(data, Key.down)) {
				cursor = Math.min(opts.length - 1, cursor + 1);
				return refresh();
			}
			if (/^[1-9]$/.test(data) && Number(data) <= opts.length) {
				cursor = Number(data) - 1;
				if (!q.multiSelect) data = "\r";
				else return refresh();
			}
			const isOther = cursor === opts.length - 1;
			if (q.multiSelect && data === " " && !isOther) {
				if (checked[tab].has(cursor)) checked[tab].delete(cursor);
				else checked[tab].add(cursor);
				return refresh();
			}
			if (matchesKey(data, Key.enter) || data === "\r") {
				if (isOther || !q.options?.length) {
					typing = true;
					return refresh();
				}
				if (q.multiSelect) {
					if (checked[tab].size === 0) checked[tab].add(cursor);
					answers[tab] = { selected: [...checked[tab]].sort().map((i) => q.options![i].label) };
				} else {
					answers[tab] = { selected: [q.options[cursor].label] };
				}
				next();
			}
		};
		const render = (width: number): string[] => {
			if (cached) return cached;
			const lines: string[] = [];
			const add = (s: string) => lines.push(truncateToWidth(s, width));
			add(theme.fg("accent", "─".repeat(width)));
			if (multi) {
				const bar = qs.map((q, i) => {
					const label = ` ${answers[i] ? "■" : "□"} ${q.header || `Q${i + 1}`} `;
					return i === tab ? theme.bg("selectedBg", theme.fg("text", label)) : theme.fg(answers[i] ? "success" : "muted", label);
				});
				const submit = " ✓ Submit ";
				bar.push(tab === qs.length ? theme.bg("selectedBg", theme.fg("text", submit)) : theme.fg("dim", submit));
				add(` ← ${bar.join(" ")} →`);
				lines.push("");
			}
			if (confirming) {
				add(theme.fg("warning", ` Discard ${answeredCount()} answer${answeredCount() === 1 ? "" : "s"}? (y/n)`));
			} else if (tab === qs.length) {
				add(theme.fg("accent", theme.bold(" Ready to submit")));
				lines.push("");
				qs.forEach((q, i) => {
					const a = answers[i];
					const text = a && "selected" in a ? [...a.selected, ...(a.text ? [a.text] : [])].join(", ") : "(unanswered)";
					add(`${theme.fg("muted", ` ${q.header || `Q${i + 1}`}: `)}${theme.fg("text", text)}`);
				});
				lines.push("");
				add(theme.fg("dim", " Enter submit • Tab/←→ switch • Esc cancel"));
			} else {
				const q = qs[tab];
				if (!multi && q.header) add(theme.fg("accent", theme.bold(` ${q.header}`)));
				add(theme.fg("text", ` ${q.question}`));
				lines.push("");
				const opts = options(tab);
				if (q.options?.length) {
					opts.forEach((label, i) => {
						const mark = q.multiSelect && i < opts.length - 1 ? (checked[tab].has(i) ? "[x] " : "[ ] ") : `${i + 1}. `;
						const prefix = i === cursor ? theme.fg("accent", "> ") : "  ";
						add(prefix + theme.fg(i === cursor ? "accent" : "text", mark + label));
						const description = q.options![i]?.description;
						if (description) add(`       ${theme.fg("muted", description)}`);
					});
					lines.push("");
				}
				if (typing || !q.options?.length) {
					typing = true;
					for (const line of editor.render(width - 2)) add(` ${line}`);
					lines.push("");
					add(theme.fg("dim", " Enter to submit • Esc to cancel"));
				} else if (q.multiSelect) {
					add(theme.fg("dim", " Space to toggle • Enter to submit • Esc to cancel"));
				} else {
					add(theme.fg("dim", ` ↑↓ navigate • 1-9 quick select • Enter to select${multi ? " • Tab switch" : ""} • Esc to cancel`));
				}
			}
			add(theme.fg("accent", "─".repeat(width)));
			cached = lines;
			return lines;
		};
		return { render, invalidate: () => (cached = undefined), handleInput };
	});
}

// ---------------------------------------------------------------------------------------
// RPC mode: the client's dialogs

function rpcMode(): boolean {
	const argv = process.argv;
	const i = argv.indexOf("--mode");
	return (i >= 0 && argv[i + 1] === "rpc") || argv.includes("--mode=rpc");
}

async function rpcDialogs(ctx: ExtensionContext, input: AskInput, signal: AbortSignal): Promise<Chosen | undefined> {
	const given: Given[] = [];
	for (const q of input.questions) {
		const title = q.header ? `${q.header}: ${q.question}` : q.question;
		const labels = (q.options ?? []).map((o) => o.label);
		let g: Given = null;
		if (labels.length) {
			const picked = await ctx.ui.select(title, [...labels, OTHER], { signal });
			if (signal.aborted) return undefined;
			if (picked === undefined) return { given: input.questions.map(() => null), cancelled: true };
			if (picked !== OTHER) g = { selected: [picked] };
		}
		if (!g) {
			const text = await ctx.ui.input(title, "Your answer", { signal });
			if (signal.aborted) return undefined;
			if (text === undefined || !text.trim()) return { given: input.questions.map(() => null), cancelled: true };
			g = { selected: [], text: text.trim() };
		}
		given.push(g);
	}
	return { given, cancelled: false };
}

// ---------------------------------------------------------------------------------------
// The tool

export default function questionsAskUser(pi: ExtensionAPI) {
	/** Results looked up for calls a resumed session has no result for. */
	const recovered = new Map<string, any>();

	pi.registerTool({
		name: TOOL,
		label: "Ask User",
		description: `Ask the user one or more questions. Use when you need:
- Clarification on requirements or preferences
- User decisions between multiple valid approaches
- Confirmation before significant changes
- Input that cannot be inferred from context

Each question can have suggested options with descriptions.
Users can always select "Other" to provide a custom answer.
The questions go to the person's questions ledger; the tool returns once a person has answered, skipped or declined each one (a decline comes with a reason: ask again another way).

Guidelines:
- Put recommended option first with "(Recommended)" in the label
- Batch related questions together (avoid multiple rounds)
- Limit to 3-5 questions per call to avoid user fatigue
- Don't ask what can be inferred from context or previous messages
- Don't re-ask questions already answered in this session`,
		parameters: AskUserParams,

		async execute(toolCallId, params, signal, _onUpdate, ctx) {
			const input = params as AskInput;
			if (!input.questions?.length) throw new Error("ask_user needs at least one question");
			const binary = findBinary();
			if (typeof binary === "string") throw new Error(`questions: ${binary}`);
			const base = {
				session_id: ctx.sessionManager.getSessionId(),
				tool_call_id: toolCallId,
				input,
			};
			const mode = !ctx.hasUI ? "print" : rpcMode() ? "rpc" : "interactive";
			const waiting = hook(binary, { ...base, event: "ask", wait: true }, true);
			const onAbort = () => waiting.stop();
			signal?.addEventListener("abort", onAbort, { once: true });
			try {
				if (mode === "print") return toolResult(await waiting.reply, input, mode);

				const withdraw = new AbortController();
				const close: { done?: (c: Chosen | undefined) => void } = {};
				signal?.addEventListener("abort", () => withdraw.abort(), { once: true });
				if (mode === "rpc") {
					// The structured questions, for a client that shows its own dialog.
					ctx.ui.notify(JSON.stringify({ type: "ask_user_request", requestId: toolCallId, ...input }), "info");
				}
				const asked =
					mode === "rpc"
						? rpcDialogs(ctx, input, withdraw.signal)
						: dialog(ctx, input, close);
				const first = await Promise.race([
					waiting.reply.then(
						(doc) => ({ from: "ledger" as const, doc }),
						(error) => ({ from: "error" as const, error }),
					),
					asked.then((chosen) => ({ from: "dialog" as const, chosen })),
				]);
				if (first.from === "error") {
					withdraw.abort();
					close.done?.(undefined);
					throw first.error;
				}
				if (first.from === "ledger") {
					// Settled elsewhere: the dialog closes by itself and says who settled it.
					withdraw.abort();
					close.done?.(undefined);
					const who = settledBy(first.doc);
					ctx.ui.notify(`ask_user: answered by ${who}`, "info");
					if (mode === "rpc") {
						ctx.ui.notify(
							JSON.stringify({ type: "ask_user_withdrawn", requestId: toolCallId, answeredBy: who }),
							"info",
						);
					}
					return toolResult(first.doc, input, mode);
				}
				if (signal?.aborted) throw new Error("ask_user was interrupted");
				const chosen = first.chosen;
				if (!chosen) return toolResult(await waiting.reply, input, mode);
				waiting.stop();
				if (chosen.cancelled) {
					// Nothing is written: the call as the ledger holds it, for its stage and ids.
					const doc = await hook(binary, { ...base, event: "look" }, false).reply;
					return toolResult(doc, input, mode, { answered: false, answers: [], cancelled: true, note: DISMISSED });
				}
				const doc = await hook(binary, { ...base, event: "answered", answers: chosen.given }, false).reply;
				return toolResult(doc, input, mode);
			} finally {
				signal?.removeEventListener("abort", onAbort);
				waiting.stop();
			}
		},
	});

	// pi does not run an interrupted call again when its session is resumed: the model is
	// sent "No result provided" for it. Answers given while pi was down are looked up in
	// the ledger and stand in for that result.
	pi.on("context", async (event, ctx) => {
		const messages = event.messages as any[];
		const answered = new Set<string>();
		for (const m of messages) if (m.role === "toolResult") answered.add(m.toolCallId);
		const orphans: { index: number; call: any }[] = [];
		messages.forEach((m, index) => {
			if (m.role !== "assistant" || !Array.isArray(m.content)) return;
			for (const c of m.content) {
				if (c.type === "toolCall" && c.name === TOOL && !answered.has(c.id)) orphans.push({ index, call: c });
			}
		});
		if (!orphans.length) return;
		const binary = findBinary();
		if (typeof binary === "string") return;
		const out = [...messages];
		for (const { index, call } of orphans.reverse()) {
			let doc = recovered.get(call.id);
			if (!doc) {
				try {
					doc = await hook(
						binary,
						{
							event: "look",
							session_id: ctx.sessionManager.getSessionId(),
							tool_call_id: call.id,
							input: call.arguments,
						},
						false,
					).reply;
				} catch {
					continue;
				}
				if (!doc.settled) continue;
				recovered.set(call.id, doc);
			}
			const at = out.indexOf(messages[index]) + 1;
			out.splice(at, 0, {
				role: "toolResult",
				toolCallId: call.id,
				toolName: TOOL,
				content: [{ type: "text", text: JSON.stringify(doc.result, null, 2) }],
				isError: false,
				timestamp: Date.now(),
			});
		}
		return { messages: out };
	});
}
