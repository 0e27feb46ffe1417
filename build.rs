// `questions --version` names the commit and the target it was built from (the core
// crate works out the schema version from its migrations).
fn main() {
    // `questions --version` names the commit and the target it was built from, as
    // constants: nothing is worked out when the binary starts.
    let target = std::env::var("TARGET").unwrap_or_else(|_| "unknown".into());
    println!("cargo:rustc-env=QUESTIONS_TARGET={target}");
    println!("cargo:rustc-env=QUESTIONS_COMMIT={}", commit());

    // Start-up, on Linux with glibc: the binary is linked at a fixed address (`-no-pie`).
    // As a position-independent executable, the dynamic loader rewrote some 29 000
    // pointers of its read-only data (clap's tables, vtables, string slices) at every
    // start, each page of them copied on write: about 120 of its 300 page faults, and
    // `--version` at 1.9 times the time of a hello-world binary (bench/bench.py measures
    // it). Here, so that it applies to every build of the binary, `cargo install` too; the
    // static musl build of scripts/release keeps its own linking. The price: the
    // executable's own code and data are not placed at a random address (the libraries,
    // heap and stack still are). A build that wants that (a distribution's policy) sets
    // QUESTIONS_PIE=1 and keeps the linker's default.
    println!("cargo:rerun-if-env-changed=QUESTIONS_PIE");
    let os = std::env::var("CARGO_CFG_TARGET_OS").unwrap_or_default();
    let env = std::env::var("CARGO_CFG_TARGET_ENV").unwrap_or_default();
    let pie = std::env::var("QUESTIONS_PIE").is_ok_and(|v| v == "1");
    if os == "linux" && env == "gnu" && !pie {
        println!("cargo:rustc-link-arg-bins=-no-pie");
    }
}

/// The commit this build comes from: `$QUESTIONS_COMMIT` when a release job sets it, else
/// the git checkout's HEAD, else the commit a published crate records in
/// `.cargo_vcs_info.json`, else "unknown" (a source tarball).
fn commit() -> String {
    println!("cargo:rerun-if-env-changed=QUESTIONS_COMMIT");
    if let Ok(commit) = std::env::var("QUESTIONS_COMMIT") {
        if !commit.trim().is_empty() {
            return commit.trim().chars().take(12).collect();
        }
    }
    if let Some(commit) = git_head() {
        return commit;
    }
    println!("cargo:rerun-if-changed=.cargo_vcs_info.json");
    if let Ok(info) = std::fs::read_to_string(".cargo_vcs_info.json") {
        if let Some(at) = info.find("\"sha1\"") {
            let hex: String = info[at + 6..]
                .chars()
                .skip_while(|c| !c.is_ascii_hexdigit())
                .take_while(char::is_ascii_hexdigit)
                .take(7)
                .collect();
            if hex.len() == 7 {
                return hex;
            }
        }
    }
    "unknown".into()
}

/// HEAD's short hash, rebuilding when HEAD moves (a commit, a checkout).
fn git_head() -> Option<String> {
    let git = |args: &[&str]| -> Option<String> {
        let out = std::process::Command::new("git").args(args).output().ok()?;
        out.status
            .success()
            .then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
    };
    // Only this project's own checkout: not a repository that happens to hold the
    // unpacked crate (cargo's registry is not one, but a vendored copy could be).
    let top = git(&["rev-parse", "--show-toplevel"])?;
    let here = std::env::current_dir().ok()?;
    if std::fs::canonicalize(top).ok()? != std::fs::canonicalize(here).ok()? {
        return None;
    }
    let head = git(&["rev-parse", "--short=7", "HEAD"])?;
    let mut watched = vec!["HEAD".to_string(), "packed-refs".to_string()];
    watched.extend(git(&["symbolic-ref", "-q", "HEAD"]));
    for path in watched {
        // A path that does not exist would rerun this script on every build.
        match git(&["rev-parse", "--git-path", &path]) {
            Some(file) if std::path::Path::new(&file).exists() => {
                println!("cargo:rerun-if-changed={file}");
            }
            _ => {}
        }
    }
    Some(head)
}
