// The static Linux build's allocator (see Cargo.toml); the others keep the system's.
#[cfg(target_env = "musl")]
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> std::process::ExitCode {
    questions::entry::run(std::env::args_os())
}
