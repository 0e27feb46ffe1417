#!/usr/bin/env python3
"""The benchmark: per-call time and peak memory of `questions` against the floor of
starting the process (`questions --version`), on ledgers of 10 000 and 1 000 000
questions, plus ingest, render and concurrent throughput.

Run from the repository root:  scripts/with-postgres python3 bench/bench.py
(or python3 bench/bench.py for SQLite alone; python3 bench/bench.py serve measures
only the web inbox's page, python3 bench/bench.py hook only the harness hook,
python3 bench/bench.py pi only the time from an answer in the ledger to pi's model,
python3 bench/bench.py remote the ledger over HTTPS beside the file and 1 000 waiters,
python3 bench/bench.py startup only the start-up beside a hello-world binary and a
floor program doing `check`'s read with rusqlite, both built with the same release
profile, and the sizes of the default and CLI-only binaries)
It builds the release binary, needs hyperfine (installed with apt-get when missing and
run as root), prints a table and writes it to bench/RESULTS.md. Ratios are measured
within one run: the machine is noisy, the floor moves with it.
"""

import json
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BIN = os.path.join(ROOT, "target", "release", "questions")
STAGES = 1000
RUNS = int(os.environ.get("BENCH_RUNS", "40"))
# Start-up: many short hyperfine rounds of all its calls, so that each ratio is taken
# within a round.
STARTUP_ROUNDS, STARTUP_RUNS = 15, 40
PG_WAKE = None


def sh(*args, **kw):
    return subprocess.run(args, check=True, **kw)


def ensure_tools():
    missing = [p for p, path in (("hyperfine", shutil.which("hyperfine")), ("time", shutil.which("/usr/bin/time")), ("strace", shutil.which("strace"))) if path is None]
    if missing:
        if os.geteuid() == 0:
            sh("apt-get", "install", "-y", *missing, stdout=subprocess.DEVNULL)
        else:
            sys.exit(f"needed: apt-get install {' '.join(missing)}")
    sh("cargo", "build", "--release", "--quiet", cwd=ROOT)


def throwaway_binary(name, main_rs, dependencies=()):
    """A program of its own, built in a cargo project under target/ with this project's
    release profile (copied from the root Cargo.toml) and, for its dependencies, the
    versions in this project's Cargo.lock (copied beside it; cargo drops what it does not
    use)."""
    import tomllib
    with open(os.path.join(ROOT, "Cargo.toml"), "rb") as f:
        profile = tomllib.load(f)["profile"]["release"]
    project = os.path.join(ROOT, "target", f"bench-{name}")
    os.makedirs(os.path.join(project, "src"), exist_ok=True)
    lines = ["[package]", f'name = "{name}"', 'version = "0.1.0"', 'edition = "2021"', "",
             "[workspace]", "", "[dependencies]", *dependencies, "", "[profile.release]"]
    lines += [f"{key} = {json.dumps(value)}" for key, value in profile.items()]
    with open(os.path.join(project, "Cargo.toml"), "w") as f:
        f.write("\n".join(lines) + "\n")
    with open(os.path.join(project, "src", "main.rs"), "w") as f:
        f.write(main_rs)
    if dependencies:
        shutil.copyfile(os.path.join(ROOT, "Cargo.lock"), os.path.join(project, "Cargo.lock"))
    sh("cargo", "build", "--release", "--quiet", cwd=project)
    return os.path.join(project, "target", "release", name)


def hello_world():
    """A Rust "hello world" built here with this project's own release profile: the floor
    of starting any Rust binary on this machine, that `--version` is measured against."""
    return throwaway_binary("hello", 'fn main() {\n    println!("Hello, world!");\n}\n')


def locked_version(package):
    """The version of `package` in this project's Cargo.lock."""
    import tomllib
    with open(os.path.join(ROOT, "Cargo.lock"), "rb") as f:
        return next(p["version"] for p in tomllib.load(f)["package"] if p["name"] == package)


# The least program that does `check`'s read: it opens the ledger as the store opens it
# for reading (read-write, no mutex, no symbolic link; no checkpoint when it closes, so
# that it leaves the file as a read does) and counts the stage's pending required
# questions with the same condition on the stage as the store's query. No schema check,
# no expiries, no JSON.
FLOOR_MAIN = r"""use rusqlite::config::DbConfig;
use rusqlite::{Connection, OpenFlags};

fn main() {
    let mut args = std::env::args().skip(1);
    let (path, stage) = (args.next().expect("a ledger"), args.next().expect("a stage"));
    let flags = OpenFlags::SQLITE_OPEN_READ_WRITE
        | OpenFlags::SQLITE_OPEN_NO_MUTEX
        | OpenFlags::SQLITE_OPEN_NOFOLLOW;
    let conn = Connection::open_with_flags(path, flags).expect("open");
    conn.set_db_config(DbConfig::SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, true)
        .expect("no checkpoint on close");
    let pending: i64 = conn
        .query_row(
            "SELECT count(*) FROM questions WHERE trim(stage) = ?1 \
             AND status = 'pending' AND required = 1",
            [stage],
            |r| r.get(0),
        )
        .expect("count");
    println!("{pending}");
}
"""


def floor_program():
    """The floor of `check`: FLOOR_MAIN, with this project's release profile and its
    rusqlite (the version in Cargo.lock, bundled SQLite, as crates/core has it)."""
    version = locked_version("rusqlite")
    return throwaway_binary("floor", FLOOR_MAIN, [f'rusqlite = {{ version = "={version}", features = ["bundled"] }}'])


def cli_only_binary():
    """The CLI-only build (`--no-default-features`), in a target folder of its own so that
    the default build stays as it is."""
    target = os.path.join(ROOT, "target", "cli-only")
    sh("cargo", "build", "--release", "--quiet", "--no-default-features", "--target-dir", target, cwd=ROOT)
    return os.path.join(target, "release", "questions")


def minor_faults(args):
    """Minor page faults of one run of `args`, as GNU time counts them."""
    out = subprocess.run(["/usr/bin/time", "-f", "%R", *args], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    return int(out.stderr.strip().splitlines()[-1])


def startup(work):
    """Start-up, each call beside what it is held to: `--version` beside a hello-world
    binary of the same release profile, `check` of a 10-question stage (a ledger that 10
    `log` calls left) beside the floor program doing the same read, `log` (a write, on a
    ledger of its own) beside that `check`; and `check` where no ledger exists yet. With
    the minor page faults of each and the sizes of the default and CLI-only binaries."""
    hello = hello_world()
    floor = floor_program()
    cli_only = cli_only_binary()
    db, written = os.path.join(work, "startup.db"), os.path.join(work, "startup-log.db")
    for ledger in (db, written):
        for i in range(10):
            sh(BIN, "--db", ledger, "log", "--stage", "small", "--question", f"Small question {i}?", stdout=subprocess.DEVNULL)
    if subprocess.run([floor, db, "small"], check=True, capture_output=True, text=True).stdout.strip() != "10":
        sys.exit("the floor program did not count the stage's 10 pending questions")
    # (name, arguments, the call it is held to: its ratio is to that one's time)
    calls = [
        ("hello world (same profile)", [hello], None),
        ("floor: rusqlite counts the stage's pending questions", [floor, db, "small"], 0),
        ("questions --version", [BIN, "--version"], 0),
        ("questions check --stage (10 questions)", [BIN, "--db", db, "check", "--stage", "small"], 1),
        # A fresh clone's first gate: the read sees an empty stand-in and creates nothing.
        ("questions check --stage (no ledger yet)", [BIN, "--db", os.path.join(work, "none.db"), "check", "--stage", "small"], 1),
        ("questions log", [BIN, "--db", written, "log", "--stage", "other", "--question", "Startup?", "--allow-duplicate"], 3),
    ]
    # Hyperfine runs one command after the other: on a shared machine the load moves
    # between them. So many short rounds of all of them, a ratio worked out within each
    # round, and of each ratio the median over the rounds.
    global RUNS
    saved, RUNS = RUNS, STARTUP_RUNS
    try:
        measured = [hyperfine([" ".join(shell_quote(a) for a in args) for _, args, _ in calls]) for _ in range(STARTUP_ROUNDS)]
    finally:
        RUNS = saved
    median = lambda values: sorted(values)[len(values) // 2]
    rows = []
    for i, (name, args, base) in enumerate(calls):
        ratio = None if base is None else median([r[i] / r[base] for r in measured])
        against = None if base is None else calls[base][0]
        rows.append((name, median([r[i] for r in measured]), ratio, against, minor_faults(args)))
    sizes = {"default": os.path.getsize(BIN), "CLI-only (--no-default-features)": os.path.getsize(cli_only)}
    return rows, sizes


# The start-up targets: (call, the call it is held to, the most its ratio may be).
STARTUP_TARGETS = [
    ("questions --version", "hello world (same profile)", 1.2),
    ("questions check --stage (10 questions)", "floor: rusqlite counts the stage's pending questions", 1.3),
    ("questions log", "questions check --stage (10 questions)", 1.35),
]
SHORT = {"hello world (same profile)": "hello world", "floor: rusqlite counts the stage's pending questions": "floor",
         "questions check --stage (10 questions)": "check"}


def startup_lines(rows, sizes):
    lines = [f"Start-up, each call beside what it is held to ({STARTUP_ROUNDS} hyperfine rounds of them all, {STARTUP_RUNS} calls each; "
             "a ratio is the median over the rounds of its ratio within a round):", "",
             "| call | median | ratio | minor page faults |", "|---|---:|---:|---:|"]
    for name, median, ratio, against, faults in rows:
        cell = "" if ratio is None else f"{ratio:.2f} × {SHORT.get(against, against)}"
        lines.append(f"| {name} | {median * 1000:.2f} ms | {cell} | {faults} |")
    lines += ["", "| build | binary size |", "|---|---:|"]
    lines += [f"| {name} | {size / 1_000_000:.1f} MB |" for name, size in sizes.items()]
    by_name = {row[0]: row for row in rows}
    verdicts = [
        (f"{SHORT.get(name, name.removeprefix('questions '))} within {most}× {SHORT[against]}: {by_name[name][2]:.2f}",
         by_name[name][2] <= most)
        for name, against, most in STARTUP_TARGETS
    ]
    return lines, verdicts


def make_ledger(path, size, scattered=False):
    """A ledger with `size` questions over STAGES stages, a third answered. As orchestrators
    log them, a stage's questions arrive together (an envelope at a time); `scattered`
    deals them round-robin instead, the worst case for reading one stage."""
    sh(BIN, "--db", path, "log", "--stage", "warmup", "--question", "schema?", stdout=subprocess.DEVNULL)
    conn = sqlite3.connect(path)
    now = "2026-11-22T00:00:00.000Z"
    rows = (
        (
            f"stage-{i % STAGES if scattered else i * STAGES // size}",
            f"Group {i % 7}",
            f"Question number {i}: what should we do about item {i}?",
            "a proposed value",
            1 if i % 4 else 0,
            "answered" if i % 3 == 0 else "pending",
            "an answer" if i % 3 == 0 else None,
            now,
            now if i % 3 == 0 else None,
            now,
        )
        for i in range(size)
    )
    insert = (
        "INSERT INTO questions (stage, group_name, question, proposed, required, status, answer, "
        "created_at, answered_at, updated_at) VALUES (?,?,?,?,?,?,?,?,?,?)"
    )
    conn.executemany(insert, rows)
    # A stage of ten questions logged last, at the end of the biggest ledger too.
    conn.executemany(insert, [("small", None, f"Small question {i}?", None, 1, "pending", None, now, None, now) for i in range(10)])
    conn.commit()
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()


def hyperfine(commands, prepare=None):
    """Median seconds of each command, measured in one hyperfine run."""
    with tempfile.NamedTemporaryFile(suffix=".json") as out:
        args = ["hyperfine", "-N", "-i", "--warmup", "3", "--runs", str(RUNS), "--export-json", out.name]
        if prepare:
            args += ["--prepare", prepare]
        sh(*args, *commands, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        return [r["median"] for r in json.load(open(out.name))["results"]]


def peak_kib(args):
    """Peak resident memory of one run of `args`, in KiB, as GNU time reports it (a child
    forked from this Python process would report Python's own size)."""
    out = subprocess.run(["/usr/bin/time", "-f", "%M", *args], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    return int(out.stderr.strip().splitlines()[-1])


def fsyncs(args, runs=1):
    """fsync and fdatasync calls of `runs` runs of `args`, as strace counts them: the
    mean and the most in one run."""
    counts = []
    for _ in range(runs):
        out = subprocess.run(["strace", "-f", "-c", "-e", "trace=fsync,fdatasync", *args],
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        total = [l.split() for l in out.stderr.splitlines() if l.strip().endswith("total")]
        counts.append(int(total[0][3]) if total else 0)
    return sum(counts) / len(counts), max(counts)


def sync_counts(work):
    """fsyncs per call over a run of calls long enough to include the checkpoints that
    copy the write-ahead log into the ledger (one every few dozen writes)."""
    db = os.path.join(work, "fsync.db")
    sh(BIN, "--db", db, "log", "--stage", "s", "--question", "first", stdout=subprocess.DEVNULL)
    q = lambda *a: [BIN, "--db", db, *a]
    counter = iter(range(1_000_000))
    runs = 200
    rows = []
    rows.append(("log", *fsyncs_each(lambda: q("log", "--stage", "s", "--question", f"q{next(counter)}"), runs)))
    rows.append(("answer", *fsyncs_each(lambda: q("answer", "--id", "1", "--answer", f"a{next(counter)}", "--force"), runs)))
    rows.append(("check", *fsyncs(q("check", "--stage", "s"), 20)))
    rows.append(("list", *fsyncs(q("list", "--stage", "s"), 20)))
    return rows


def fsyncs_each(make_args, runs):
    counts = [fsyncs(make_args())[1] for _ in range(runs)]
    return sum(counts) / len(counts), max(counts)


def bytes_per_question(work, total=1_000_000, per_envelope=1000):
    """A ledger of `total` questions, each logged once through `ingest`, on disk: bytes per
    question once the log is copied into the file; and the same questions in the table
    questions.mjs creates (no history, no index), for comparison."""
    db = os.path.join(work, "bytes.db")
    envelope = os.path.join(work, "bytes-envelope.txt")
    for batch in range(total // per_envelope):
        with open(envelope, "w") as f:
            f.write("QUESTIONS_NEEDED\n")
            for i in range(per_envelope):
                n = batch * per_envelope + i
                f.write(f"[Group {n % 7}]\nQ: Question number {n}: what should we do about item {n}?\nProposed: a proposed value\nRequired: true\n")
        sh(BIN, "--db", db, "ingest", "--stage", f"stage-{batch}", "--file", envelope, stdout=subprocess.DEVNULL)
    conn = sqlite3.connect(db)
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    ours = os.path.getsize(db) / total
    plain = os.path.join(work, "plain.db")
    conn = sqlite3.connect(plain)
    conn.execute(f"ATTACH '{db}' AS ours")
    conn.executescript(open(os.path.join(ROOT, "crates", "core", "migrations", "sqlite", "V1__questions_table.sql")).read())
    conn.execute("INSERT INTO questions (id, stage, group_name, question, proposed, required, status, answer, created_at, answered_at) "
                 "SELECT id, stage, group_name, question, proposed, required, status, answer, created_at, answered_at FROM ours.questions")
    conn.commit()
    conn.close()
    mjs = os.path.getsize(plain) / total
    os.unlink(db)
    os.unlink(plain)
    return ours, mjs


def per_call(work, size):
    db = os.path.join(work, f"ledger-{size}.db")
    make_ledger(db, size)
    q = lambda *a: [BIN, "--db", db, *a]
    # A question id in stage-7, for answer --force.
    some_id = 8
    calls = {
        "--version (floor)": [BIN, "--version"],
        "log": q("log", "--stage", "stage-7", "--question", "bench?", "--allow-duplicate"),
        "answer": q("answer", "--id", str(some_id), "--answer", "bench", "--force"),
        "check --stage (10 questions)": q("check", "--stage", "small"),
        "list --stage (10 questions)": q("list", "--stage", "small"),
        "check --stage (1/1000 of the ledger)": q("check", "--stage", "stage-7"),
        "list --stage (1/1000 of the ledger)": q("list", "--stage", "stage-7"),
    }
    medians = hyperfine([" ".join(shell_quote(a) for a in args) for args in calls.values()])
    peaks = [peak_kib(args) for args in calls.values()]
    return list(zip(calls.keys(), medians, peaks))


def shell_quote(arg):
    return arg if all(c.isalnum() or c in "-_./=:" for c in arg) else "'" + arg.replace("'", "'\\''") + "'"


def scattered_check(work, size):
    """check on a stage whose questions are spread over the whole ledger."""
    db = os.path.join(work, "scattered.db")
    make_ledger(db, size, scattered=True)
    floor, check = hyperfine([f"{BIN} --version", f"{BIN} --db {db} check --stage stage-7"])
    return floor, check


def ingest_and_render(work):
    envelope = os.path.join(work, "envelope.txt")
    with open(envelope, "w") as f:
        f.write("Before I go on, I need these answered.\n\nQUESTIONS_NEEDED\n")
        for i in range(1000):
            f.write(f"[Group {i}]\nQ: Question {i}: which option fits item {i}?\nProposed: option {i}\nRequired: {str(i % 2 == 0).lower()}\n")
    db = os.path.join(work, "ingest.db")
    ingest = f"{BIN} --db {db} ingest --stage big --file {envelope}"
    reset = f"{BIN} --db {db} reset --yes"
    (ingest_median,) = hyperfine([ingest], prepare=reset)
    sh(BIN, "--db", db, "ingest", "--stage", "big", "--file", envelope, stdout=subprocess.DEVNULL)
    (render_median,) = hyperfine([f"{BIN} --db {db} render --stage big"])
    return ingest_median, render_median


def hook_call(work, size=10_000):
    """`questions hook claude-code` on the path every AskUserQuestion call of a session takes
    when nobody has answered yet: Claude Code's captured PreToolUse event (two questions) on
    stdin, the questions logged (once) and no reply, on a ledger of `size` questions. Timed
    here, each call started the same way as the floor (`--version`) with the event file on
    its stdin (hyperfine cannot redirect stdin without a shell)."""
    db = os.path.join(work, "hook.db")
    make_ledger(db, size)
    event = os.path.join(ROOT, "tests", "fixtures", "hooks", "claude-code-2.1.330", "pre_tool_use.json")

    def median_of(args):
        times = []
        for i in range(RUNS + 3):
            with open(event, "rb") as stdin:
                start = time.perf_counter()
                out = subprocess.run(args, stdin=stdin, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
                elapsed = time.perf_counter() - start
            if out.returncode != 0 or (args[-1] == "claude-code" and out.stdout):
                sys.exit(f"{args}: unexpected {out}")
            if i >= 3:
                times.append(elapsed)
        times.sort()
        return times[len(times) // 2]

    floor = median_of([BIN, "--version"])
    hook = median_of([BIN, "--db", db, "hook", "claude-code"])
    os.unlink(db)
    return floor, hook


def shared_prefix_ingest(work, total=20_000):
    """One ingest of `total` questions of one template (same length, same first 12
    characters), against as many of different texts: the duplicate check must stay an index
    lookup whatever the texts share."""
    times = {}
    for kind in ("template", "varied"):
        envelope = os.path.join(work, f"prefix-{kind}.txt")
        with open(envelope, "w") as f:
            f.write("QUESTIONS_NEEDED\n")
            for i in range(total):
                text = (f"What is the value for item {i:06d}?" if kind == "template"
                        else f"{i * 7919 % total} needs which value, and why {i}?")
                f.write(f"Q: {text}\n")
        db = os.path.join(work, f"prefix-{kind}.db")
        start = time.monotonic()
        sh(BIN, "--db", db, "ingest", "--stage", "s", "--file", envelope, stdout=subprocess.DEVNULL)
        times[kind] = time.monotonic() - start
        os.unlink(db)
    return times["template"], times["varied"]


def concurrent(work, writers=8, each=150):
    db = os.path.join(work, "concurrent.db")
    sh(BIN, "--db", db, "log", "--stage", "warmup", "--question", "schema?", stdout=subprocess.DEVNULL)
    errors = []

    def writer(w):
        for i in range(each):
            out = subprocess.run([BIN, "--db", db, "log", "--stage", f"w{w}", "--question", f"q{i}"], capture_output=True)
            if out.returncode != 0:
                errors.append(out.stdout)
                continue
            qid = json.loads(out.stdout)["question_id"]
            out = subprocess.run([BIN, "--db", db, "answer", "--id", str(qid), "--answer", f"a{i}"], capture_output=True)
            if out.returncode != 0:
                errors.append(out.stdout)

    started = time.monotonic()
    threads = [threading.Thread(target=writer, args=(w,)) for w in range(writers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    elapsed = time.monotonic() - started
    return writers * each * 2 / elapsed, len(errors)


def serve_inbox(work, runs=None):
    """The web inbox's page with 1 000 pending questions (with options, a Markdown context
    and history), as the server renders it: the median of GETs on loopback, the request
    included."""
    import urllib.request
    runs = runs or RUNS
    db = os.path.join(work, "serve.db")
    envelope = {"questions": [
        {"question": f"Question {i}: which option fits item {i}?", "header": f"Item {i}",
         "context": f"Item {i} has **{i} users**; see `docs/item-{i}.md`.\n\n- one\n- two",
         "options": [{"label": "Yes (Recommended)", "description": "the usual"}, {"label": "No"}]}
        for i in range(1000)
    ]}
    sh(BIN, "--db", db, "ingest", "--stage", "inbox", "--format", "ask-user", input=json.dumps(envelope).encode(), stdout=subprocess.DEVNULL)
    env = dict(os.environ, QUESTIONS_SERVE_TOKEN="bench-inbox-token-16")
    server = subprocess.Popen([BIN, "--db", db, "serve", "--bind", "127.0.0.1:0"], stdout=subprocess.PIPE, env=env)
    try:
        url = json.loads(server.stdout.readline())["url"].split("?")[0]
        request = urllib.request.Request(url, headers={"Authorization": "Bearer bench-inbox-token-16"})
        times = []
        for i in range(runs + 3):
            started = time.perf_counter()
            with urllib.request.urlopen(request) as response:
                page = response.read()
            if i >= 3:  # the first calls warm the pool of ledgers
                times.append(time.perf_counter() - started)
        assert page.count(b'<details id="q-') == 1000, "the page shows the 1 000 questions"
    finally:
        server.terminate()
        server.wait()
    times.sort()
    return times[len(times) // 2], len(page)


def postgres_calls(work):
    """The same calls against a PostgreSQL ledger of 10 000 questions over loopback, when
    QUESTIONS_TEST_PG names a server (scripts/with-postgres starts one)."""
    url = os.environ.get("QUESTIONS_TEST_PG")
    if not url:
        return None
    db = url.rsplit("/", 1)[0] + "/questions_bench"
    subprocess.run(["psql", url, "-qc", "DROP DATABASE IF EXISTS questions_bench WITH (FORCE)"], check=True, capture_output=True)
    subprocess.run(["psql", url, "-qc", "CREATE DATABASE questions_bench"], check=True, capture_output=True)
    envelope = os.path.join(work, "pg-envelope.txt")
    for stage in range(10):
        with open(envelope, "w") as f:
            f.write("QUESTIONS_NEEDED\n")
            for i in range(1000):
                f.write(f"[G{i % 7}]\nQ: Question {stage}-{i}?\nProposed: p\nRequired: {str(i % 4 > 0).lower()}\n")
        sh(BIN, "--db", db, "ingest", "--stage", f"stage-{stage}", "--file", envelope, stdout=subprocess.DEVNULL)
    for i in range(10):
        sh(BIN, "--db", db, "log", "--stage", "small", "--question", f"Small {i}?", stdout=subprocess.DEVNULL)
    global PG_WAKE
    PG_WAKE = wake_latency(f"{db}?sslmode=require")
    rows = []
    for mode in ("disable", "require"):
        url = f"{db}?sslmode={mode}"
        q = lambda *a: [BIN, "--db", url, *a]
        calls = {
            "--version (floor)": [BIN, "--version"],
            "log": q("log", "--stage", "small", "--question", "bench?", "--allow-duplicate"),
            "answer": q("answer", "--id", "7", "--answer", "bench", "--force"),
            "check --stage (10 questions)": q("check", "--stage", "small"),
            "list --stage (10 questions)": q("list", "--stage", "small"),
        }
        medians = hyperfine([" ".join(shell_quote(a) for a in args) for args in calls.values()])
        rows.append(dict(zip(calls.keys(), medians)))
    plain, tls = rows
    return [(name, plain[name], tls[name]) for name in plain]


def wake_latency(db, runs=10):
    """How long after another process's answer commits a waiting `check --wait` sees it:
    PostgreSQL wakes it through NOTIFY. The median of `runs`, in seconds."""
    delays = []
    for i in range(runs):
        stage = f"wake-{i}"
        out = subprocess.run([BIN, "--db", db, "log", "--stage", stage, "--question", "wake?"], capture_output=True, check=True)
        qid = json.loads(out.stdout)["question_id"]
        waiter = subprocess.Popen([BIN, "--db", db, "check", "--stage", stage, "--wait", "--timeout", "30"],
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(0.5)
        subprocess.run([BIN, "--db", db, "answer", "--id", str(qid), "--answer", "yes"], capture_output=True, check=True)
        answered = time.monotonic()
        waiter.wait()
        delays.append(time.monotonic() - answered)
    delays.sort()
    return delays[len(delays) // 2]


def own_postgres(work, max_connections=100):
    """A PostgreSQL server of the benchmark's own on loopback with `max_connections` (100
    by default, as small managed plans give), TLS on, password over TCP; returns its admin
    URL and a function that stops it."""
    bindir = sorted(d for d in (os.path.join("/usr/lib/postgresql", v, "bin") for v in os.listdir("/usr/lib/postgresql"))
                    if os.path.exists(os.path.join(d, "initdb")))[-1]
    data = os.path.join(work, "pg")
    os.makedirs(data)
    as_user = []
    pw = os.path.join(work, "pw")
    with open(pw, "w") as f:
        f.write("bench\n")
    if os.geteuid() == 0:
        as_user = ["runuser", "-u", "postgres", "--"]
        sh("chown", "-R", "postgres", work)
    sh(*as_user, os.path.join(bindir, "initdb"), "-D", data, "-U", "postgres", "--auth-local=trust",
       "--auth-host=scram-sha-256", f"--pwfile={pw}", "-E", "UTF8", "--no-sync", stdout=subprocess.DEVNULL)
    sh(*as_user, "openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj", "/CN=localhost",
       "-keyout", os.path.join(data, "server.key"), "-out", os.path.join(data, "server.crt"),
       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    sh(*as_user, os.path.join(bindir, "pg_ctl"), "-D", data, "-l", os.path.join(work, "pg.log"), "-w", "-o",
       f"-p {port} -k {work} -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections={max_connections} -c ssl=on",
       "start", stdout=subprocess.DEVNULL)

    def stop():
        subprocess.run([*as_user, os.path.join(bindir, "pg_ctl"), "-D", data, "-m", "immediate", "stop"],
                       capture_output=True)
    return f"postgres://postgres:bench@127.0.0.1:{port}/postgres", stop


def cpu_ticks(pids):
    """User and system time of these processes (all their threads), in clock ticks."""
    total = 0
    for pid in pids:
        try:
            with open(f"/proc/{pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            total += int(fields[11]) + int(fields[12])
        except OSError:
            pass
    return total


def memory_kib(pid):
    """Resident and proportional (shared pages split among their users) memory, KiB."""
    rss = pss = 0
    try:
        with open(f"/proc/{pid}/smaps_rollup") as f:
            for line in f:
                if line.startswith("Rss:"):
                    rss = int(line.split()[1])
                elif line.startswith("Pss:"):
                    pss = int(line.split()[1])
    except OSError:
        pass
    return rss, pss


def server_connections(admin, db):
    out = subprocess.run(["psql", admin, "-Atc",
                          f"SELECT count(*) FROM pg_stat_activity WHERE datname = '{db}' AND application_name = 'questions'"],
                         capture_output=True, text=True, check=True)
    return int(out.stdout.strip())


def waiters_round(db, n, followers=0, admin=None, dbname=None, idle_s=10):
    """`n` waiting `check --wait` (and `followers` `events --follow`) processes on one
    stage; their idle CPU, their memory, the server's connections while they wait, then
    the time each takes to pass after one answer."""
    out = subprocess.run([BIN, "--db", db, "log", "--stage", "g", "--question", "Ship it?"],
                         capture_output=True, check=True)
    qid = json.loads(out.stdout)["question_id"]
    procs = [subprocess.Popen([BIN, "--db", db, "check", "--stage", "g", "--wait", "--timeout", "600"],
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE) for _ in range(n)]
    follows = [subprocess.Popen([BIN, "--db", db, "events", "--follow", "--since", "1", "--timeout", "600"],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL) for _ in range(followers)]
    pids = [p.pid for p in procs + follows]
    # Settled: every process has started and read (what they use every 2 s stops falling),
    # 30 s at most.
    last, before, end = cpu_ticks(pids), None, time.monotonic() + 30
    while time.monotonic() < end:
        time.sleep(2)
        now = cpu_ticks(pids)
        growth, last = now - last, now
        if before is not None and growth <= before * 1.2 + 4:
            break
        before = growth
    held = server_connections(admin, dbname) if admin else None
    start = cpu_ticks(pids)
    t0 = time.monotonic()
    time.sleep(idle_s)
    idle = (cpu_ticks(pids) - start) / os.sysconf("SC_CLK_TCK") / (time.monotonic() - t0)
    mem = [memory_kib(p.pid) for p in procs[:50]]
    rss = sum(m[0] for m in mem) / len(mem)
    pss = sum(m[1] for m in mem) / len(mem)
    t_answer = time.monotonic()
    a = subprocess.run([BIN, "--db", db, "answer", "--id", str(qid), "--answer", "yes"], capture_output=True)
    answered = time.monotonic()
    by_pid = {p.pid: p for p in procs}
    wakes, failed = [], 0
    while by_pid:
        pid, status = os.waitpid(-1, 0)
        if pid in by_pid:
            # From the moment the person's answer was given (the call started).
            wakes.append(time.monotonic() - t_answer)
            failed += os.waitstatus_to_exitcode(status) != 0
            by_pid.pop(pid).returncode = os.waitstatus_to_exitcode(status)
    for p in follows:
        p.kill()
        p.wait()
    wakes.sort()
    return dict(n=n, followers=followers, idle_core=idle, rss_kib=rss, pss_kib=pss, held=held,
                answer_ok=a.returncode == 0, answer_s=answered - t_answer, failed=failed,
                median=wakes[len(wakes) // 2], p99=wakes[min(len(wakes) - 1, int(len(wakes) * 0.99))], last=wakes[-1])


def waiters(counts=(100, 300, 1000)):
    """`python3 bench/bench.py waiters`: many waiters, one person. N = 100, 300 and 1 000
    waiting processes on SQLite (and 300 with 100 `events --follow` beside them), then on
    a PostgreSQL server of the benchmark's own with max_connections = 100 (N = 100, 160,
    300, 1 000): their idle CPU together (share of one core), the time each takes to pass
    after one answer (median, p99, last), the server's connections held while they wait,
    and memory per waiter (resident; proportional, shared pages split)."""
    sh("cargo", "build", "--release", "--quiet", cwd=ROOT)
    work = tempfile.mkdtemp(prefix="questions-bench-")
    os.chmod(work, 0o755)
    rows = []
    try:
        for n, followers in ([] if os.environ.get("BENCH_WAITERS_PG_ONLY") else
                             [(counts[0], 0), (counts[1], 0), (counts[1], 100), (counts[2], 0)]):
            db = os.path.join(work, f"waiters-{n}-{followers}.db")
            rows.append(("SQLite", waiters_round(db, n, followers)))
            print(rows[-1], flush=True)
        admin, stop = own_postgres(os.path.join(work, "server"))
        try:
            for n in (counts[0], 160, counts[1], counts[2]):
                name = f"waiters_{n}"
                subprocess.run(["psql", admin, "-qc", f"CREATE DATABASE {name}"], check=True, capture_output=True)
                db = admin.rsplit("/", 1)[0] + f"/{name}?sslmode=require"
                rows.append(("PostgreSQL", waiters_round(db, n, admin=admin, dbname=name)))
                print(rows[-1], flush=True)
        finally:
            stop()
    finally:
        shutil.rmtree(work, ignore_errors=True)
    lines = ["| engine | waiters | idle CPU, all together | passed after the answer: median | p99 | last | failed | server connections held | memory per waiter (RSS / PSS) |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for engine, r in rows:
        who = f"{r['n']}" + (f" + {r['followers']} followers" if r["followers"] else "")
        lines.append(f"| {engine} | {who} | {r['idle_core'] * 100:.1f} % of a core | {r['median'] * 1000:.0f} ms | "
                     f"{r['p99'] * 1000:.0f} ms | {r['last'] * 1000:.0f} ms | {r['failed']} | "
                     f"{'' if r['held'] is None else r['held']} | {r['rss_kib'] / 1024:.1f} / {r['pss_kib'] / 1024:.1f} MiB |")
    print("\n".join(lines))
    return lines


def throwaway_tls(work):
    """A CA of the benchmark's own and a certificate it signs for 127.0.0.1; the paths of
    the CA, the certificate and its key."""
    ca_key, ca, key, csr, cert = (os.path.join(work, n) for n in ("ca.key", "ca.pem", "server.key", "server.csr", "server.pem"))
    ext = os.path.join(work, "san.ext")
    with open(ext, "w") as f:
        f.write("subjectAltName=IP:127.0.0.1,DNS:localhost\n")
    quiet = dict(stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    sh("openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj", "/CN=bench CA",
       "-keyout", ca_key, "-out", ca, **quiet)
    sh("openssl", "req", "-newkey", "rsa:2048", "-nodes", "-subj", "/CN=127.0.0.1", "-keyout", key, "-out", csr, **quiet)
    sh("openssl", "x509", "-req", "-in", csr, "-CA", ca, "-CAkey", ca_key, "-CAcreateserial", "-days", "2",
       "-extfile", ext, "-out", cert, **quiet)
    return ca, cert, key


def start_server(db, cert, key):
    """`questions serve` over `db` with TLS on a loopback port; its process and URL."""
    proc = subprocess.Popen([BIN, "--db", db, "serve", "--bind", "127.0.0.1:0", "--tls-cert", cert, "--tls-key", key],
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    first = json.loads(proc.stdout.readline())
    url = first["url"]
    base = url.split("://", 1)[0] + "://" + url.split("://", 1)[1].split("/", 1)[0]
    return proc, base


def remote_waiters(servers, env_agent, env_person, db_for_answer, n):
    """`n` `check --wait` processes over https (spread over `servers`), one answer by a
    person token; the servers' idle CPU and memory while they wait, the waiters' own idle
    CPU, and the time from the answer to the last waiter passing."""
    stage = f"w{n}-{len(servers)}"
    base0 = servers[0][1]
    out = subprocess.run([BIN, "log", "--stage", stage, "--question", "Ship it?"], capture_output=True, check=True,
                         env={**env_agent, "QUESTIONS_DB": base0})
    qid = json.loads(out.stdout)["question_id"]
    procs = [subprocess.Popen([BIN, "check", "--stage", stage, "--wait", "--timeout", "600"],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                              env={**env_agent, "QUESTIONS_DB": servers[i % len(servers)][1]}) for i in range(n)]
    spids = [p.pid for p, _ in servers]
    cpids = [p.pid for p in procs]
    # Settled: what the servers use every 2 s stops falling (every waiter has sent its
    # poll), 60 s at most.
    last, before, end = cpu_ticks(spids + cpids), None, time.monotonic() + 60
    while time.monotonic() < end:
        time.sleep(2)
        now = cpu_ticks(spids + cpids)
        growth, last = now - last, now
        if before is not None and growth <= before * 1.2 + 4:
            break
        before = growth
    s0, c0, t0 = cpu_ticks(spids), cpu_ticks(cpids), time.monotonic()
    time.sleep(10)
    elapsed = time.monotonic() - t0
    tck = os.sysconf("SC_CLK_TCK")
    server_idle = (cpu_ticks(spids) - s0) / tck / elapsed
    client_idle = (cpu_ticks(cpids) - c0) / tck / elapsed
    server_mem = [memory_kib(p) for p in spids]
    t_answer = time.monotonic()
    a = subprocess.run([BIN, "answer", "--id", str(qid), "--answer", "yes"], capture_output=True,
                       env={**env_person, "QUESTIONS_DB": db_for_answer})
    by_pid = {p.pid: p for p in procs}
    wakes, failed = [], 0
    while by_pid:
        pid, status = os.waitpid(-1, 0)
        if pid in by_pid:
            wakes.append(time.monotonic() - t_answer)
            failed += os.waitstatus_to_exitcode(status) != 0
            by_pid.pop(pid).returncode = os.waitstatus_to_exitcode(status)
    wakes.sort()
    return dict(n=n, servers=len(servers), server_idle=server_idle, client_idle=client_idle,
                server_rss_kib=max(m[0] for m in server_mem), answer_ok=a.returncode == 0, failed=failed,
                median=wakes[len(wakes) // 2], last=wakes[-1])


def remote(n=1000):
    """`python3 bench/bench.py remote` (under scripts/with-postgres for the PostgreSQL
    rows): the ledger over HTTPS (§15) on loopback, with a CA of the benchmark's own.
    `check` and `log` with an agent token against the same calls on the file, as ratios
    within one hyperfine run; then `n` waiters over HTTPS: the server's idle CPU and
    memory, and the time from a person's answer to the last waiter passing, on SQLite
    and (with a server) with two `serve` over one PostgreSQL database."""
    global RUNS
    sh("cargo", "build", "--release", "--quiet", cwd=ROOT)
    work = tempfile.mkdtemp(prefix="questions-bench-")
    servers = []
    rows, lines = [], []
    try:
        ca, cert, key = throwaway_tls(work)
        db = os.path.join(work, "ledger.db")
        for i in range(10):
            sh(BIN, "--db", db, "log", "--stage", "small", "--question", f"Small {i}?", stdout=subprocess.DEVNULL)

        def tokens(db):
            make = lambda *a: json.loads(subprocess.run([BIN, "--db", db, "token", "create", *a], capture_output=True,
                                                        check=True).stdout)["token"]
            agent = make("bench-agent", "--agent")
            person = make("bench-phone", "--person", "dana")
            base = {k: v for k, v in os.environ.items() if not k.startswith("QUESTIONS_") and "proxy" not in k.lower()}
            return ({**base, "QUESTIONS_TOKEN": agent, "QUESTIONS_CA": ca},
                    {**base, "QUESTIONS_TOKEN": person, "QUESTIONS_CA": ca})
        env_agent, env_person = tokens(db)
        proc, base = start_server(db, cert, key)
        servers.append(proc)
        # hyperfine passes its own environment: the token and the CA go through `env`.
        over = lambda *a: ["env", f"QUESTIONS_TOKEN={env_agent['QUESTIONS_TOKEN']}", f"QUESTIONS_CA={ca}",
                           f"QUESTIONS_DB={base}", BIN, *a]
        calls = {
            "--version (floor)": [BIN, "--version"],
            "env --version (floor through env)": ["env", BIN, "--version"],
            # Through `env` too, as the https calls are (it costs about 1 ms).
            "check, file": ["env", BIN, "--db", db, "check", "--stage", "small"],
            "check, https": over("check", "--stage", "small"),
            "log, file": ["env", BIN, "--db", db, "log", "--stage", "small", "--question", "bench?"],
            "log, https": over("log", "--stage", "small", "--question", "bench?"),
        }
        medians = dict(zip(calls, hyperfine([" ".join(shell_quote(a) for a in args) for args in calls.values()])))
        lines += ["| call | file | https | × file |", "|---|---:|---:|---:|"]
        for name in ("check", "log"):
            f, h = medians[f"{name}, file"], medians[f"{name}, https"]
            lines.append(f"| {name} | {f * 1000:.2f} ms | {h * 1000:.2f} ms | {h / f:.2f} |")
        lines.append(f"\n(`--version`: {medians['--version (floor)'] * 1000:.2f} ms; through `env`: "
                     f"{medians['env --version (floor through env)'] * 1000:.2f} ms)")
        rows.append(("SQLite", remote_waiters([(proc, base)], env_agent, env_person, base, n)))
        print(rows[-1], flush=True)
        proc.terminate()
        proc.wait()
        servers.clear()
        pg = os.environ.get("QUESTIONS_TEST_PG")
        if pg:
            pgdb = pg.rsplit("/", 1)[0] + "/questions_bench_remote"
            subprocess.run(["psql", pg, "-qc", "DROP DATABASE IF EXISTS questions_bench_remote WITH (FORCE)"],
                           check=True, capture_output=True)
            subprocess.run(["psql", pg, "-qc", "CREATE DATABASE questions_bench_remote"], check=True, capture_output=True)
            env_agent, env_person = tokens(pgdb)
            two = [start_server(pgdb, cert, key) for _ in range(2)]
            servers += [p for p, _ in two]
            rows.append(("PostgreSQL, two servers", remote_waiters(two, env_agent, env_person, two[1][1], n)))
            print(rows[-1], flush=True)
    finally:
        for p in servers:
            p.terminate()
            p.wait()
        shutil.rmtree(work, ignore_errors=True)
    lines += ["", "| ledger | waiters over https | servers' idle CPU | waiters' idle CPU, all together | server memory (RSS, largest) | passed after the answer: median | last | failed |",
              "|---|---:|---:|---:|---:|---:|---:|---:|"]
    for engine, r in rows:
        lines.append(f"| {engine} | {r['n']} | {r['server_idle'] * 100:.1f} % of a core | {r['client_idle'] * 100:.1f} % of a core | "
                     f"{r['server_rss_kib'] / 1024:.1f} MiB | {r['median'] * 1000:.0f} ms | {r['last'] * 1000:.0f} ms | {r['failed']} |")
    verdicts = [(f"{name} over https within 2.5× the file", medians[f"{name}, https"] / medians[f"{name}, file"] <= 2.5)
                for name in ("check", "log")]
    for engine, r in rows:
        verdicts += [(f"{engine}: servers idle under 5 % of a core with {r['n']} waiters", r["server_idle"] <= 0.05),
                     (f"{engine}: the last waiter passes within 2 s of the answer", r["last"] <= 2.0),
                     (f"{engine}: no waiter failed", r["failed"] == 0 and r["answer_ok"])]
    lines += ["", "Targets:", ""] + [f"- {'met' if ok else 'MISSED'}: {what}" for what, ok in verdicts]
    print("\n".join(lines))
    return lines


def main():
    ensure_tools()
    work = tempfile.mkdtemp(prefix="questions-bench-")
    try:
        sizes = [10_000, 1_000_000]
        results = {}
        for size in sizes:
            results[size] = per_call(work, size)
            os.unlink(os.path.join(work, f"ledger-{size}.db"))
        worst_floor, worst_check = scattered_check(work, sizes[-1])
        ingest_s, render_s = ingest_and_render(work)
        template_s, varied_s = shared_prefix_ingest(work)
        inbox_s, inbox_bytes = serve_inbox(work)
        pg = postgres_calls(work)
        ops, errors = concurrent(work)
        hook_floor, hook_s = hook_call(work)
        syncs = sync_counts(work)
        per_q, mjs_per_q = bytes_per_question(work, int(os.environ.get("BENCH_BYTES_QUESTIONS", "1000000")))
        start_rows, start_sizes = startup(work)
    finally:
        shutil.rmtree(work, ignore_errors=True)

    lines = [
        "| call | median, 10k | × floor | median, 1M | × floor | peak RSS |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    verdicts = []
    for i, (name, _, _) in enumerate(results[sizes[-1]]):
        cells = [name]
        peak = 0
        for size in sizes:
            floor = results[size][0][1]
            median = results[size][i][1]
            peak = max(peak, results[size][i][2])
            cells += [f"{median * 1000:.2f} ms", f"{median / floor:.2f}"]
            if i > 0:
                verdicts.append((f"{name} at {size}: within 3× the floor and under 5 ms", median / floor <= 3 and median < 0.005))
        cells.append(f"{peak / 1024:.1f} MiB")
        verdicts.append((f"{name}: peak memory under 16 MiB", peak < 16 * 1024))
        lines.append("| " + " | ".join(cells) + " |")
    lines += [
        "",
        f"A stage of 1/1000 of the ledger holds {sizes[0] // STAGES} questions in the 10k ledger and "
        f"{sizes[-1] // STAGES} in the 1M one; `check` and `list` print every question they report "
        "(about 600 KB of JSON for 1 000), so that row grows with its output, not with the ledger. "
        "The 10-question stage shows the cost of the same output at both sizes.",
        "",
        f"- check on a stage of {sizes[-1] // STAGES} questions dealt round-robin across the 1M ledger (the worst layout): "
        f"{worst_check * 1000:.2f} ms median, {worst_check / worst_floor:.2f} × floor",
        f"- ingest of one envelope of 1 000 questions (new ledger each run): {ingest_s * 1000:.1f} ms median",
        f"- render of a 1 000-question stage (ask-user): {render_s * 1000:.1f} ms median",
        f"- 8 concurrent processes logging and answering: {ops:.0f} operations/s, {errors} errors",
        f"- `hook claude-code` on an AskUserQuestion call nobody has answered yet (10k ledger): "
        f"{hook_s * 1000:.2f} ms median, {hook_s / hook_floor:.2f} × floor",
        f"- `serve`: the inbox page with 1 000 pending questions ({inbox_bytes // 1024} KiB of HTML): {inbox_s * 1000:.1f} ms median, request on loopback included",
    ]
    start_lines, start_verdicts = startup_lines(start_rows, start_sizes)
    lines += [""] + start_lines
    verdicts += start_verdicts
    lines += ["", "Durability costs, counted with `strace -f -c` (a write is durable when the call exits 0):", "",
              "| call | fsync+fdatasync per call, mean | most in one call |", "|---|---:|---:|"]
    for name, mean, most in syncs:
        lines.append(f"| {name} | {mean:.2f} | {most} |")
        limit = 2 if name in ("log", "answer") else 0
        verdicts.append((f"{name}: at most {limit} fsyncs a call", most <= limit))
    lines += ["", f"- one `ingest` of 20 000 questions of one template (same length and first 12 characters): "
              f"{template_s:.2f} s; of 20 000 different texts: {varied_s:.2f} s"]
    verdicts.append(("template questions ingest within 2x of varied ones", template_s <= 2 * varied_s))
    lines += ["", f"- a ledger of questions each logged once (through `ingest`, history included): {per_q:.0f} bytes per question on disk; "
              f"the same questions in questions.mjs's table alone: {mjs_per_q:.0f} bytes per question"]
    verdicts.append(("at most 250 bytes per question on disk", per_q <= 250))
    verdicts += [
        ("ingest of 1 000 under 100 ms", ingest_s < 0.1),
        ("the inbox of 1 000 pending questions served under 50 ms", inbox_s < 0.05),
        ("concurrent throughput above 400 operations/s", ops > 400),
        ("no errors under concurrency", errors == 0),
        ("hook claude-code, nobody answered yet: under 10 ms", hook_s < 0.010),
    ]
    if pg:
        floor = pg[0][1]
        lines += ["", "PostgreSQL over loopback (a ledger of 10 000 questions; each call connects and logs in), "
                  "without TLS and with it (`sslmode=require`):", "",
                  "| call | no TLS | × floor | TLS | × floor |", "|---|---:|---:|---:|---:|"]
        for name, plain, tls in pg:
            lines.append(f"| {name} | {plain * 1000:.2f} ms | {plain / floor:.2f} | {tls * 1000:.2f} ms | {tls / floor:.2f} |")
        check = [row for row in pg if row[0] == "check --stage (10 questions)"][0]
        verdicts.append(("PostgreSQL check with TLS under 10 ms", check[2] < 0.010))
        lines += ["", f"- a `check --wait` on PostgreSQL sees another process's answer {PG_WAKE * 1000:.0f} ms after it commits (median; woken by NOTIFY)"]
        verdicts.append(("PostgreSQL check --wait wakes within 100 ms", PG_WAKE < 0.1))
    else:
        lines += ["", "(PostgreSQL not measured: run under scripts/with-postgres for that column.)"]
    lines += ["", "Targets:", ""]
    lines += [f"- {'met' if ok else 'MISSED'}: {what}" for what, ok in verdicts]
    table = "\n".join(lines)
    print(table)
    stamp = time.strftime("%Y-%m-%d", time.gmtime())
    with open(os.path.join(ROOT, "bench", "RESULTS.md"), "w") as f:
        f.write(f"# Benchmark results\n\n`python3 bench/bench.py` on {stamp}, release build, {os.cpu_count()} cores, {RUNS} runs a call.\n\n{table}\n")


def static_beside_glibc():
    """`python3 bench/bench.py static`: the static musl binary (scripts/release) beside the
    glibc one, on the same ledger of 3 000 questions, measured in one hyperfine run; the
    static build earns a faster allocator if musl's makes `list` more than 10 % slower."""
    sh("cargo", "build", "--release", "--quiet", cwd=ROOT)
    out = subprocess.run([os.path.join(ROOT, "scripts", "release")], cwd=ROOT, check=True,
                         capture_output=True, text=True)
    static = os.path.join(ROOT, out.stdout.strip().splitlines()[-1])
    work = tempfile.mkdtemp(prefix="questions-bench-")
    try:
        db = os.path.join(work, "ledger.db")
        make_ledger(db, 3000)
        stage = "stage-0"
        rows = []
        for name, args in (
            ("--version", ["--version"]),
            ("list (3 000 questions)", ["--db", db, "list"]),
            ("list --stage (3 questions)", ["--db", db, "list", "--stage", stage]),
            ("check --stage", ["--db", db, "check", "--stage", stage]),
        ):
            glibc_s, static_s = hyperfine([" ".join([BIN, *args]), " ".join([static, *args])])
            rows.append((name, glibc_s, static_s))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print("| call | glibc | static (musl) | static / glibc |")
    print("|---|---:|---:|---:|")
    for name, glibc_s, static_s in rows:
        print(f"| {name} | {glibc_s * 1000:.2f} ms | {static_s * 1000:.2f} ms | {static_s / glibc_s:.2f} |")
    print(f"sizes: glibc {os.path.getsize(BIN)} bytes, static {os.path.getsize(static)} bytes")


def pi_answer_to_model(work, runs=20):
    """`bench.py pi`: the real pi (`pi -p`, the project as `questions init pi` leaves it)
    asks through the ledger; the time from an answer recorded in the ledger (the
    `questions answer` that records it has exited) to pi's model's next request, which
    carries the tool's result. The model is a scripted chat-completions server on
    loopback. Returns the latencies in seconds."""
    import http.server
    pi = shutil.which("pi")
    if pi is None:
        sys.exit("needed: npm install -g @mariozechner/pi-coding-agent@0.73.1")
    ask = {"questions": [{"question": "Which database should we use?", "options": [
        {"label": "PostgreSQL (Recommended)"}, {"label": "SQLite"}]}]}
    requests = []

    class Model(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *_):
            pass

        def do_POST(self):
            body = json.loads(self.rfile.read(int(self.headers["content-length"])))
            last = body["messages"][-1]
            requests.append((time.perf_counter(), last.get("role")))
            if last.get("role") == "tool":
                delta, finish = {"role": "assistant", "content": "done"}, "stop"
            else:
                call = {"index": 0, "id": f"call_{len(requests)}", "type": "function",
                        "function": {"name": "ask_user", "arguments": json.dumps(ask)}}
                delta, finish = {"role": "assistant", "tool_calls": [call]}, "tool_calls"
            chunks = [{"index": 0, "delta": delta}, {"index": 0, "delta": {}, "finish_reason": finish}]
            text = "".join("data: " + json.dumps({"id": "x", "object": "chat.completion.chunk", "created": 1,
                                                   "model": "m", "choices": [c]}) + "\n\n" for c in chunks)
            data = (text + "data: [DONE]\n\n").encode()
            self.send_response(200)
            self.send_header("content-type", "text/event-stream")
            self.send_header("content-length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Model)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    project = os.path.join(work, "pi-project")
    agent = os.path.join(work, "pi-agent")
    bindir = os.path.join(work, "pi-bin")
    for d in (project, agent, bindir, os.path.join(project, ".git"), os.path.join(project, ".questions")):
        os.makedirs(d, exist_ok=True)
    os.symlink(BIN, os.path.join(bindir, "questions"))
    with open(os.path.join(agent, "models.json"), "w") as f:
        json.dump({"providers": {"scripted": {"baseUrl": f"http://127.0.0.1:{server.server_port}/v1",
                                              "api": "openai-completions", "apiKey": "dummy",
                                              "models": [{"id": "scripted-model", "name": "Scripted"}]}}}, f)
    env = {k: v for k, v in os.environ.items() if not k.startswith("QUESTIONS_")}
    env.update(PATH=bindir + os.pathsep + env.get("PATH", ""), PI_CODING_AGENT_DIR=agent, PI_OFFLINE="1",
               HOME=work)
    sh(BIN, "init", "pi", cwd=project, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    latencies = []
    for _ in range(runs):
        child = subprocess.Popen([pi, "-p", "--provider", "scripted", "--model", "scripted-model", "go"],
                                 cwd=project, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        while True:
            listed = json.loads(subprocess.run([BIN, "list", "--status", "pending"], cwd=project, env=env,
                                               capture_output=True, check=True).stdout)
            if listed["questions"]:
                break
            time.sleep(0.02)
        time.sleep(0.3)  # pi is waiting, not starting its wait
        seen = len(requests)
        sh(BIN, "answer", "--id", str(listed["questions"][0]["id"]), "--select", "SQLite", cwd=project, env=env,
           stdout=subprocess.DEVNULL)
        answered = time.perf_counter()
        child.wait(timeout=60)
        after = [t for t, role in requests[seen:] if role == "tool"]
        latencies.append(after[0] - answered)
    server.shutdown()
    return latencies


if __name__ == "__main__":
    if sys.argv[1:] == ["waiters"]:
        waiters()
    elif sys.argv[1:] == ["remote"]:
        remote(int(os.environ.get("BENCH_WAITERS", "1000")))
    elif sys.argv[1:] == ["static"]:
        static_beside_glibc()
    elif sys.argv[1:] == ["hook"]:
        # One measure alone: python3 bench/bench.py hook
        ensure_tools()
        work = tempfile.mkdtemp(prefix="questions-bench-")
        try:
            floor, median = hook_call(work)
        finally:
            shutil.rmtree(work, ignore_errors=True)
        print(f"hook claude-code, nobody answered yet: {median * 1000:.2f} ms median ({floor * 1000:.2f} ms floor)")
    elif sys.argv[1:] == ["pi"]:
        # pi's ask_user through the ledger: python3 bench/bench.py pi (BENCH_BIN: a built binary)
        if os.environ.get("BENCH_BIN"):
            BIN = os.environ["BENCH_BIN"]
        else:
            sh("cargo", "build", "--release", "--quiet", cwd=ROOT)
        work = tempfile.mkdtemp(prefix="questions-bench-")
        try:
            lat = sorted(pi_answer_to_model(work, int(os.environ.get("BENCH_RUNS", "20"))))
        finally:
            shutil.rmtree(work, ignore_errors=True)
        print(f"pi -p, answer in the ledger to the model's next request: {lat[len(lat) // 2] * 1000:.1f} ms median "
              f"(min {lat[0] * 1000:.1f}, max {lat[-1] * 1000:.1f}, {len(lat)} runs)")
    elif sys.argv[1:] == ["startup"]:
        # Start-up alone: python3 bench/bench.py startup
        ensure_tools()
        work = tempfile.mkdtemp(prefix="questions-bench-")
        try:
            start_rows, sizes = startup(work)
        finally:
            shutil.rmtree(work, ignore_errors=True)
        start_lines, start_verdicts = startup_lines(start_rows, sizes)
        print("\n".join(start_lines))
        print()
        print("\n".join(f"- {'met' if ok else 'MISSED'}: {what}" for what, ok in start_verdicts))
    elif sys.argv[1:] == ["serve"]:
        # One measure alone, without the whole benchmark: python3 bench/bench.py serve
        sh("cargo", "build", "--release", "--quiet", cwd=ROOT)
        work = tempfile.mkdtemp(prefix="questions-bench-")
        try:
            median, size = serve_inbox(work)
        finally:
            shutil.rmtree(work, ignore_errors=True)
        print(f"inbox of 1 000 pending questions ({size // 1024} KiB): {median * 1000:.1f} ms median")
    else:
        main()
