fn main() -> std::process::ExitCode {
    questions::run(std::env::args_os())
}
