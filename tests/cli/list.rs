use crate::common::*;

fn ids(v: &serde_json::Value) -> Vec<i64> {
    v["questions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|q| q["id"].as_i64().unwrap())
        .collect()
}

#[test]
fn list_filters_by_stage_status_and_group_in_id_order() {
    let l = Ledger::new();
    let a = l.log_with("intake", "a", &["--group", "Goal"]);
    let b = l.log("intake", "b");
    let c = l.log("design", "c");
    l.ok(["answer", "--id", &b.to_string(), "--answer", "yes"]);

    let all = l.ok(["list"]);
    assert_eq!(all["procedure"], "list");
    assert_eq!(all["count"], 3);
    assert_eq!(ids(&all), vec![a, b, c]);
    assert_eq!(ids(&l.ok(["list", "--stage", "intake"])), vec![a, b]);
    assert_eq!(ids(&l.ok(["list", "--status", "pending"])), vec![a, c]);
    assert_eq!(
        ids(&l.ok(["list", "--stage", "intake", "--status", "answered"])),
        vec![b]
    );
    assert_eq!(ids(&l.ok(["list", "--group", "Goal"])), vec![a]);
    assert_eq!(l.ok(["list", "--stage", "nope"])["count"], 0);
}

#[test]
fn an_unknown_status_is_a_usage_error() {
    let l = Ledger::new();
    let run = l.run(["list", "--status", "done"]);
    assert_eq!((run.code, run.error_code()), (2, "usage"));
    assert_eq!(run.json["procedure"], "list");
}

#[test]
fn listing_a_missing_ledger_is_empty_and_creates_nothing() {
    let l = Ledger::new();
    let out = l.ok(["list"]);
    assert_eq!(out["count"], 0);
    l.assert_not_created();
}

#[test]
fn jsonl_markdown_and_table_render_the_same_questions() {
    let l = Ledger::new();
    l.log_with("intake", "What is the goal?", &["--group", "Goal"]);
    l.log("intake", "Pipe | in text\u{1b}[31m?");

    let jsonl = l.run(["list", "--format", "jsonl"]);
    assert_eq!(jsonl.code, 0);
    let lines: Vec<serde_json::Value> = jsonl
        .stdout
        .lines()
        .map(|line| serde_json::from_str(line).expect("one JSON object a line"))
        .collect();
    assert_eq!(lines.len(), 2);
    assert_eq!(lines[0]["group_name"], "Goal");

    let md = l.run(["list", "--format", "markdown"]).stdout;
    assert!(md.starts_with("| id | stage |"), "{md}");
    assert!(md.contains("| What is the goal? |"), "{md}");
    assert!(md.contains("Pipe \\| in text"), "{md}");
    assert!(
        !md.contains('\u{1b}'),
        "escape sequences must not pass: {md}"
    );

    let table = l.run(["list", "--format", "table"]).stdout;
    let rows: Vec<&str> = table.lines().collect();
    assert_eq!(rows.len(), 3, "{table}");
    assert!(rows[0].starts_with("ID"), "{table}");
    assert!(!table.contains('\u{1b}'));

    let empty = Ledger::new();
    assert_eq!(empty.run(["list", "--format", "jsonl"]).stdout, "");
}

fn table_on_a_terminal(l: &Ledger, no_color: Option<&str>) -> String {
    let mut cmd = std::process::Command::new(BIN);
    cmd.arg("--db")
        .arg(l.db())
        .args(["list", "--format", "table"])
        .env("TERM", "xterm");
    match no_color {
        Some(v) => cmd.env("NO_COLOR", v),
        None => cmd.env_remove("NO_COLOR"),
    };
    let mut p = rexpect::session::spawn_command(cmd, Some(10_000)).unwrap();
    p.exp_eof().unwrap()
}

#[test]
fn the_table_is_coloured_on_a_terminal_unless_no_color() {
    let l = Ledger::new();
    l.log("s", "Pending one?");
    l.log("s", "Answered one?");
    l.ok(["answer", "--id", "2", "--answer", "yes"]);
    let coloured = table_on_a_terminal(&l, None);
    assert!(coloured.contains("\u{1b}[33mpending"), "{coloured:?}");
    assert!(coloured.contains("\u{1b}[32manswered"), "{coloured:?}");
    let plain = table_on_a_terminal(&l, Some("1"));
    assert!(!plain.contains('\u{1b}'), "{plain:?}");
    assert!(plain.contains("pending"));
    // Piped, never coloured.
    assert!(!l
        .run(["list", "--format", "table"])
        .stdout
        .contains('\u{1b}'));
}

#[test]
fn long_questions_are_shortened_to_the_width() {
    let l = Ledger::new();
    l.log("s", &"Why ".repeat(60));
    let mut cmd = l.command();
    cmd.args(["list", "--format", "table"]).env("COLUMNS", "80");
    let table = finish(cmd).stdout;
    for line in table.lines() {
        assert!(line.chars().count() <= 80, "{line}");
    }
    assert!(table.contains('…'));
}
