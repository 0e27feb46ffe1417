//! The command line: global arguments and one `Args` struct per command. Values are
//! checked here, as they are parsed, so that a malformed one is a usage error (exit 2)
//! before anything touches the ledger.

use std::ffi::OsString;
use std::path::PathBuf;

use clap::{ArgGroup, Args, Parser, Subcommand, ValueEnum};

use questions_core::formats::{self, answers::ImportFormat};
use questions_core::model::{self, OnExpiry, QuestionOption, Status, Vocabulary};
use questions_core::ops::Procedure;

/// Where `serve` listens unless `--bind` says otherwise.
const DEFAULT_BIND: &str = "127.0.0.1:8466";

const ABOUT: &str =
    "A ledger of the questions AI agents need a person to answer, with stage gates.";

const LONG_ABOUT: &str = "\
A ledger of the questions AI agents need a person to answer, with stage gates.

Orchestrators log the questions their subagents raise, record the answers a person gives,
and gate each stage on its required questions: `questions check --stage NAME` exits 0 when
the gate passes, 1 while required questions are pending, 2 on a usage error.
Every command prints one JSON document on stdout.";

const AFTER_HELP: &str = "\
The ledger is --db, else $QUESTIONS_DB, else upwards from the current directory the nearest
.questions/ledger.db or uwf ledger (.github/skills/uwf-question-protocol/uwf-questions.db),
else ./.questions/ledger.db (created by the first write). 'questions info' shows which.

Example:
  questions log --stage intake --group Goal --question 'What is the goal?' --proposed 'A blog'
  questions answer --id 1 --answer 'A monitoring dashboard'
  questions check --stage intake && echo 'gate passes'";

/// `questions --version`: the version, the commit and the target it was built for.
pub const VERSION: &str = concat!(
    env!("CARGO_PKG_VERSION"),
    " (",
    env!("QUESTIONS_COMMIT"),
    ", ",
    env!("QUESTIONS_TARGET"),
    ")"
);

/// What `questions --version` (or `-V`) alone prints: the line clap prints for it, as a
/// constant, so that the commonest call of launchers and scripts does not build the
/// command tree (a test holds it to clap's own rendering).
pub const VERSION_LINE: &str = concat!(
    "questions ",
    env!("CARGO_PKG_VERSION"),
    " (",
    env!("QUESTIONS_COMMIT"),
    ", ",
    env!("QUESTIONS_TARGET"),
    ")\n"
);

/// `VERSION_LINE` when the command line is `--version` or `-V` and nothing else.
pub fn plain_version(args: &[OsString]) -> Option<&'static str> {
    match args {
        [_, flag] if flag == "--version" || flag == "-V" => Some(VERSION_LINE),
        _ => None,
    }
}

/// `questions --version --json` (in either order, nothing else): the same facts for tools,
/// with the path of this binary, so that a launcher's caller (npm's `questions`, a
/// Python entry point) can find the native one and call it directly.
pub fn version_json(args: &[OsString]) -> Option<serde_json::Value> {
    let mut words: Vec<&str> = Vec::new();
    let mut rest = args.iter().skip(1);
    while let Some(word) = rest.next() {
        let word = word.to_str()?;
        // The global flags may stand beside it, as with `--version` alone.
        if word == "--db" || word == "--by" {
            rest.next();
        } else if !word.starts_with("--db=") && !word.starts_with("--by=") {
            words.push(word);
        }
    }
    let asked = matches!(
        words.as_slice(),
        ["--version" | "-V", "--json"] | ["--json", "--version" | "-V"]
    );
    if !asked {
        return None;
    }
    let path = std::env::current_exe()
        .ok()
        .map(|p| std::fs::canonicalize(&p).unwrap_or(p));
    Some(serde_json::json!({
        "name": "questions",
        "version": env!("CARGO_PKG_VERSION"),
        "commit": env!("QUESTIONS_COMMIT"),
        "target": env!("QUESTIONS_TARGET"),
        "schema_version": questions_core::ops::schema_version(),
        "path": path.map(|p| p.to_string_lossy().into_owned()),
    }))
}

#[derive(Debug, Parser)]
#[command(name = "questions", version = VERSION, about = ABOUT, long_about = LONG_ABOUT, after_help = AFTER_HELP)]
#[command(propagate_version = true, max_term_width = 100)]
pub struct Cli {
    /// The ledger: a SQLite file path, or a PostgreSQL database (postgres://… or a libpq
    /// "host=… dbname=…" string); default: the nearest .questions/ledger.db
    #[arg(
        long,
        global = true,
        env = "QUESTIONS_DB",
        hide_env_values = true,
        value_name = "LOCATION"
    )]
    pub db: Option<OsString>,

    /// Who makes the changes this call records (answers, skips, declines); default:
    /// $QUESTIONS_USER, else the operating-system user
    #[arg(
        long,
        global = true,
        env = "QUESTIONS_USER",
        value_name = "NAME",
        allow_hyphen_values = true
    )]
    pub by: Option<String>,

    /// JSON output, which every command but a few renderings prints anyway: accepted
    /// everywhere, so that `questions list --json` does what it says
    #[arg(long, global = true)]
    pub json: bool,

    /// `db` came from `QUESTIONS_DB`, not `--db` (set by `parse`).
    #[arg(skip)]
    pub db_from_env: bool,

    /// `by` came from `--by` itself (set by `parse`): votes refuse it.
    #[arg(skip)]
    pub by_from_flag: bool,

    #[command(subcommand)]
    pub command: Command,
}

impl Cli {
    /// What `--json` clashes with: a rendering other than JSON that the command line also
    /// asks for (`list --format table`, `render --format markdown`, completions, the man
    /// page). Everywhere else JSON is what is printed, and `--json` changes nothing.
    pub fn json_clash(&self) -> Option<String> {
        if !self.json {
            return None;
        }
        let other = match &self.command {
            Command::List(args) if args.format != ListFormat::Json => {
                format!("list --format {}", list_format_name(args.format))
            }
            Command::Render(args)
                if matches!(
                    args.format,
                    formats::RenderFormat::OpenQuestions
                        | formats::RenderFormat::Uwf
                        | formats::RenderFormat::Markdown
                ) =>
            {
                format!("render --format {}", args.format.name())
            }
            Command::Completions(_) => "completions".into(),
            Command::Man => "man".into(),
            _ => return None,
        };
        Some(format!(
            "--json asks for JSON, and {other} prints something else: give one of the two"
        ))
    }
}

fn list_format_name(format: ListFormat) -> String {
    format
        .to_possible_value()
        .map_or_else(String::new, |v| v.get_name().to_string())
}

/// Parses a command line, noting where `--db`'s value came from.
pub fn parse(args: &[OsString]) -> Result<Cli, clap::Error> {
    use clap::{CommandFactory, FromArgMatches};
    let mut command = Cli::command();
    let matches = command.try_get_matches_from_mut(args);
    // The tree of every command's arguments goes with the process: freeing it piece by
    // piece would only take time, on every call.
    std::mem::forget(command);
    let matches = matches?;
    let mut cli = Cli::from_arg_matches(&matches)?;
    cli.db_from_env = matches.value_source("db") == Some(clap::parser::ValueSource::EnvVariable);
    cli.by_from_flag = matches.value_source("by") == Some(clap::parser::ValueSource::CommandLine);
    Ok(cli)
}

/// The command a command line that failed to parse was for. Clap reads it by its own
/// rules with its errors set aside, so `--by NAME hook …` and `--db=PATH hook …` name
/// `hook` whatever is wrong after it. When clap cannot get past the words before the
/// command (an unknown flag there, whose value it cannot tell), the first other word that
/// names a command is the best guess: a hook's usage error must still fail open.
pub fn named_command(args: &[OsString]) -> Option<Procedure> {
    use clap::CommandFactory;
    let mut command = Cli::command().ignore_errors(true);
    let matches = command.try_get_matches_from_mut(args);
    match matches
        .as_ref()
        .ok()
        .and_then(clap::ArgMatches::subcommand_name)
    {
        Some(name) => Procedure::command(name),
        None => args
            .iter()
            .skip(1)
            .filter_map(|word| word.to_str())
            .filter(|word| !word.starts_with('-'))
            .find_map(Procedure::command),
    }
}

/// Each command's arguments are defined only when it is the one called (`defer`): a
/// call then builds one command's flags, not all two dozen; help, completions and the man
/// page build the whole tree (`Command::build`).
#[derive(Debug, Subcommand)]
#[command(defer = true)]
pub enum Command {
    /// Log a question for a stage (an identical one already logged is returned instead)
    #[command(
        after_help = "Example:\n  questions log --stage intake --group Goal \\\n    --question 'What is the primary goal of this project?' \\\n    --proposed 'Build a blog platform' --required true\n  questions log --stage design --question 'Which database?' \\\n    --option 'PostgreSQL (Recommended)' --option SQLite --no-freeform"
    )]
    Log(LogArgs),
    /// Record the answer to a question
    #[command(
        after_help = "Example:\n  questions answer --id 7 --answer 'Create a monitoring dashboard'\n  questions answer --id 9 --select PostgreSQL\n  questions answer --id 7 --answer '- React' --force"
    )]
    Answer(AnswerArgs),
    /// Mark a question skipped: it no longer holds its stage's gate
    #[command(
        after_help = "Example:\n  questions skip --id 8 --reason 'not needed for the prototype'"
    )]
    Skip(SkipArgs),
    /// Decline a question: the person will not answer it as asked (it holds the gate, with the reason)
    #[command(
        after_help = "Example:\n  questions decline --id 8 --reason 'both options are wrong: we are not choosing a database yet'"
    )]
    Decline(DeclineArgs),
    /// List questions, oldest first
    #[command(after_help = "Example:\n  questions list --stage intake --status pending")]
    List(ListArgs),
    /// Gate a stage: exit 0 when no required question is pending, else 1
    #[command(
        after_help = "Example:\n  questions check --stage intake\n  questions check --stage intake --ids 7,8,9\n  questions check --stage release --wait --timeout 3600"
    )]
    Check(CheckArgs),
    /// Remove a stage's questions from the live ledger (they stay in the history)
    #[command(after_help = "Example:\n  questions clear --stage intake")]
    Clear(ClearArgs),
    /// Delete the ledger file (with its -wal and -shm companions)
    #[command(after_help = "Example:\n  questions reset --yes")]
    Reset(ResetArgs),
    /// Show the history of a question or a stage: every change, with the row before and after
    #[command(
        after_help = "Example:\n  questions history --id 7\n  questions history --stage intake"
    )]
    History(HistoryArgs),
    /// Log every question in a subagent's output (QUESTIONS_NEEDED, openQuestions, ask_user)
    #[command(
        after_help = "Example:\n  questions ingest --stage intake --file subagent-output.txt\n  cat subagent-output.md | questions ingest --stage design --format open-questions"
    )]
    Ingest(IngestArgs),
    /// Print a stage's pending questions in the shape an asking tool accepts
    #[command(
        after_help = "Example:\n  questions render --stage intake        # AskUserQuestion batches\n  questions render --stage intake --format vscode\n  questions render --stage intake --format pi-pending --out pending-questions.json\n  questions render --stage intake --format markdown >> PLAN.md"
    )]
    Render(RenderArgs),
    /// Record the answers an asking tool returned, all or nothing
    #[command(
        after_help = "Example:\n  echo '{\"answers\": {\"Which database?\": \"SQLite\"}}' | questions import --stage design\n  questions import --stage intake --format map --file answers.json"
    )]
    Import(ImportArgs),
    /// Print what a re-invoked subagent needs: its answers keyed by group, header or question
    #[command(after_help = "Example:\n  questions answers --stage intake")]
    Answers(AnswersArgs),
    /// Answer pending optional questions with their proposed values
    #[command(
        after_help = "Example:\n  questions accept-defaults --stage intake\n  questions accept-defaults --stage intake --include-required"
    )]
    AcceptDefaults(AcceptDefaultsArgs),
    /// Answer a stage's pending questions in the terminal
    #[command(
        after_help = "Keys: ↑↓ to move, a number to filter, Space to choose (multi-select), Enter to\nconfirm, Esc to cancel. Nothing is recorded until you confirm at the end.\n\nExample:\n  questions ask --stage intake"
    )]
    Ask(AskArgs),
    /// Show where the ledger is, how it was found, and what each stage holds
    #[command(after_help = "Example:\n  questions info")]
    Info,
    /// Print a shell completion script (bash, zsh, fish, elvish, powershell)
    #[command(
        after_help = "Example:\n  mkdir -p ~/.local/share/bash-completion/completions\n  questions completions bash > ~/.local/share/bash-completion/completions/questions\n  mkdir -p ~/.zfunc   # and fpath+=(~/.zfunc) in ~/.zshrc\n  questions completions zsh > ~/.zfunc/_questions\n  mkdir -p ~/.config/fish/completions\n  questions completions fish > ~/.config/fish/completions/questions.fish"
    )]
    Completions(CompletionsArgs),
    /// Print the history's events as JSON lines, oldest first; --follow keeps printing new ones
    #[command(
        after_help = "Each line is one event: ledger, seq, at, event, question_id, stage, answered_by,\nchannel, before, after. Resume with --since LEDGER:SEQ of the last event seen: nothing is\nrepeated or skipped, and after a reset (which starts the seqs again) the new ledger is\nread from its first event.\n\nExample:\n  questions events --since 0\n  questions events --stage intake --follow --timeout 5"
    )]
    Events(EventsArgs),
    /// Deliver each new event to a command or a webhook, at least once and in order
    #[command(
        after_help = "The watcher's position is kept in the ledger under its name: stopped and started\nagain, it goes on where it stopped. A delivery that fails is retried with backoff.\n\nExample:\n  questions watch --name notify --on logged --timeout 1 --exec 'cat >> events.jsonl'\n  questions watch --name phone --on logged --format ntfy --timeout 1 \\\n    --webhook http://127.0.0.1:9/questions"
    )]
    Watch(WatchArgs),
    /// Serve the ledger to agents as Model Context Protocol tools on stdio (JSON-RPC on stdout)
    #[command(
        after_help = "Tools: ask_questions, wait_for_answers, check_gate, list_questions, get_answers,\nrecord_answers. Logs go to stderr. Changes made through it record channel \"mcp\", by\n\"mcp:<client name>\". An agent's host starts it, e.g. for Claude Code:\nclaude mcp add questions -- questions --db /path/to/ledger.db mcp\n\nExample:\n  printf '%s%s\\n%s\\n%s\\n' \\\n    '{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{\"protocolVersion\":\"2025-06-18\",' \\\n    '\"capabilities\":{},\"clientInfo\":{\"name\":\"sh\",\"version\":\"1\"}}}' \\\n    '{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}' \\\n    '{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/list\"}' | questions mcp"
    )]
    Mcp(McpArgs),
    /// Sign in to a ledger's server as yourself, through its OpenID provider
    #[command(
        after_help = "The server (serve --oidc-issuer) gives a code; open the page printed (or the browser\nthat opens), sign in as yourself and approve the code. The token made expires after\n12 hours and is refreshed by itself for 30 days; it is kept, with its refresh token, in\n$XDG_CONFIG_HOME/questions/credentials.json (mode 600). Every command with\n--db https://HOST uses it when QUESTIONS_TOKEN is not set. Agents keep their tokens\n('questions token create NAME --agent'): a login is a person's.\n\nExample:\n  questions login https://questions.example.com\n  questions --db https://questions.example.com list\n  questions logout https://questions.example.com"
    )]
    Login(LoginArgs),
    /// Sign out of a ledger's server: its login is revoked there and forgotten here
    #[command(
        after_help = "Revokes the login's token and refresh token on the server and removes them from\n$XDG_CONFIG_HOME/questions/credentials.json. A server not logged in to: nothing to do.\n\nExample:\n  questions logout https://questions.example.com"
    )]
    Logout(LoginArgs),
    /// Serve the inbox: a page where people answer pending questions, and its JSON API
    #[command(
        after_help = "Prints one JSON line with the URL to open (its token becomes a cookie), then serves\nuntil interrupted. Loopback only unless --allow-remote; over SSH, forward the port:\n  ssh -L 8466:127.0.0.1:8466 host 'questions serve'\nWith --tls-cert and --tls-key it speaks HTTPS itself on the same port, and reads the two\nfiles again when they change (a renewed certificate needs no restart).\n\nExample:\n  questions serve\n  questions serve --bind 127.0.0.1:0 --stage intake --user alice"
    )]
    Serve(ServeArgs),
    /// Approve an approval (a vote; you must be among its approvers, never its requester)
    #[command(
        after_help = "Your vote counts as the PostgreSQL role you connect as, or on a SQLite file as the\noperating-system user (by uid); --by is refused. One vote a person: a later one replaces\nit. Whoever asked for an approval, or logged it, never votes on it.\n\nApproval 11 was logged by the pipeline, naming you among its --approvers.\n\nExample:\n  questions approve --id 11 --comment 'checked the diff'"
    )]
    Approve(ApproveArgs),
    /// Reject an approval (a vote that settles it rejected, with the reason)
    #[command(
        after_help = "Approval 11 was logged by the pipeline, naming you among its --approvers.\n\nExample:\n  questions reject --id 11 --reason 'not during the freeze'"
    )]
    Reject(RejectArgs),
    /// Create a group of approvers, or add or remove its members (its admins only)
    #[command(
        after_help = "An approval's --approvers may name group:NAME (a group that exists): its members at the\ntime of each vote may vote. You act as the PostgreSQL role you connect as, or on a\nSQLite file as the operating-system user; --by is refused.\n\nExample:\n  questions group create release --admins \"$(id -un)\"\n  questions group add release alice bob\n  questions group remove release bob"
    )]
    Group(GroupArgs),
    /// Link people to the channel identities they answer from (Telegram, Slack, email, Matrix)
    #[command(
        after_help = "An identity is the provider's stable id: telegram:<user id>, slack:<team id>/<user id>,\nemail:<address>, matrix:<@user:server>, github:<login> (a CI run's initiator, whom the CI gate refuses as an\napprover). Only NAME themself, or an admin of the group 'people' (questions group create\npeople --admins NAME,…), links or unlinks NAME; --by is refused; every change is in the\nhistory. With nobody linked, nobody answers through a channel. 'people delegate NAME --to\nOTHER --until INSTANT' sends the cards a routing policy names NAME for to OTHER too\n(following at most 3 delegations; a cycle is refused), and records OTHER's answer on\nNAME's behalf; 'people delegate NAME off' ends it.\n\nExample:\n  questions people link \"$(id -un)\" telegram:123456789\n  questions people list\n  questions people unlink \"$(id -un)\" telegram:123456789\n  questions people delegate \"$(id -un)\" --to bob --until 2030-01-01T00:00:00Z"
    )]
    People(PeopleArgs),
    /// Put pending questions to people on Telegram, Slack, email or Matrix (pair: a link code)
    #[command(
        after_help = "Runs in the foreground until SIGINT or SIGTERM, with outbound connections only. The\nconfig (TOML) names each channel's endpoint and the environment variable holding its\nsecret: [telegram] token_env = \"TELEGRAM_BOT_TOKEN\" (api defaults to the Bot API);\n[slack] app_token_env = \"SLACK_APP_TOKEN\", bot_token_env = \"SLACK_BOT_TOKEN\" (Socket Mode;\nthe app manifest is contrib/slack/manifest.json); [matrix] homeserver = \"https://…\",\ntoken_env = \"MATRIX_TOKEN\" (the bot account's access token). 'relay pair CHANNEL NAME'\nprints a one-time code (10 minutes) NAME sends the bot (/start CODE on Telegram, the code\nin a direct message on Slack or Matrix), linking the account it comes from. Then:\nquestions relay --config FILE.\n\nExample:\n  questions relay pair telegram \"$(id -un)\""
    )]
    Relay(RelayArgs),
    /// Make, list or revoke the tokens agents and people call the ledger with over HTTPS
    #[command(
        after_help = "Only with direct access to the ledger (its file, or a PostgreSQL role), never over\nHTTPS. An agent token logs, reads and waits within its stages (a name, or a prefix\nending in *) and never answers, votes or administers; a person token acts as its person.\nThe secret is printed once, by create: the ledger keeps only its hash. Revoking takes\neffect on the next request. Every change is in the history; --by is refused.\n\nExample:\n  questions token create ci-runner --agent --stages 'ci-*' --expires 30d\n  questions token create dana-phone --person dana\n  questions token list\n  questions token revoke ci-runner"
    )]
    Token(TokenArgs),
    /// Say who gets a stage's cards, and when they are reminded and the card escalated
    #[command(
        after_help = "Kept in the ledger, so that every relay routes alike. Only with direct access to the\nledger (its file, or a PostgreSQL role), never with a token; --by is refused; every\nchange is a 'policy' event in the history. A PATTERN is a stage's name, or a prefix\nending in * (ci-*; * alone: every stage); a stage follows the policy named for it,\nelse the one of the longest matching prefix. A reminder reposts the card to those who\nhave not answered after D, then after twice that gap, and so on, --remind-max times\n(default 3); an escalation adds the --escalate-to people to who gets the card and may\nanswer. Durations: 90s, 30m, 2h, 1d (at most 30d).\n\nExample:\n  questions policy set --stage 'deploy-*' --to alice --remind-after 30m --remind-max 2 \\\n    --escalate-after 2h --escalate-to carol,dana\n  questions policy list\n  questions policy unset --stage 'deploy-*'"
    )]
    Policy(PolicyArgs),
    /// Print the man page (roff)
    #[command(
        after_help = "Example:\n  mkdir -p ~/.local/share/man/man1\n  questions man > ~/.local/share/man/man1/questions.1   # then: man questions"
    )]
    Man,
    /// Run as an agent harness's command hook on its own question tool (event JSON on stdin)
    #[command(
        after_help = "Logs the questions of Claude Code's AskUserQuestion into the ledger and, when every\none is already answered (or within --wait), answers the tool with them; the person's\nanswers from the harness's own card are recorded after it ran. On any error it prints\nnothing and exits 0: the harness then asks the person itself. 'questions init' writes\nthe hook entries.\n\nExample:\n  echo '{\"hook_event_name\": \"PreToolUse\", \"tool_name\": \"AskUserQuestion\", \\\n    \"tool_input\": {\"questions\": [{\"question\": \"Which database?\", \"header\": \"Database\", \\\n    \"options\": [{\"label\": \"SQLite\"}, {\"label\": \"PostgreSQL\"}]}]}}' \\\n    | questions hook claude-code --stage design"
    )]
    Hook(HookArgs),
    /// Write the MCP server entry and the hooks into an agent client's config
    #[command(
        after_help = "Writes into the project's config (at the top of the git work tree) `questions`, found on\neach machine's PATH, or into the user's with --user the native path of this binary;\n--db and --wait are carried into what it writes. Every other byte is kept (comments\nincluded), and a second run changes nothing. Files: claude-code .mcp.json and\n.claude/settings.json (hooks); codex .codex/config.toml; gemini .gemini/settings.json;\nvscode .vscode/mcp.json; cursor .cursor/mcp.json; uwf: the docs under .github/ that run\nnode …/questions.mjs, and the ledger's .gitignore.\n\nExample:\n  questions init claude-code\n  questions init codex --user --dry-run\n  questions init claude-code --wait 120\n  questions init cursor --remove"
    )]
    Init(InitArgs),
}

impl Command {
    /// The procedure its documents name.
    pub fn procedure(&self) -> Procedure {
        match self {
            Command::Log(_) => Procedure::Log,
            Command::Answer(_) => Procedure::Answer,
            Command::Skip(_) => Procedure::Skip,
            Command::List(_) => Procedure::List,
            Command::Check(_) => Procedure::Check,
            Command::Clear(_) => Procedure::Clear,
            Command::Reset(_) => Procedure::Reset,
            Command::History(_) => Procedure::History,
            Command::Ingest(_) => Procedure::Ingest,
            Command::Render(_) => Procedure::Render,
            Command::Import(_) => Procedure::Import,
            Command::Answers(_) => Procedure::Answers,
            Command::AcceptDefaults(_) => Procedure::AcceptDefaults,
            Command::Ask(_) => Procedure::Ask,
            Command::Info => Procedure::Info,
            Command::Decline(_) => Procedure::Decline,
            Command::Events(_) => Procedure::Events,
            Command::Watch(_) => Procedure::Watch,
            Command::Serve(_) => Procedure::Serve,
            Command::Login(_) => Procedure::Login,
            Command::Logout(_) => Procedure::Logout,
            Command::Approve(_) => Procedure::Approve,
            Command::Reject(_) => Procedure::Reject,
            Command::Group(_) => Procedure::Group,
            Command::People(_) => Procedure::People,
            Command::Relay(_) => Procedure::Relay,
            Command::Token(_) => Procedure::Token,
            Command::Policy(_) => Procedure::Policy,
            Command::Completions(_) => Procedure::Completions,
            Command::Man => Procedure::Man,
            Command::Mcp(_) => Procedure::Mcp,
            Command::Hook(_) => Procedure::Hook,
            Command::Init(_) => Procedure::Init,
        }
    }
}

#[derive(Debug, Args)]
pub struct HookArgs {
    /// The harness that runs the hook
    #[arg(value_enum)]
    pub harness: Harness,
    /// The stage its questions are logged under; default: the harness's name
    #[arg(
        long,
        env = "QUESTIONS_STAGE",
        allow_hyphen_values = true,
        value_parser = non_blank
    )]
    pub stage: Option<String>,
    /// Wait up to this many seconds for answers from any channel before letting the
    /// harness ask the person itself
    #[arg(long, value_name = "SECONDS", default_value_t = 0, value_parser = clap::value_parser!(u64).range(0..=86_400))]
    pub wait: u64,
}

/// The agent harnesses whose question tools `hook` answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Harness {
    ClaudeCode,
    Codex,
    Gemini,
    /// pi's `ask_user`, served by the pi package: one event a call on stdin, the tool's
    /// result (or an error) on stdout; it waits with no limit unless --wait says one
    Pi,
}

#[derive(Debug, Args)]
#[allow(
    clippy::struct_excessive_bools,
    reason = "each is a flag of its own on the command line"
)]
pub struct InitArgs {
    /// The client whose config gets the entries
    #[arg(value_enum)]
    pub client: Client,
    /// The user's config instead of the project's
    #[arg(long)]
    pub user: bool,
    /// Print what would be written, and write nothing
    #[arg(long)]
    pub dry_run: bool,
    /// Take our entries out again
    #[arg(long)]
    pub remove: bool,
    /// Carried into the hooks: how long each waits for answers from any channel
    #[arg(long, value_name = "SECONDS", value_parser = clap::value_parser!(u64).range(0..=86_400))]
    pub wait: Option<u64>,
    /// Write nothing; say whether the harness will run what init wrote (Codex: is the
    /// project trusted, is each hook reviewed), from the files the harness reads
    #[arg(long, conflicts_with_all = ["dry_run", "remove", "user"])]
    pub check: bool,
    /// A `questions serve` to reach over MCP's HTTP transport (its /mcp) instead of
    /// starting `questions mcp`: for agents that cannot start a process (https://HOST, or
    /// http:// on a loopback address)
    #[arg(long, value_name = "URL", conflicts_with_all = ["wait", "check"])]
    pub url: Option<String>,
    /// With --url: the environment variable the host reads the token from, sent as
    /// `Authorization: Bearer` (default QUESTIONS_TOKEN); the token is never written
    #[arg(long, value_name = "NAME", requires = "url")]
    pub token_env: Option<String>,
}

/// The agent clients `init` writes configs for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Client {
    ClaudeCode,
    Codex,
    Gemini,
    Vscode,
    Cursor,
    /// A uwf repository: its docs run `questions` instead of its questions.mjs
    Uwf,
    /// pi: its `ask_user` tool, backed by the ledger (the pi package, in .pi/)
    Pi,
}

#[derive(Debug, Args)]
#[allow(
    clippy::struct_excessive_bools,
    reason = "each is a flag of its own on the command line"
)]
pub struct LogArgs {
    /// The stage the question belongs to (its gate waits for it)
    #[arg(long, allow_hyphen_values = true, value_parser = non_blank)]
    pub stage: String,
    /// The question text
    #[arg(long, allow_hyphen_values = true, value_parser = non_blank)]
    pub question: String,
    /// The question's group, e.g. the artifact section it fills
    #[arg(long, allow_hyphen_values = true)]
    pub group: Option<String>,
    /// The subagent's best guess, offered to the person as the default
    #[arg(long, allow_hyphen_values = true)]
    pub proposed: Option<String>,
    /// Whether the stage's gate waits for it: true|false|yes|no|1|0 [default: true]
    #[arg(long, value_name = "BOOL", value_parser = required_flag)]
    pub required: Option<bool>,
    /// A short label for the question (ask tools show at most 12 characters)
    #[arg(long, allow_hyphen_values = true)]
    pub header: Option<String>,
    /// Background the person needs to answer
    #[arg(long, allow_hyphen_values = true)]
    pub context: Option<String>,
    /// An option the person can choose; repeat for more. "LABEL (Recommended)" marks it
    #[arg(long = "option", value_name = "LABEL", allow_hyphen_values = true)]
    pub options: Vec<String>,
    /// Options as JSON: [{"label": "…", "description": "…", "recommended": true}]
    #[arg(long, value_name = "JSON", value_parser = options_json)]
    pub options_json: Option<OptionList>,
    /// The person may choose several options
    #[arg(long)]
    pub multi_select: bool,
    /// Only the options are valid answers, no free text
    #[arg(long)]
    pub no_freeform: bool,
    /// Log a new row even if the same question is already in the ledger
    #[arg(long)]
    pub allow_duplicate: bool,
    /// Its cards reach people even inside their quiet hours (people quiet)
    #[arg(long)]
    pub urgent: bool,
    #[command(flatten)]
    pub expiry: ExpiryArgs,
    #[command(flatten)]
    pub approval: ApprovalArgs,
}

#[derive(Debug, Args)]
pub struct McpArgs {
    /// Refuse votes on approvals (the vote tool): an agent must never approve its own
    /// request. Without it, votes count as --by, $QUESTIONS_USER, else the OS user
    #[arg(long)]
    pub no_votes: bool,
    /// The inbox of a `questions serve` on this ledger, as it printed it (with its token):
    /// a client that can open a URL (URL-mode elicitation) is sent to the question's page
    /// there instead of a form
    #[arg(long, value_name = "URL", env = "QUESTIONS_INBOX_URL")]
    pub inbox_url: Option<String>,
}

// `log --approval`: a required question whose answers are votes (§12). (A plain comment:
// a doc comment would become the about of every command that flattens it.)
#[derive(Debug, Args)]
pub struct ApprovalArgs {
    /// Log an approval: only --approvers may answer it, by voting (approve / reject)
    #[arg(long, requires_all = ["approvers", "min"])]
    pub approval: bool,
    /// Who may approve: names and group:NAME, comma-separated
    #[arg(
        long,
        value_name = "NAME,…",
        requires = "approval",
        value_delimiter = ',',
        allow_hyphen_values = true
    )]
    pub approvers: Vec<String>,
    /// How many distinct approvers must approve
    #[arg(long, value_name = "N", requires = "approval", value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub min: Option<u32>,
    /// Who asked for it, who may never vote on it (default: whoever logs it)
    #[arg(long, value_name = "NAME", requires = "approval", allow_hyphen_values = true, value_parser = non_blank)]
    pub requester: Option<String>,
}

#[derive(Debug, Args)]
pub struct ApproveArgs {
    /// The approval's id
    #[arg(long, value_name = "N", allow_negative_numbers = true, value_parser = clap::value_parser!(i64).range(1..))]
    pub id: i64,
    /// A comment kept with the vote
    #[arg(long, value_name = "TEXT", allow_hyphen_values = true)]
    pub comment: Option<String>,
}

#[derive(Debug, Args)]
pub struct RejectArgs {
    /// The approval's id
    #[arg(long, value_name = "N", allow_negative_numbers = true, value_parser = clap::value_parser!(i64).range(1..))]
    pub id: i64,
    /// Why: the requester reads it in check's output
    #[arg(long, value_name = "TEXT", allow_hyphen_values = true, value_parser = non_blank)]
    pub reason: String,
}

#[derive(Debug, Args)]
pub struct GroupArgs {
    /// create, add or remove
    #[arg(value_enum)]
    pub action: GroupAction,
    /// The group's name (approvers name it as group:NAME)
    #[arg(value_name = "GROUP")]
    pub group: String,
    /// The people to add or remove (with create: its first members, if any)
    #[arg(value_name = "NAME")]
    pub names: Vec<String>,
    /// With create: who may add and remove the group's members (on PostgreSQL a role
    /// stands for its members)
    #[arg(long, value_name = "NAME,…", value_delimiter = ',')]
    pub admins: Vec<String>,
}

#[derive(Debug, Args)]
pub struct PeopleArgs {
    /// link, unlink, list, delegate, quiet, sessions, grants or revoke
    #[arg(value_enum)]
    pub action: PeopleAction,
    /// The person (with link, unlink and delegate)
    #[arg(value_name = "NAME")]
    pub name: Option<String>,
    /// The channel identity, CHANNEL:ID (with link and unlink); with delegate, 'off' ends
    /// NAME's delegation; with quiet, the daily window HH:MM-HH:MM, or 'off'
    #[arg(value_name = "CHANNEL:ID")]
    pub identity: Option<String>,
    /// With quiet: the window's time zone, as the IANA database names it (Europe/Berlin)
    #[arg(long, value_name = "ZONE")]
    pub tz: Option<String>,
    /// With delegate: who gets NAME's cards too, and answers on NAME's behalf
    #[arg(
        long,
        value_name = "OTHER",
        allow_hyphen_values = true,
        requires = "until"
    )]
    pub to: Option<String>,
    /// With delegate: until when (RFC 3339: 2026-12-24T18:00:00Z)
    #[arg(
        long,
        value_name = "INSTANT",
        allow_hyphen_values = true,
        requires = "to"
    )]
    pub until: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum PeopleAction {
    Link,
    Unlink,
    List,
    Delegate,
    Quiet,
    /// NAME's tokens and sessions, with where each came from
    Sessions,
    /// The MCP hosts NAME let in with OAuth (their grants), which revoke ends
    Grants,
    /// Ends every token and session of NAME at once
    Revoke,
}

#[derive(Debug, Args)]
#[command(args_conflicts_with_subcommands = true)]
pub struct RelayArgs {
    #[command(subcommand)]
    pub action: Option<RelayAction>,
    /// The relay's config (TOML): its channels and where their secrets are
    #[arg(long, value_name = "FILE")]
    pub config: Option<std::path::PathBuf>,
    /// Only questions of these stages
    #[arg(long, value_name = "S,…", value_delimiter = ',')]
    pub stage: Vec<String>,
}

#[derive(Debug, Subcommand)]
pub enum RelayAction {
    /// Print a one-time code (10 minutes) that links the channel account it is sent from
    Pair {
        /// telegram, slack, email or matrix
        #[arg(value_name = "CHANNEL")]
        channel: String,
        /// The person the account will be
        #[arg(value_name = "NAME")]
        name: String,
    },
}

#[derive(Debug, Args)]
pub struct LoginArgs {
    /// The server: https://HOST[:PORT] (default: --db, when it names one)
    #[arg(value_name = "URL")]
    pub server: Option<String>,
    /// Do not open a browser: only print the page's address
    #[arg(long)]
    pub no_browser: bool,
}

#[derive(Debug, Args)]
pub struct TokenArgs {
    #[command(subcommand)]
    pub action: TokenAction,
}

#[derive(Debug, Subcommand)]
pub enum TokenAction {
    /// Make a token and print its secret, this once
    Create(TokenCreateArgs),
    /// The tokens, without their secrets
    List,
    /// Revoke a token: its next request is refused
    Revoke {
        /// The token's name
        #[arg(value_name = "NAME")]
        name: String,
    },
}

#[derive(Debug, Args)]
pub struct PolicyArgs {
    #[command(subcommand)]
    pub action: PolicyAction,
}

#[derive(Debug, Subcommand)]
pub enum PolicyAction {
    /// Set a stage pattern's policy, replacing the one it had
    Set(PolicySetArgs),
    /// The policies, by pattern
    List,
    /// Remove a stage pattern's policy: its cards go to everyone who may answer, once
    Unset {
        /// The stage pattern whose policy goes
        #[arg(long, value_name = "PATTERN", allow_hyphen_values = true, value_parser = non_blank)]
        stage: String,
    },
}

#[derive(Debug, Args)]
pub struct PolicySetArgs {
    /// A stage's name, or a prefix ending in * (ci-*)
    #[arg(long, value_name = "PATTERN", allow_hyphen_values = true, value_parser = non_blank)]
    pub stage: String,
    /// Who gets the cards first (people, or group:NAME); default: every linked person who
    /// may answer
    #[arg(
        long,
        value_name = "NAME,…",
        value_delimiter = ',',
        allow_hyphen_values = true
    )]
    pub to: Vec<String>,
    /// Remind those whose card is still open this long after the question was logged,
    /// then after twice that gap, and so on: 90s, 30m, 2h, 1d
    #[arg(long, value_name = "D", allow_hyphen_values = true, value_parser = duration)]
    pub remind_after: Option<std::time::Duration>,
    /// How many reminders at most (default 3)
    #[arg(
        long,
        value_name = "N",
        requires = "remind_after",
        allow_negative_numbers = true,
        value_parser = clap::value_parser!(u32).range(1..=i64::from(questions_core::ops::REMIND_MAX_LIMIT))
    )]
    pub remind_max: Option<u32>,
    /// Escalate a question still pending this long after it was logged
    #[arg(long, value_name = "D", requires = "escalate_to", allow_hyphen_values = true, value_parser = duration)]
    pub escalate_after: Option<std::time::Duration>,
    /// Who an escalation adds to those who get the card and may answer (people, or
    /// group:NAME)
    #[arg(
        long,
        value_name = "NAME,…",
        value_delimiter = ',',
        requires = "escalate_after",
        allow_hyphen_values = true
    )]
    pub escalate_to: Vec<String>,
}

#[derive(Debug, Args)]
#[command(group(ArgGroup::new("role").args(["agent", "person"]).required(true)))]
pub struct TokenCreateArgs {
    /// The token's name: what its agent's questions name as who logged them
    #[arg(value_name = "NAME")]
    pub name: String,
    /// An agent's token: logs, reads and waits, never answers, votes or administers
    #[arg(long)]
    pub agent: bool,
    /// With --agent: only these stages (a name, or a prefix ending in *); default: all
    #[arg(
        long,
        value_name = "PATTERN,…",
        value_delimiter = ',',
        conflicts_with = "person",
        allow_hyphen_values = true
    )]
    pub stages: Vec<String>,
    /// A person's token: it acts as PERSON (answers, votes)
    #[arg(long, value_name = "PERSON", allow_hyphen_values = true)]
    pub person: Option<String>,
    /// It stops working after this long: 90s, 30m, 2h, 1d, or never; default: a person's
    /// after 90d, an agent's never
    #[arg(long, value_name = "DURATION", allow_hyphen_values = true, value_parser = expires)]
    pub expires: Option<Expires>,
}

/// `token create --expires`: a duration, or `never`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Expires {
    Never,
    After(std::time::Duration),
}

fn expires(text: &str) -> Result<Expires, String> {
    if text.trim() == "never" {
        return Ok(Expires::Never);
    }
    duration(text).map(Expires::After)
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum GroupAction {
    Create,
    Add,
    Remove,
}

#[derive(Debug, Args)]
#[command(group(ArgGroup::new("given").args(["answer", "select"]).required(true).multiple(true)))]
pub struct AnswerArgs {
    /// The question's id
    #[arg(long, value_name = "N", allow_negative_numbers = true, value_parser = clap::value_parser!(i64).range(1..))]
    pub id: i64,
    /// The answer text (it may start with '-': --answer "- React")
    #[arg(long, value_name = "TEXT", allow_hyphen_values = true)]
    pub answer: Option<String>,
    /// An option label to choose; repeat on a multi-select question
    #[arg(long, value_name = "LABEL", allow_hyphen_values = true)]
    pub select: Vec<String>,
    /// Replace an answer already on record (the earlier one stays in the history)
    #[arg(long)]
    pub force: bool,
}

#[derive(Debug, Args)]
pub struct SkipArgs {
    /// The question's id
    #[arg(long, value_name = "N", allow_negative_numbers = true, value_parser = clap::value_parser!(i64).range(1..))]
    pub id: i64,
    /// Why it is skipped
    #[arg(long, value_name = "TEXT", allow_hyphen_values = true)]
    pub reason: Option<String>,
    /// Skip even an answered question (the answer stays in the history)
    #[arg(long)]
    pub force: bool,
}

#[derive(Debug, Args)]
pub struct DeclineArgs {
    /// The question's id
    #[arg(long, value_name = "N", allow_negative_numbers = true, value_parser = clap::value_parser!(i64).range(1..))]
    pub id: i64,
    /// What is wrong with the question as asked, for the orchestrator to rephrase it by
    // A blank one is the core's `invalid_answer`, as on the web and over MCP: not refused
    // here as a usage error.
    #[arg(long, value_name = "TEXT", allow_hyphen_values = true)]
    pub reason: String,
    /// Decline even an answered question (the answer stays in the history)
    #[arg(long)]
    pub force: bool,
}

// When a question's time runs out: `log` and `ingest` take the same two flags. (A plain
// comment: a doc comment would become the about of the commands that flatten it.)
#[derive(Debug, Args)]
pub struct ExpiryArgs {
    /// The question's time runs out after this long: 90s, 30m, 2h, 1d
    #[arg(long, value_name = "DURATION", allow_hyphen_values = true, value_parser = duration)]
    pub expires_in: Option<std::time::Duration>,
    /// What happens then: keep it pending (check says so), answer it with its proposed
    /// value (default), or skip it (skip); an approval: keep or reject; recorded as
    /// channel "expiry", by nobody
    #[arg(long, value_parser = vocabulary::<OnExpiry>(), default_value = "keep", requires = "expires_in")]
    pub on_expiry: OnExpiry,
}

/// A value parser for one of the core's vocabularies: the names it accepts, lists in its
/// help and names in its errors are the core's own.
fn vocabulary<T: Vocabulary + Clone>() -> impl clap::builder::TypedValueParser<Value = T> {
    use clap::builder::TypedValueParser;
    clap::builder::PossibleValuesParser::new(T::ALL.iter().map(|v| possible(*v)))
        .map(|name| T::parse(&name).expect("one of the vocabulary's own names"))
}

fn possible<T: Vocabulary>(value: T) -> clap::builder::PossibleValue {
    clap::builder::PossibleValue::new(value.name()).help(value.help())
}

/// A format named on the command line, or none for `auto`: whichever the input holds.
#[derive(Debug, Clone, Copy)]
pub struct OrAuto<T>(pub Option<T>);

fn or_auto<T: Vocabulary + Clone>(
    auto: &'static str,
) -> impl clap::builder::TypedValueParser<Value = OrAuto<T>> {
    use clap::builder::{PossibleValue, TypedValueParser};
    let values = std::iter::once(PossibleValue::new("auto").help(auto));
    clap::builder::PossibleValuesParser::new(values.chain(T::ALL.iter().map(|v| possible(*v))))
        .map(|name| OrAuto(T::parse(&name)))
}

fn duration(text: &str) -> Result<std::time::Duration, String> {
    questions_core::clock::parse_duration(text)
}

#[derive(Debug, Args)]
pub struct EventsArgs {
    /// Only events after this position: the last event's "ledger" and "seq" as LEDGER:SEQ
    /// (another ledger's, after a reset: this one's from its first event), or a SEQ of
    /// this ledger; default: from the first
    #[arg(long, value_name = "[LEDGER:]SEQ", value_parser = since)]
    pub since: Option<Since>,
    /// Only events of this stage's questions
    #[arg(long, allow_hyphen_values = true, value_parser = non_blank)]
    pub stage: Option<String>,
    /// Keep printing new events as any process makes them
    #[arg(long)]
    pub follow: bool,
    /// With --follow: stop after this many seconds (exit 0); without it, follow until killed
    #[arg(long, value_name = "SECONDS", requires = "follow", allow_hyphen_values = true, value_parser = seconds)]
    pub timeout: Option<f64>,
}

#[derive(Debug, Args)]
#[command(group(ArgGroup::new("target").args(["exec", "webhook"]).required(true)))]
pub struct WatchArgs {
    /// The watcher's name: its position in the history is kept in the ledger under it
    #[arg(long, value_parser = non_blank)]
    pub name: String,
    /// Run this shell command for each event, the event's JSON on its standard input
    #[arg(long, value_name = "CMD", allow_hyphen_values = true)]
    pub exec: Option<String>,
    /// POST each event to this URL
    #[arg(long, value_name = "URL", value_parser = webhook_url)]
    pub webhook: Option<String>,
    /// Only these kinds of event (comma-separated: logged,answered,declined,expired,…)
    #[arg(long, value_name = "EVENT,…", value_parser = event_kinds)]
    pub on: Option<EventKinds>,
    /// Only events of this stage's questions
    #[arg(long, allow_hyphen_values = true, value_parser = non_blank)]
    pub stage: Option<String>,
    /// Only events of required questions (those that hold a gate)
    #[arg(long)]
    pub required: bool,
    /// The webhook body: the event itself, or a message shaped for Slack or ntfy
    #[arg(long, value_enum, default_value = "json")]
    pub format: WatchFormat,
    /// Sign each POST with HMAC-SHA256 under the secret in this environment variable
    /// (header X-Questions-Signature: sha256=<hex>)
    #[arg(long, value_name = "VAR")]
    pub secret_env: Option<String>,
    /// A new watcher starts with the first event in the history, not the next one
    #[arg(long)]
    pub from_start: bool,
    /// How long one POST may take before it counts as failed (and is tried again)
    #[arg(long, value_name = "SECONDS", default_value = "10", allow_hyphen_values = true, value_parser = seconds)]
    pub webhook_timeout: f64,
    /// Stop after this many seconds (exit 0); without it, watch until killed
    #[arg(long, value_name = "SECONDS", allow_hyphen_values = true, value_parser = seconds)]
    pub timeout: Option<f64>,
}

#[derive(Debug, Args)]
pub struct ServeArgs {
    /// The address and port to listen on; port 0 picks a free one
    #[arg(long, value_name = "ADDR:PORT", default_value = DEFAULT_BIND)]
    pub bind: std::net::SocketAddr,
    /// Only this stage's questions (default: every stage's)
    #[arg(long, allow_hyphen_values = true, value_parser = non_blank)]
    pub stage: Option<String>,
    /// The name answers are recorded under (default: --by, $QUESTIONS_USER, the OS user)
    #[arg(long, value_name = "NAME", allow_hyphen_values = true, value_parser = non_blank)]
    pub user: Option<String>,
    /// Allow a --bind address other than loopback: anyone who can reach it and holds the
    /// token can answer
    #[arg(long)]
    pub allow_remote: bool,
    /// People's own tokens, one "NAME TOKEN" line each (the file readable by its owner
    /// only): a request with one counts as that person, and only they may vote
    #[arg(long, value_name = "FILE")]
    pub users: Option<std::path::PathBuf>,
    /// Speak HTTPS with this certificate chain (PEM), read again when it changes
    #[arg(long, value_name = "FILE", requires = "tls_key")]
    pub tls_cert: Option<std::path::PathBuf>,
    /// The private key (PEM) of --tls-cert's certificate, read again when it changes
    #[arg(long, value_name = "FILE", requires = "tls_cert")]
    pub tls_key: Option<std::path::PathBuf>,
    /// Believe Forwarded and X-Forwarded-For/-Proto/-Host only from these addresses or
    /// ranges (CIDR, comma-separated): the proxies in front of this server
    #[arg(long, value_name = "CIDR,…")]
    pub trusted_proxy: Vec<String>,
    /// The server as its users reach it (https://questions.example.com): its host passes
    /// the Host check, and printed URLs and cookies use it
    #[arg(long, value_name = "URL")]
    pub public_url: Option<String>,
    /// One line a request on stderr: text, json, or none
    #[arg(long, value_name = "FORMAT", default_value = "text")]
    pub log_format: LogFormat,
    /// On SIGTERM, how long /readyz says 503 while requests are still served, so that
    /// a load balancer takes this server out first
    #[arg(long, value_name = "SECONDS", default_value_t = 0)]
    pub drain_seconds: u64,
    /// Serve /metrics with no token on this address alone (keep it private)
    #[arg(long, value_name = "ADDR:PORT")]
    pub metrics_bind: Option<std::net::SocketAddr>,
    /// People sign in with this OpenID provider (its issuer URL, as its discovery names it)
    #[arg(long, value_name = "URL", requires = "oidc_client_id")]
    pub oidc_issuer: Option<String>,
    /// The client id the provider gave this server
    #[arg(long, value_name = "ID", requires = "oidc_issuer")]
    pub oidc_client_id: Option<String>,
    /// The environment variable that holds the client secret (never the secret itself)
    #[arg(long, value_name = "NAME", conflicts_with = "oidc_client_secret_file")]
    pub oidc_client_secret_env: Option<String>,
    /// A file that holds the client secret
    #[arg(long, value_name = "FILE")]
    pub oidc_client_secret_file: Option<std::path::PathBuf>,
    /// Only people whose verified email is at these domains may sign in (besides being
    /// linked)
    #[arg(long, value_name = "DOMAIN,…", value_delimiter = ',')]
    pub oidc_allow_domain: Vec<String>,
    /// A browser's session ends when unused this long
    #[arg(long, value_name = "DURATION", default_value = "12h", value_parser = duration)]
    pub session_idle: std::time::Duration,
    /// A browser's session ends this long after the sign-in, used or not
    #[arg(long, value_name = "DURATION", default_value = "7d", value_parser = duration)]
    pub session_lifetime: std::time::Duration,
}

/// How `serve` writes its request log.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum LogFormat {
    // `TIME CLIENT METHOD PATH STATUS MS who=NAME role=ROLE`.
    Text,
    // One JSON object a line.
    Json,
    // No request log.
    None,
}

/// The body a webhook gets (`watch --format`; the variants' comments are not doc
/// comments, so that the short help lists the names alone).
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum WatchFormat {
    // The event itself, as `events` prints it.
    Json,
    // `{"text": …}`, as Slack's incoming webhooks take it.
    Slack,
    // A plain-text message with a title, as ntfy takes it.
    Ntfy,
}

#[derive(Debug, Clone)]
pub struct EventKinds(pub Vec<model::EventKind>);

fn event_kinds(text: &str) -> Result<EventKinds, String> {
    let mut kinds = Vec::new();
    for part in text.split(',').map(str::trim) {
        match model::EventKind::from_stored(part) {
            Some(kind) => kinds.push(kind),
            None => {
                return Err(format!(
                    "'{part}' is not an event: {}",
                    model::EventKind::names().join(", ")
                ))
            }
        }
    }
    Ok(EventKinds(kinds))
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, ValueEnum)]
pub enum ListFormat {
    /// One JSON document (the default)
    #[default]
    Json,
    /// Aligned columns for people
    Table,
    /// A Markdown table for artifacts
    Markdown,
    /// One question object a line, for jq pipelines
    Jsonl,
}

#[derive(Debug, Args)]
pub struct ListArgs {
    /// Only questions of this stage
    #[arg(long, allow_hyphen_values = true, value_parser = non_blank)]
    pub stage: Option<String>,
    #[arg(long, value_parser = vocabulary::<Status>())]
    pub status: Option<Status>,
    /// Only questions of this group
    #[arg(long, allow_hyphen_values = true)]
    pub group: Option<String>,
    #[arg(long, value_enum, default_value_t)]
    pub format: ListFormat,
}

#[derive(Debug, Args)]
#[command(group(ArgGroup::new("scope").args(["stage", "ids"]).required(true).multiple(true)))]
pub struct CheckArgs {
    /// The stage to gate
    #[arg(long, allow_hyphen_values = true, value_parser = non_blank)]
    pub stage: Option<String>,
    /// Only these question ids (comma-separated); an unknown id fails with not_found
    #[arg(long, value_name = "N,N,…", value_parser = id_list)]
    pub ids: Option<IdList>,
    /// A stage that has never held a question fails with not_found instead of passing
    #[arg(long)]
    pub strict: bool,
    /// Re-check until the gate passes; without --timeout it waits forever. A stage that
    /// has never held a question is waited for, not passed (see --allow-unknown-stage)
    #[arg(long)]
    pub wait: bool,
    /// With --wait: give up after this many seconds (exit 1, "timed_out": true)
    #[arg(long, value_name = "SECONDS", requires = "wait", allow_hyphen_values = true, value_parser = seconds)]
    pub timeout: Option<f64>,
    /// With --wait: a stage that has never held a question passes at once, instead of
    /// being waited for until its questions are logged and settled
    #[arg(long, requires = "wait", conflicts_with = "strict")]
    pub allow_unknown_stage: bool,
}

#[derive(Debug, Args)]
pub struct ClearArgs {
    /// The stage whose questions leave the live ledger
    #[arg(long, allow_hyphen_values = true, value_parser = non_blank)]
    pub stage: String,
}

#[derive(Debug, Args)]
pub struct ResetArgs {
    /// Confirm: the ledger and everything in it is deleted
    #[arg(long)]
    pub yes: bool,
}

#[derive(Debug, Args)]
#[command(group(ArgGroup::new("subject").args(["id", "stage"]).required(true)))]
pub struct HistoryArgs {
    /// Every change to this question
    #[arg(long, value_name = "N", allow_negative_numbers = true, value_parser = clap::value_parser!(i64).range(1..))]
    pub id: Option<i64>,
    /// Every change to this stage's questions
    #[arg(long, allow_hyphen_values = true, value_parser = non_blank)]
    pub stage: Option<String>,
}

#[derive(Debug, Args)]
pub struct IngestArgs {
    /// The stage the questions are logged for
    #[arg(long, allow_hyphen_values = true, value_parser = non_blank)]
    pub stage: String,
    /// The subagent's output; - or nothing for standard input
    #[arg(long, value_name = "PATH|-")]
    pub file: Option<PathBuf>,
    #[arg(long, default_value = "auto", value_parser = or_auto::<formats::Source>("Whichever envelope comes first in the input"))]
    pub format: OrAuto<formats::Source>,
    #[command(flatten)]
    pub expiry: ExpiryArgs,
    /// Every question of the envelope is an approval with this policy
    #[command(flatten)]
    pub approval: ApprovalArgs,
}

#[derive(Debug, Args)]
pub struct RenderArgs {
    /// The stage whose pending questions are rendered
    #[arg(long, allow_hyphen_values = true, value_parser = non_blank)]
    pub stage: String,
    #[arg(long, default_value = "ask-user", value_parser = vocabulary::<formats::RenderFormat>())]
    pub format: formats::RenderFormat,
    /// Only these question ids (comma-separated)
    #[arg(long, value_name = "N,N,…", value_parser = id_list)]
    pub ids: Option<IdList>,
    /// Write the rendering to this file (mode 0600) instead of standard output
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct ImportArgs {
    /// The stage whose questions the answers belong to
    #[arg(long, allow_hyphen_values = true, value_parser = non_blank)]
    pub stage: String,
    /// The tool's answers; - or nothing for standard input
    #[arg(long, value_name = "PATH|-")]
    pub file: Option<PathBuf>,
    #[arg(long, default_value = "auto", value_parser = or_auto::<ImportFormat>("Whichever format the input is in"))]
    pub format: OrAuto<ImportFormat>,
    /// Replace answers already on record (the earlier ones stay in the history)
    #[arg(long)]
    pub force: bool,
}

#[derive(Debug, Args)]
pub struct AnswersArgs {
    /// The stage whose answers are printed
    #[arg(long, allow_hyphen_values = true, value_parser = non_blank)]
    pub stage: String,
}

#[derive(Debug, Args)]
pub struct AcceptDefaultsArgs {
    /// The stage whose pending questions are answered
    #[arg(long, allow_hyphen_values = true, value_parser = non_blank)]
    pub stage: String,
    /// Answer required questions with their proposed values too
    #[arg(long)]
    pub include_required: bool,
}

#[derive(Debug, Args)]
pub struct AskArgs {
    /// The stage whose pending questions are asked
    #[arg(long, allow_hyphen_values = true, value_parser = non_blank)]
    pub stage: String,
    /// Only these question ids (comma-separated)
    #[arg(long, value_name = "N,N,…", value_parser = id_list)]
    pub ids: Option<IdList>,
}

#[derive(Debug, Args)]
pub struct CompletionsArgs {
    /// The shell to complete for
    #[arg(value_enum)]
    pub shell: clap_complete::Shell,
}

/// The contract's usage message for one of clap's errors: what is wrong, whole (clap
/// puts the flags at fault on the lines after the first), its tips, the command's usage
/// line, and where the help is.
pub fn usage_message(err: &clap::Error, procedure: Option<&str>) -> String {
    let rendered = err.render().to_string();
    let mut what: Vec<&str> = Vec::new();
    let mut tips: Vec<&str> = Vec::new();
    let mut usage: Vec<&str> = Vec::new();
    let mut in_usage = false;
    for line in rendered.lines().map(str::trim) {
        if line.is_empty() {
            in_usage = false;
        } else if let Some(rest) = line.strip_prefix("Usage:") {
            in_usage = true;
            usage.push(rest.trim());
        } else if in_usage {
            usage.push(line);
        } else if line.starts_with("tip:") {
            tips.push(line);
        } else if !line.starts_with("For more information") {
            what.push(line.trim_start_matches("error: "));
        }
    }
    let mut message = match what.split_first() {
        None => "the command line could not be read".to_string(),
        Some((first, [])) => first.to_string(),
        Some((first, rest)) => format!("{first} {}", rest.join(", ")),
    };
    for tip in tips {
        message.push_str("; ");
        message.push_str(tip);
    }
    let usage = if usage.is_empty() {
        command_usage(procedure)
    } else {
        usage.join(" ")
    };
    message.push_str("; usage: ");
    message.push_str(&usage);
    message.push_str(&match procedure {
        Some(p) => format!("; see 'questions {p} --help'"),
        None => "; see 'questions --help'".to_string(),
    });
    message
}

/// The usage line of a command (or of `questions`), for the errors clap renders without one.
fn command_usage(procedure: Option<&str>) -> String {
    use clap::CommandFactory;
    let mut top = Cli::command();
    top.build();
    let command = match procedure.and_then(|p| top.find_subcommand_mut(p)) {
        Some(sub) => sub.render_usage(),
        None => top.render_usage(),
    };
    let text = command.to_string();
    text.trim().trim_start_matches("Usage:").trim().to_string()
}

/// `--ids 7,8,9`, parsed as one value.
#[derive(Debug, Clone)]
pub struct IdList(pub Vec<i64>);

/// `events --since`: a position in the history, of the ledger it names (none: this one).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Since {
    pub ledger: Option<String>,
    pub seq: i64,
}

fn since(text: &str) -> Result<Since, String> {
    let text = text.trim();
    let (ledger, seq) = match text.rsplit_once(':') {
        Some((ledger, seq)) => (Some(ledger.trim()), seq.trim()),
        None => (None, text),
    };
    let wrong = || {
        format!(
            "'{text}' is not a position: give LEDGER:SEQ as an event's \"ledger\" and \"seq\" \
             say it, or a SEQ of this ledger (0 or more)"
        )
    };
    let seq = seq
        .parse::<i64>()
        .ok()
        .filter(|n| *n >= 0)
        .ok_or_else(wrong)?;
    if ledger.is_some_and(|l| l.is_empty() || l.contains(char::is_whitespace)) {
        return Err(wrong());
    }
    Ok(Since {
        ledger: ledger.map(str::to_string),
        seq,
    })
}

/// `--options-json`, parsed as one value.
#[derive(Debug, Clone)]
pub struct OptionList(pub Vec<QuestionOption>);

fn non_blank(text: &str) -> Result<String, String> {
    let trimmed = text.trim();
    if trimmed.is_empty() {
        Err("the value is empty".to_string())
    } else {
        Ok(trimmed.to_string())
    }
}

fn required_flag(text: &str) -> Result<bool, String> {
    model::parse_bool(text).ok_or_else(|| "expected true, false, yes, no, 1 or 0".to_string())
}

fn id_list(text: &str) -> Result<IdList, String> {
    model::parse_ids(text).map(IdList)
}

/// An http(s) URL with a host: one that cannot work is refused now, not retried forever.
fn webhook_url(text: &str) -> Result<String, String> {
    let text = text.trim();
    let rest = text
        .strip_prefix("http://")
        .or_else(|| text.strip_prefix("https://"))
        .ok_or_else(|| format!("'{text}' is not an http:// or https:// URL"))?;
    let host = rest.split(['/', '?', '#']).next().unwrap_or("");
    let host = host.rsplit('@').next().unwrap_or("");
    let (name, port) = match host.strip_prefix('[') {
        // An IPv6 address: `[::1]`, `[::1]:8080`; an unclosed bracket is no address.
        Some(v6) => {
            let Some((address, after)) = v6.split_once(']') else {
                return Err(format!(
                    "'{text}' opens an IPv6 address with [ and never closes it with ]"
                ));
            };
            if address.parse::<std::net::Ipv6Addr>().is_err() {
                return Err(format!(
                    "'{text}' holds '{address}' in brackets, which is not an IPv6 address"
                ));
            }
            if !after.is_empty() && !after.starts_with(':') {
                return Err(format!(
                    "'{text}' has '{after}' after the IPv6 address: only :PORT may follow"
                ));
            }
            (address, after.strip_prefix(':'))
        }
        None => match host.split_once(':') {
            Some((name, port)) => (name, Some(port)),
            None => (host, None),
        },
    };
    if name.is_empty() || name.contains(char::is_whitespace) {
        return Err(format!("'{text}' names no host to send events to"));
    }
    if port.is_some_and(|p| !p.is_empty() && p.parse::<u16>().is_err()) {
        return Err(format!(
            "'{text}' has a port that is not a number from 0 to 65535"
        ));
    }
    Ok(text.to_string())
}

fn seconds(text: &str) -> Result<f64, String> {
    match text.trim().parse::<f64>() {
        Ok(s) if (0.0..1e9).contains(&s) => Ok(s),
        _ => Err("expected a number of seconds, 0 or more".to_string()),
    }
}

fn options_json(text: &str) -> Result<OptionList, String> {
    #[derive(serde::Deserialize)]
    struct Raw {
        label: String,
        #[serde(default)]
        description: Option<String>,
        #[serde(default)]
        recommended: bool,
    }
    let raw: Vec<Raw> = serde_json::from_str(text).map_err(|e| {
        format!("expected a JSON array of {{\"label\", \"description\"?, \"recommended\"?}} objects ({e})")
    })?;
    Ok(OptionList(
        raw.into_iter()
            .map(|r| QuestionOption {
                label: r.label,
                description: r.description,
                recommended: r.recommended,
            })
            .collect(),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_command_has_its_name_listed() {
        use clap::CommandFactory;
        let mut defined: Vec<String> = Cli::command()
            .get_subcommands()
            .map(|c| c.get_name().to_string())
            .collect();
        let mut listed: Vec<String> = Procedure::COMMANDS
            .iter()
            .map(|p| p.as_str().to_string())
            .collect();
        defined.sort();
        listed.sort();
        assert_eq!(
            listed, defined,
            "Procedure::COMMANDS must list every command"
        );
    }
}
