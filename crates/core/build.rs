// The migrations are embedded at compile time; rebuild when one is added or changed.
// The newest version is also worked out here, so that checking an up-to-date ledger does
// not have to build refinery's runner (which compiles a regex) on every call. Both
// engines carry the same versions.
fn newest(dir: &str) -> u32 {
    let mut latest = 0;
    for entry in std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{dir}: {e}")) {
        let name = entry.expect("a readable migrations folder").file_name();
        let name = name.to_string_lossy();
        if let Some(version) = name
            .strip_prefix('V')
            .and_then(|rest| rest.split("__").next())
            .and_then(|v| v.parse::<u32>().ok())
        {
            latest = latest.max(version);
        }
    }
    latest
}

fn main() {
    println!("cargo:rerun-if-changed=migrations");
    let sqlite = newest("migrations/sqlite");
    let postgres = newest("migrations/postgres");
    assert_eq!(
        sqlite, postgres,
        "both engines must carry the same migration versions"
    );
    println!("cargo:rustc-env=QUESTIONS_SCHEMA_VERSION={sqlite}");
}
