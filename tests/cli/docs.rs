//! The docs hold to the program: every shell transcript in README.md and docs/ runs and
//! prints what it shows, every command of `questions --help` has its heading in the
//! reference, every schema in schema/ is named there, every `§N` the code cites is a
//! section of it, and no relative link between the docs is dead.
//!
//! A transcript is a fenced block opened with ```` ```console ````: each line after `$ `
//! is a command (a line ending in `\` goes on, and a here-document runs to its end
//! word), the lines after it are what it prints (stdout, then stderr). `…` in what it
//! prints stands for any text. Each block starts on a fresh ledger in an empty project
//! folder, shown as /home/me/project, unless the line before it is `<!-- continued -->`:
//! then it goes on in the folder of the block before. Blocks that need a service
//! (PostgreSQL, a chat provider, a real harness) are `text` blocks, not transcripts.

use std::path::{Path, PathBuf};

use crate::common::*;

/// Where the transcripts say they run.
const PROJECT: &str = "/home/me/project";

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// README.md, ARCHITECTURE.md, CONTRIBUTING.md and every Markdown file under docs/.
fn doc_files() -> Vec<PathBuf> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        let mut entries: Vec<_> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        entries.sort();
        for path in entries {
            if path.is_dir() {
                walk(&path, out);
            } else if path.extension().is_some_and(|e| e == "md") {
                out.push(path);
            }
        }
    }
    let mut files: Vec<PathBuf> = ["README.md", "ARCHITECTURE.md", "CONTRIBUTING.md"]
        .iter()
        .map(|f| root().join(f))
        .collect();
    walk(&root().join("docs"), &mut files);
    files
}

fn shown(path: &Path) -> String {
    path.strip_prefix(root()).unwrap().display().to_string()
}

/// One command of a transcript and what it prints.
#[derive(Debug)]
struct Step {
    command: String,
    expected: String,
}

#[derive(Debug)]
struct Transcript {
    file: PathBuf,
    line: usize,
    continued: bool,
    steps: Vec<Step>,
}

/// The end word of a here-document the command opens (`<<EOF`, `<<'EOF'`), if any.
fn heredoc_end(command: &str) -> Option<String> {
    let at = command.find("<<")?;
    let word = command[at + 2..]
        .trim_start_matches('-')
        .split_whitespace()
        .next()?;
    Some(word.trim_matches(|c| c == '\'' || c == '"').to_string())
}

fn transcripts(file: &Path) -> Vec<Transcript> {
    let text = std::fs::read_to_string(file).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    let mut found = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        if lines[i].trim_end() != "```console" {
            i += 1;
            continue;
        }
        let continued = lines[..i]
            .iter()
            .rev()
            .find(|l| !l.trim().is_empty())
            .is_some_and(|l| l.trim() == "<!-- continued -->");
        let mut t = Transcript {
            file: file.to_path_buf(),
            line: i + 1,
            continued,
            steps: Vec::new(),
        };
        i += 1;
        while i < lines.len() && lines[i].trim_end() != "```" {
            let line = lines[i];
            if let Some(command) = line.strip_prefix("$ ") {
                let mut command = command.to_string();
                while command.ends_with('\\') && i + 1 < lines.len() {
                    command.pop();
                    i += 1;
                    command.push_str(lines[i].trim_start());
                }
                if let Some(end) = heredoc_end(&command) {
                    loop {
                        i += 1;
                        assert!(i < lines.len(), "{}: an unended here-document", shown(file));
                        command.push('\n');
                        command.push_str(lines[i]);
                        if lines[i].trim() == end {
                            break;
                        }
                    }
                }
                t.steps.push(Step {
                    command,
                    expected: String::new(),
                });
            } else {
                let step = t.steps.last_mut().unwrap_or_else(|| {
                    panic!(
                        "{}:{}: a transcript's first line is a `$ ` command",
                        shown(file),
                        i + 1
                    )
                });
                step.expected.push_str(line);
                step.expected.push('\n');
            }
            i += 1;
        }
        found.push(t);
        i += 1;
    }
    found
}

/// `s` with what changes from run to run made the same: the project's folder, instants,
/// and a ledger's random id.
fn normalised(s: &str, dir: &str) -> String {
    let s = s.replace(dir, PROJECT);
    let chars: Vec<char> = s.chars().collect();
    let mut out = String::new();
    let mut i = 0;
    while i < chars.len() {
        // 2026-11-21T23:47:04.692Z
        let instant = chars.len() >= i + 24
            && chars[i..i + 24].iter().enumerate().all(|(k, c)| match k {
                4 | 7 => *c == '-',
                10 => *c == 'T',
                13 | 16 => *c == ':',
                19 => *c == '.',
                23 => *c == 'Z',
                _ => c.is_ascii_digit(),
            });
        if instant {
            out.push_str("<instant>");
            i += 24;
            continue;
        }
        let hex = chars[i..]
            .iter()
            .take_while(|c| c.is_ascii_digit() || ('a'..='f').contains(*c))
            .count();
        let starts_word = i == 0 || !chars[i - 1].is_ascii_alphanumeric();
        if hex == 32 && starts_word {
            out.push_str("<ledger id>");
            i += 32;
            continue;
        }
        out.push(chars[i]);
        i += 1;
    }
    out.lines()
        .map(str::trim_end)
        .collect::<Vec<_>>()
        .join("\n")
        .trim_end()
        .to_string()
}

/// Whether `text` is `pattern`, where each `…` in the pattern stands for any text.
fn matches(pattern: &str, text: &str) -> bool {
    fn from(parts: &[&str], text: &str) -> bool {
        let Some(rest) = text.strip_prefix(parts[0]) else {
            return false;
        };
        if parts.len() == 1 {
            return rest.is_empty();
        }
        rest.char_indices()
            .map(|(i, _)| i)
            .chain(std::iter::once(rest.len()))
            .any(|i| from(&parts[1..], &rest[i..]))
    }
    let parts: Vec<&str> = pattern.split('…').collect();
    from(&parts, text)
}

/// The lines of `expected` and `actual`, the differing ones marked `-` and `+`.
pub(crate) fn diff(expected: &str, actual: &str) -> String {
    let a: Vec<&str> = expected.lines().collect();
    let b: Vec<&str> = actual.lines().collect();
    let same = |i: usize, j: usize| a[i] == b[j] || (a[i].contains('…') && matches(a[i], b[j]));
    // The longest common subsequence, by lines.
    let mut len = vec![vec![0usize; b.len() + 1]; a.len() + 1];
    for i in (0..a.len()).rev() {
        for j in (0..b.len()).rev() {
            len[i][j] = if same(i, j) {
                len[i + 1][j + 1] + 1
            } else {
                len[i + 1][j].max(len[i][j + 1])
            };
        }
    }
    let (mut i, mut j, mut out) = (0, 0, String::new());
    while i < a.len() || j < b.len() {
        if i < a.len() && j < b.len() && same(i, j) {
            out.push_str(&format!("  {}\n", b[j]));
            i += 1;
            j += 1;
        } else if i < a.len() && (j == b.len() || len[i + 1][j] >= len[i][j + 1]) {
            out.push_str(&format!("- {}\n", a[i]));
            i += 1;
        } else {
            out.push_str(&format!("+ {}\n", b[j]));
            j += 1;
        }
    }
    out
}

/// Fails, with a diff (`-` the docs, `+` the program), unless `actual` is what the docs
/// show; both normalised as transcripts are.
pub(crate) fn assert_shown(place: &str, expected: &str, actual: &str, dir: &str) {
    let expected = normalised(expected, dir);
    let actual = normalised(actual, dir);
    assert!(
        matches(&expected, &actual),
        "{place}: the docs show other output than the program prints \
         (- the docs, + the program):\n{}",
        diff(&expected, &actual)
    );
}

/// Where the block after `<!-- NAME -->` in a file of the docs starts and ends (its
/// fence lines left out), and the file's text.
#[cfg(feature = "relay")]
fn block(file: &str, name: &str) -> (String, usize, usize) {
    let text = std::fs::read_to_string(root().join(file)).unwrap();
    let marker = format!("<!-- {name} -->");
    let at = text
        .find(&marker)
        .unwrap_or_else(|| panic!("{file} has no block marked {marker}"));
    let fence = at + text[at..].find("```").unwrap();
    let start = fence + text[fence..].find('\n').unwrap() + 1;
    let end = start + text[start..].find("```").unwrap();
    (text, start, end)
}

/// Fails, with a diff, unless `actual` is the block after `<!-- NAME -->` in `file` (both
/// normalised as transcripts are): for the transcripts that need a stand-in of a service,
/// which the test of that service runs. With `QUESTIONS_WRITE_DOCS=1` it writes `actual`
/// there instead.
#[cfg(feature = "relay")]
pub(crate) fn assert_documented(file: &str, name: &str, actual: &str) {
    let (text, start, end) = block(file, name);
    if std::env::var_os("QUESTIONS_WRITE_DOCS").is_some() {
        let actual: Vec<&str> = actual.trim_end().lines().map(str::trim_end).collect();
        let written = format!("{}{}\n{}", &text[..start], actual.join("\n"), &text[end..]);
        std::fs::write(root().join(file), written).unwrap();
        return;
    }
    assert_shown(
        &format!("{file}, the block marked <!-- {name} -->"),
        &text[start..end],
        actual,
        PROJECT,
    );
}

/// A command line as a person would type it: arguments with spaces in single quotes.
#[cfg(feature = "relay")]
pub(crate) fn typed(args: &[&str]) -> String {
    let words: Vec<String> = args
        .iter()
        .map(|a| {
            if a.contains(' ') {
                format!("'{a}'")
            } else {
                (*a).to_string()
            }
        })
        .collect();
    format!("$ questions {}", words.join(" "))
}

fn run_transcript(t: &Transcript, dir: &Path, home: &Path) {
    let bin_dir = Path::new(BIN).parent().unwrap();
    let path = format!(
        "{}:{}",
        bin_dir.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let mut last = 0;
    for step in &t.steps {
        let out = std::process::Command::new("sh")
            .arg("-c")
            .arg(format!("(exit {last}); {}", step.command))
            .current_dir(dir)
            .env("PATH", &path)
            .env("HOME", home)
            .env("QUESTIONS_NOW", NOW)
            .env_remove("QUESTIONS_USER")
            .env("NO_COLOR", "1")
            .env_remove("QUESTIONS_DB")
            .env_remove("QUESTIONS_STAGE")
            .env_remove("CODEX_HOME")
            .stdin(std::process::Stdio::null())
            .output()
            .unwrap();
        last = out.status.code().unwrap_or(1);
        let printed = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        assert_shown(
            &format!("{}:{}: `$ {}`", shown(&t.file), t.line, step.command),
            &step.expected,
            &printed,
            &dir.display().to_string(),
        );
    }
}

#[test]
fn sqlite_only_every_transcript_in_the_docs_prints_what_it_shows() {
    crate::sqlite_only!();
    let mut ran = 0;
    let mut folder: Option<(tempfile::TempDir, PathBuf, PathBuf)> = None;
    for file in doc_files() {
        for t in transcripts(&file) {
            if !t.continued || folder.is_none() {
                let work = tempfile::tempdir().unwrap();
                let home = work.path().join("home");
                let dir = work.path().join("project");
                std::fs::create_dir_all(&home).unwrap();
                // The ledger's folder is there, so that the walk up from the project
                // stops at it whatever the folders above hold.
                std::fs::create_dir_all(dir.join(".questions")).unwrap();
                folder = Some((work, dir, home));
            }
            let (_, dir, home) = folder.as_ref().unwrap();
            run_transcript(&t, dir, home);
            ran += t.steps.len();
        }
    }
    assert!(ran > 20, "only {ran} commands of transcripts ran");
}

#[test]
fn a_transcript_is_read_as_it_is_written() {
    let work = tempfile::tempdir().unwrap();
    let file = work.path().join("t.md");
    std::fs::write(
        &file,
        "text\n\n```console\n$ questions log \\\n    --stage a\n{\n  …\n}\n$ cat > f <<'EOF'\nQ: x\nEOF\n$ echo $?\n0\n```\n\n<!-- continued -->\n```console\n$ true\n```\n",
    )
    .unwrap();
    let found = transcripts(&file);
    assert_eq!(found.len(), 2);
    assert!(!found[0].continued);
    assert!(found[1].continued);
    let steps: Vec<(&str, &str)> = found[0]
        .steps
        .iter()
        .map(|s| (s.command.as_str(), s.expected.as_str()))
        .collect();
    assert_eq!(
        steps,
        [
            ("questions log --stage a", "{\n  …\n}\n"),
            ("cat > f <<'EOF'\nQ: x\nEOF", ""),
            ("echo $?", "0\n"),
        ]
    );
    assert!(matches("{\n  …\n}", "{\n  \"a\": 1,\n  \"b\": {\n  }\n}"));
    assert!(!matches("{\n  \"a\": 2,\n  …\n}", "{\n  \"a\": 1\n}"));
    assert_eq!(
        normalised(
            "/tmp/x/project at 2026-11-21T23:47:04.692Z in 8f2ee01ba5f61eb0c0c1da888ec33a39  ",
            "/tmp/x/project"
        ),
        "/home/me/project at <instant> in <ledger id>"
    );
    assert_eq!(diff("a\nb\nc", "a\nx\nc"), "  a\n- b\n+ x\n  c\n");
}

/// The commands `questions --help` lists, `help` aside.
fn commands() -> Vec<String> {
    let help = finish({
        let mut cmd = bare_command(Path::new("."));
        cmd.arg("--help");
        cmd
    })
    .stdout;
    help.lines()
        .skip_while(|l| !l.starts_with("Commands:"))
        .skip(1)
        .take_while(|l| l.starts_with("  "))
        .filter(|l| !l.starts_with("   "))
        .filter_map(|l| l.split_whitespace().next())
        .filter(|name| *name != "help")
        .map(str::to_string)
        .collect()
}

fn reference() -> String {
    std::fs::read_to_string(root().join("docs/reference.md")).unwrap()
}

#[test]
fn every_command_of_the_help_has_its_heading_in_the_reference() {
    let reference = reference();
    let headings: Vec<&str> = reference.lines().filter(|l| l.starts_with('#')).collect();
    let commands = commands();
    assert!(commands.len() > 20, "the command list was not read");
    let missing: Vec<&String> = commands
        .iter()
        .filter(|c| {
            let name = format!("`{c}`");
            !headings.iter().any(|h| h.contains(&name))
        })
        .collect();
    assert!(
        missing.is_empty(),
        "docs/reference.md has no heading naming these commands (e.g. \"### `NAME`\"): {missing:?}"
    );
}

#[test]
fn every_schema_is_named_in_the_reference() {
    let reference = reference();
    let mut missing = Vec::new();
    let mut seen = 0;
    for entry in std::fs::read_dir(root().join("schema")).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_none_or(|e| e != "json") {
            continue;
        }
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        seen += 1;
        if !reference.contains(&format!("`{name}`")) {
            missing.push(name);
        }
    }
    assert!(seen > 20, "only {seen} schemas were read");
    assert!(
        missing.is_empty(),
        "docs/reference.md names no document for these schemas: {missing:?}"
    );
}

/// Every `§N` in the sources, with where it is.
fn cited_sections() -> Vec<(u32, String)> {
    fn walk(dir: &Path, out: &mut Vec<(u32, String)>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                walk(&path, out);
                continue;
            }
            let Ok(text) = std::fs::read_to_string(&path) else {
                continue;
            };
            for (n, line) in text.lines().enumerate() {
                for (at, _) in line.match_indices('§') {
                    let digits: String = line[at + '§'.len_utf8()..]
                        .chars()
                        .take_while(char::is_ascii_digit)
                        .collect();
                    if let Ok(section) = digits.parse() {
                        out.push((section, format!("{}:{}", shown(&path), n + 1)));
                    }
                }
            }
        }
    }
    let mut found = Vec::new();
    for dir in ["src", "crates", "tests"] {
        walk(&root().join(dir), &mut found);
    }
    found
}

#[test]
fn every_section_the_code_cites_is_a_section_of_the_reference() {
    let reference = reference();
    let cited = cited_sections();
    assert!(cited.len() > 20, "the citations were not read: {cited:?}");
    let missing: Vec<&(u32, String)> = cited
        .iter()
        .filter(|(n, _)| {
            !reference
                .lines()
                .any(|l| l.starts_with(&format!("## {n}. ")))
        })
        .collect();
    assert!(
        missing.is_empty(),
        "docs/reference.md has no section \"## N. …\" for these citations: {missing:?}"
    );
    // The numbers run 1, 2, 3 … with no gap, so a new section cannot take an old number.
    let numbers: Vec<u32> = reference
        .lines()
        .filter_map(|l| l.strip_prefix("## "))
        .filter_map(|l| l.split_once(". "))
        .filter_map(|(n, _)| n.parse().ok())
        .collect();
    let expected: Vec<u32> = (1..=u32::try_from(numbers.len()).unwrap()).collect();
    assert_eq!(numbers, expected, "the reference's numbered sections");
}

/// GitHub's anchor for a heading: lower case, punctuation dropped, spaces as `-`.
fn anchor(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter(|c| c.is_alphanumeric() || *c == ' ' || *c == '-' || *c == '_')
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}

fn anchors(text: &str) -> Vec<String> {
    let mut fenced = false;
    let mut out = Vec::new();
    for line in text.lines() {
        if line.starts_with("```") {
            fenced = !fenced;
        }
        if !fenced && line.starts_with('#') {
            out.push(anchor(line.trim_start_matches('#')));
        }
    }
    out
}

#[test]
fn no_relative_link_in_the_docs_is_dead() {
    let mut dead = Vec::new();
    let mut seen = 0;
    for file in doc_files() {
        let text = std::fs::read_to_string(&file).unwrap();
        let mut fenced = false;
        for (n, line) in text.lines().enumerate() {
            if line.starts_with("```") {
                fenced = !fenced;
            }
            if fenced {
                continue;
            }
            for (at, _) in line.match_indices("](") {
                let Some(end) = line[at + 2..].find(')') else {
                    continue;
                };
                let target = &line[at + 2..at + 2 + end];
                if target.contains("://") || target.starts_with("mailto:") {
                    continue;
                }
                seen += 1;
                let (path, fragment) = target.split_once('#').unwrap_or((target, ""));
                let into = if path.is_empty() {
                    file.clone()
                } else {
                    file.parent().unwrap().join(path)
                };
                let place = format!("{}:{}: {target}", shown(&file), n + 1);
                if !into.exists() {
                    dead.push(place);
                    continue;
                }
                if !fragment.is_empty()
                    && into.extension().is_some_and(|e| e == "md")
                    && !anchors(&std::fs::read_to_string(&into).unwrap())
                        .iter()
                        .any(|a| a == fragment)
                {
                    dead.push(place);
                }
            }
        }
    }
    assert!(seen > 20, "only {seen} links were read");
    assert!(dead.is_empty(), "dead links: {dead:#?}");
}
