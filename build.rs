// The migrations are embedded at compile time; rebuild when one is added or changed.
// The newest version is also worked out here, so that checking an up-to-date ledger does
// not have to build refinery's runner (which compiles a regex) on every call.
fn main() {
    println!("cargo:rerun-if-changed=migrations");
    let mut latest = 0u32;
    for entry in std::fs::read_dir("migrations").expect("migrations/ exists") {
        let name = entry.expect("readable migrations/").file_name();
        let name = name.to_string_lossy();
        if let Some(version) = name
            .strip_prefix('V')
            .and_then(|rest| rest.split("__").next())
            .and_then(|v| v.parse::<u32>().ok())
        {
            latest = latest.max(version);
        }
    }
    println!("cargo:rustc-env=QUESTIONS_SCHEMA_VERSION={latest}");
}
