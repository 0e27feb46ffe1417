//! The ledger's tokens (§15): who may call it over HTTPS, and as what. A token's secret is
//! never stored, only its SHA-256 (`secret_hash`); only `ops::token` calls these, inside
//! its own transactions.

use serde::Serialize;

use super::{to_json, Param, Row, Tx};
use crate::error::Result;
use crate::model::{Actor, EventKind};

/// What a token's holder is to the ledger.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, strum::IntoStaticStr, strum::EnumString)]
#[serde(rename_all = "lowercase")]
#[strum(serialize_all = "lowercase")]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub enum TokenRole {
    /// Logs, reads and waits within its stages; never answers, votes or administers.
    Agent,
    /// Acts as its person.
    Person,
}

impl TokenRole {
    pub fn as_str(self) -> &'static str {
        self.into()
    }
}

/// A token as the ledger keeps it, without its secret.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct StoredToken {
    pub name: String,
    pub role: TokenRole,
    /// An agent's stage patterns (a name, or a prefix ending in `*`); empty: every stage.
    pub stages: Vec<String>,
    /// A person token's person.
    pub person: Option<String>,
    pub created_at: String,
    pub expires_at: Option<String>,
    pub last_used_at: Option<String>,
}

const COLUMNS: &[&str] = &[
    "name",
    "role",
    "stages",
    "person",
    "created_at",
    "expires_at",
    "last_used_at",
];

/// The tokens' table in SQLite, made by the first `token create` rather than by a
/// migration, as the relay's are (see `relay::SQLITE_TABLES`): SQLite parses every table
/// of the schema each time a command opens the ledger. PostgreSQL makes it in V11.
const SQLITE_TABLE: &str = "CREATE TABLE IF NOT EXISTS api_tokens (
  name TEXT PRIMARY KEY,
  role TEXT NOT NULL,
  stages TEXT NOT NULL,
  person TEXT,
  secret_hash TEXT NOT NULL UNIQUE,
  created_at TEXT NOT NULL,
  expires_at TEXT,
  last_used_at TEXT
) WITHOUT ROWID";

impl Tx<'_> {
    /// Whether the ledger has the tokens' table; with `make`, in a write, makes it when
    /// it has not.
    fn token_table(&self, make: bool) -> Result<bool> {
        self.lazy_tables("api_tokens", &[SQLITE_TABLE], make)
    }

    fn tokens_where(&self, clause: &str, params: &[Param]) -> Result<Vec<StoredToken>> {
        if !self.token_table(false)? {
            return Ok(Vec::new());
        }
        let rows = self.conn.query(
            &format!("SELECT {} FROM api_tokens {clause}", COLUMNS.join(", ")),
            params,
        )?;
        rows.each(
            |r| {
                let role = r.text("role").unwrap_or_default();
                Ok(StoredToken {
                    name: r.text("name").unwrap_or_default(),
                    // A role this build does not know is read as the lesser one.
                    role: role.parse().unwrap_or(TokenRole::Agent),
                    stages: r.take("stages").json(),
                    person: r.text("person"),
                    created_at: r.text("created_at").unwrap_or_default(),
                    expires_at: r.text("expires_at"),
                    last_used_at: r.text("last_used_at"),
                })
            },
            COLUMNS,
        )
    }

    /// Every token, by name.
    pub(crate) fn tokens(&self) -> Result<Vec<StoredToken>> {
        self.tokens_where("ORDER BY name", &[])
    }

    pub(crate) fn token(&self, name: &str) -> Result<Option<StoredToken>> {
        Ok(self.tokens_where("WHERE name = $1", &[name.into()])?.pop())
    }

    /// The token whose secret hashes to `hash`.
    pub(crate) fn token_by_hash(&self, hash: &str) -> Result<Option<StoredToken>> {
        Ok(self
            .tokens_where("WHERE secret_hash = $1", &[hash.into()])?
            .pop())
    }

    pub(crate) fn insert_token(&self, token: &StoredToken, hash: &str) -> Result<()> {
        self.token_table(true)?;
        let stages = to_json(&token.stages)?;
        self.conn.execute(
            "INSERT INTO api_tokens \
             (name, role, stages, person, secret_hash, created_at, expires_at, last_used_at) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, NULL)",
            &[
                token.name.as_str().into(),
                token.role.as_str().into(),
                stages.as_str().into(),
                (&token.person).into(),
                hash.into(),
                token.created_at.as_str().into(),
                (&token.expires_at).into(),
            ],
        )?;
        Ok(())
    }

    /// Removes a token; false when there was none.
    pub(crate) fn delete_token(&self, name: &str) -> Result<bool> {
        if !self.token_table(false)? {
            return Ok(false);
        }
        Ok(self
            .conn
            .execute("DELETE FROM api_tokens WHERE name = $1", &[name.into()])?
            > 0)
    }

    pub(crate) fn token_used(&self, name: &str, at: &str) -> Result<()> {
        self.conn.execute(
            "UPDATE api_tokens SET last_used_at = $2 WHERE name = $1",
            &[name.into(), at.into()],
        )?;
        Ok(())
    }

    /// Records a token made or revoked, as a `token` event of no question.
    pub(crate) fn token_event(&self, actor: &Actor, detail: &serde_json::Value) -> Result<()> {
        self.insert_event(&Row {
            kind: EventKind::Token,
            at: &actor.at,
            question_id: 0,
            stage: None,
            by: actor.by.as_deref(),
            channel: Some(actor.channel),
            before: None,
            after: None,
            detail: Some(to_json(detail)?),
        })
    }
}

/// A token a sign-in made (§17): how the person signed in, and the rules it keeps
/// beyond its expiry (a browser session's idle time; a login's refresh token).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct StoredSignIn {
    /// The token's name (`api_tokens.name`).
    pub token: String,
    /// `web` (a browser's session) or `login` (`questions login`).
    pub kind: String,
    /// The OpenID provider, and the person's id there.
    pub issuer: String,
    pub subject: String,
    /// A session unused this long is over.
    pub idle_seconds: Option<i64>,
    /// Until when its refresh token may make a new one.
    pub refresh_expires_at: Option<String>,
    /// The tokens one sign-in's refresh tokens made, one after another: a refresh token
    /// used twice ends all of them.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub family: Option<String>,
    /// An MCP host's OAuth grant: the client, and what it may do.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub client_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub scope: Option<String>,
}

const SIGN_IN_COLUMNS: &[&str] = &[
    "token",
    "kind",
    "issuer",
    "subject",
    "idle_seconds",
    "refresh_expires_at",
    "family",
    "client_id",
    "scope",
];

/// The sign-ins' table in SQLite, made by the first sign-in (PostgreSQL makes it in V15).
const SQLITE_SIGN_IN_TABLE: &str = "CREATE TABLE IF NOT EXISTS sign_ins (
  token TEXT PRIMARY KEY,
  kind TEXT NOT NULL,
  issuer TEXT NOT NULL,
  subject TEXT NOT NULL,
  idle_seconds INTEGER,
  refresh_hash TEXT UNIQUE,
  refresh_expires_at TEXT,
  family TEXT,
  client_id TEXT,
  scope TEXT
) WITHOUT ROWID";

/// Refresh tokens already spent, by family: one seen again ends its family (RFC 9700).
const SQLITE_SPENT_TABLE: &str = "CREATE TABLE IF NOT EXISTS spent_refresh (
  refresh_hash TEXT PRIMARY KEY,
  family TEXT NOT NULL,
  spent_at TEXT NOT NULL
) WITHOUT ROWID";

/// MCP hosts registered as OAuth clients (RFC 7591), and their codes under way.
const SQLITE_OAUTH_TABLES: &[&str] = &[
    "CREATE TABLE IF NOT EXISTS oauth_clients (
  client_id TEXT PRIMARY KEY,
  name TEXT NOT NULL,
  redirect_uris TEXT NOT NULL,
  created_at TEXT NOT NULL
) WITHOUT ROWID",
    "CREATE TABLE IF NOT EXISTS oauth_codes (
  code_hash TEXT PRIMARY KEY,
  client_id TEXT NOT NULL,
  redirect_uri TEXT NOT NULL,
  challenge TEXT NOT NULL,
  person TEXT NOT NULL,
  issuer TEXT NOT NULL,
  subject TEXT NOT NULL,
  scope TEXT NOT NULL,
  expires_at TEXT NOT NULL,
  used INTEGER NOT NULL
) WITHOUT ROWID",
];

/// A registered client.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct StoredClient {
    pub client_id: String,
    pub name: String,
    pub redirect_uris: Vec<String>,
}

/// An authorization code under way.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct StoredCode {
    pub client_id: String,
    pub redirect_uri: String,
    pub challenge: String,
    pub person: String,
    pub issuer: String,
    pub subject: String,
    pub scope: String,
    pub expires_at: String,
    pub used: bool,
}

impl Tx<'_> {
    fn sign_in_table(&self, make: bool) -> Result<bool> {
        self.lazy_tables("sign_ins", &[SQLITE_SIGN_IN_TABLE], make)
    }

    fn sign_ins_where(&self, clause: &str, params: &[Param]) -> Result<Vec<StoredSignIn>> {
        if !self.sign_in_table(false)? {
            return Ok(Vec::new());
        }
        let rows = self.conn.query(
            &format!(
                "SELECT {} FROM sign_ins {clause}",
                SIGN_IN_COLUMNS.join(", ")
            ),
            params,
        )?;
        rows.each(
            |r| {
                Ok(StoredSignIn {
                    token: r.text("token").unwrap_or_default(),
                    kind: r.text("kind").unwrap_or_default(),
                    issuer: r.text("issuer").unwrap_or_default(),
                    subject: r.text("subject").unwrap_or_default(),
                    idle_seconds: r.text("idle_seconds").and_then(|t| t.parse().ok()),
                    refresh_expires_at: r.text("refresh_expires_at"),
                    family: r.text("family"),
                    client_id: r.text("client_id"),
                    scope: r.text("scope"),
                })
            },
            SIGN_IN_COLUMNS,
        )
    }

    /// The sign-in that made the token `name`, if one did.
    pub(crate) fn sign_in(&self, name: &str) -> Result<Option<StoredSignIn>> {
        Ok(self
            .sign_ins_where("WHERE token = $1", &[name.into()])?
            .pop())
    }

    /// Every sign-in's record.
    pub(crate) fn sign_ins(&self) -> Result<Vec<StoredSignIn>> {
        self.sign_ins_where("ORDER BY token", &[])
    }

    /// The sign-in whose refresh token hashes to `hash`.
    pub(crate) fn sign_in_by_refresh(&self, hash: &str) -> Result<Option<StoredSignIn>> {
        Ok(self
            .sign_ins_where("WHERE refresh_hash = $1", &[hash.into()])?
            .pop())
    }

    pub(crate) fn insert_sign_in(
        &self,
        s: &StoredSignIn,
        refresh_hash: Option<&str>,
    ) -> Result<()> {
        self.sign_in_table(true)?;
        self.conn.execute(
            "INSERT INTO sign_ins \
             (token, kind, issuer, subject, idle_seconds, refresh_hash, refresh_expires_at, \
              family, client_id, scope) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)",
            &[
                s.token.as_str().into(),
                s.kind.as_str().into(),
                s.issuer.as_str().into(),
                s.subject.as_str().into(),
                Param::Int(s.idle_seconds),
                refresh_hash.into(),
                (&s.refresh_expires_at).into(),
                (&s.family).into(),
                (&s.client_id).into(),
                (&s.scope).into(),
            ],
        )?;
        Ok(())
    }

    pub(crate) fn delete_sign_in(&self, token: &str) -> Result<()> {
        if self.sign_in_table(false)? {
            self.conn
                .execute("DELETE FROM sign_ins WHERE token = $1", &[token.into()])?;
        }
        Ok(())
    }
}

/// A device's sign-in under way (`questions login`, RFC 8628): what the person approves in
/// a browser, by its short code, and the command line collects by its long one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct StoredDevice {
    pub user_code: String,
    pub created_at: String,
    pub expires_at: String,
    /// `pending`, `approved`, `denied` or `spent`.
    pub state: String,
    pub person: Option<String>,
    pub issuer: Option<String>,
    pub subject: Option<String>,
    pub polled_at: Option<String>,
}

const DEVICE_COLUMNS: &[&str] = &[
    "user_code",
    "created_at",
    "expires_at",
    "state",
    "person",
    "issuer",
    "subject",
    "polled_at",
];

/// The device sign-ins' table in SQLite, made by the first `questions login` (PostgreSQL
/// makes it in V15). The device code is kept as its SHA-256.
const SQLITE_DEVICE_TABLE: &str = "CREATE TABLE IF NOT EXISTS device_sign_ins (
  device_hash TEXT PRIMARY KEY,
  user_code TEXT NOT NULL UNIQUE,
  created_at TEXT NOT NULL,
  expires_at TEXT NOT NULL,
  state TEXT NOT NULL,
  person TEXT,
  issuer TEXT,
  subject TEXT,
  polled_at TEXT
) WITHOUT ROWID";

impl Tx<'_> {
    fn device_table(&self, make: bool) -> Result<bool> {
        self.lazy_tables("device_sign_ins", &[SQLITE_DEVICE_TABLE], make)
    }

    fn devices_where(&self, clause: &str, params: &[Param]) -> Result<Vec<(String, StoredDevice)>> {
        if !self.device_table(false)? {
            return Ok(Vec::new());
        }
        let rows = self.conn.query(
            &format!(
                "SELECT device_hash, {} FROM device_sign_ins {clause}",
                DEVICE_COLUMNS.join(", ")
            ),
            params,
        )?;
        let mut names = vec!["device_hash"];
        names.extend_from_slice(DEVICE_COLUMNS);
        rows.each(
            |r| {
                Ok((
                    r.text("device_hash").unwrap_or_default(),
                    StoredDevice {
                        user_code: r.text("user_code").unwrap_or_default(),
                        created_at: r.text("created_at").unwrap_or_default(),
                        expires_at: r.text("expires_at").unwrap_or_default(),
                        state: r.text("state").unwrap_or_default(),
                        person: r.text("person"),
                        issuer: r.text("issuer"),
                        subject: r.text("subject"),
                        polled_at: r.text("polled_at"),
                    },
                ))
            },
            &names,
        )
    }

    pub(crate) fn device_by_hash(&self, hash: &str) -> Result<Option<StoredDevice>> {
        Ok(self
            .devices_where("WHERE device_hash = $1", &[hash.into()])?
            .pop()
            .map(|(_, d)| d))
    }

    /// The device sign-in of a user code, and its device code's hash.
    pub(crate) fn device_by_code(&self, user_code: &str) -> Result<Option<(String, StoredDevice)>> {
        Ok(self
            .devices_where("WHERE user_code = $1", &[user_code.into()])?
            .pop())
    }

    pub(crate) fn insert_device(&self, hash: &str, d: &StoredDevice) -> Result<()> {
        self.device_table(true)?;
        // Those whose time is up go as new ones come.
        self.conn.execute(
            "DELETE FROM device_sign_ins WHERE expires_at <= $1",
            &[d.created_at.as_str().into()],
        )?;
        self.conn.execute(
            "INSERT INTO device_sign_ins \
             (device_hash, user_code, created_at, expires_at, state, person, issuer, subject, \
              polled_at) VALUES ($1, $2, $3, $4, $5, NULL, NULL, NULL, NULL)",
            &[
                hash.into(),
                d.user_code.as_str().into(),
                d.created_at.as_str().into(),
                d.expires_at.as_str().into(),
                d.state.as_str().into(),
            ],
        )?;
        Ok(())
    }

    pub(crate) fn set_device(&self, hash: &str, d: &StoredDevice) -> Result<()> {
        self.conn.execute(
            "UPDATE device_sign_ins SET state = $2, person = $3, issuer = $4, subject = $5, \
             polled_at = $6 WHERE device_hash = $1",
            &[
                hash.into(),
                d.state.as_str().into(),
                (&d.person).into(),
                (&d.issuer).into(),
                (&d.subject).into(),
                (&d.polled_at).into(),
            ],
        )?;
        Ok(())
    }
}

impl Tx<'_> {
    fn spent_table(&self, make: bool) -> Result<bool> {
        self.lazy_tables("spent_refresh", &[SQLITE_SPENT_TABLE], make)
    }

    fn oauth_tables(&self, make: bool) -> Result<bool> {
        self.lazy_tables("oauth_clients", SQLITE_OAUTH_TABLES, make)
    }

    /// Records a refresh token spent (its hash), of `family`.
    pub(crate) fn spend_refresh(&self, hash: &str, family: &str, at: &str) -> Result<()> {
        self.spent_table(true)?;
        self.conn.execute(
            "INSERT INTO spent_refresh (refresh_hash, family, spent_at) VALUES ($1, $2, $3)",
            &[hash.into(), family.into(), at.into()],
        )?;
        Ok(())
    }

    /// The family of a refresh token already spent.
    pub(crate) fn spent_family(&self, hash: &str) -> Result<Option<String>> {
        if !self.spent_table(false)? {
            return Ok(None);
        }
        let rows = self.conn.query(
            "SELECT family FROM spent_refresh WHERE refresh_hash = $1",
            &[hash.into()],
        )?;
        Ok(rows
            .each(|r| Ok(r.text("family").unwrap_or_default()), &["family"])?
            .pop())
    }

    pub(crate) fn insert_client(&self, c: &StoredClient, at: &str) -> Result<()> {
        self.oauth_tables(true)?;
        let uris = to_json(&c.redirect_uris)?;
        self.conn.execute(
            "INSERT INTO oauth_clients (client_id, name, redirect_uris, created_at) \
             VALUES ($1, $2, $3, $4)",
            &[
                c.client_id.as_str().into(),
                c.name.as_str().into(),
                uris.as_str().into(),
                at.into(),
            ],
        )?;
        Ok(())
    }

    pub(crate) fn client(&self, client_id: &str) -> Result<Option<StoredClient>> {
        if !self.oauth_tables(false)? {
            return Ok(None);
        }
        let rows = self.conn.query(
            "SELECT client_id, name, redirect_uris FROM oauth_clients WHERE client_id = $1",
            &[client_id.into()],
        )?;
        Ok(rows
            .each(
                |r| {
                    Ok(StoredClient {
                        client_id: r.text("client_id").unwrap_or_default(),
                        name: r.text("name").unwrap_or_default(),
                        redirect_uris: r.take("redirect_uris").json(),
                    })
                },
                &["client_id", "name", "redirect_uris"],
            )?
            .pop())
    }

    pub(crate) fn insert_code(&self, hash: &str, c: &StoredCode) -> Result<()> {
        self.oauth_tables(true)?;
        self.conn.execute(
            "INSERT INTO oauth_codes (code_hash, client_id, redirect_uri, challenge, person, \
             issuer, subject, scope, expires_at, used) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)",
            &[
                hash.into(),
                c.client_id.as_str().into(),
                c.redirect_uri.as_str().into(),
                c.challenge.as_str().into(),
                c.person.as_str().into(),
                c.issuer.as_str().into(),
                c.subject.as_str().into(),
                c.scope.as_str().into(),
                c.expires_at.as_str().into(),
                Param::Int(Some(i64::from(c.used))),
            ],
        )?;
        Ok(())
    }

    pub(crate) fn code(&self, hash: &str) -> Result<Option<StoredCode>> {
        if !self.oauth_tables(false)? {
            return Ok(None);
        }
        const COLS: &[&str] = &[
            "client_id",
            "redirect_uri",
            "challenge",
            "person",
            "issuer",
            "subject",
            "scope",
            "expires_at",
            "used",
        ];
        let rows = self.conn.query(
            &format!(
                "SELECT {} FROM oauth_codes WHERE code_hash = $1",
                COLS.join(", ")
            ),
            &[hash.into()],
        )?;
        Ok(rows
            .each(
                |r| {
                    Ok(StoredCode {
                        client_id: r.text("client_id").unwrap_or_default(),
                        redirect_uri: r.text("redirect_uri").unwrap_or_default(),
                        challenge: r.text("challenge").unwrap_or_default(),
                        person: r.text("person").unwrap_or_default(),
                        issuer: r.text("issuer").unwrap_or_default(),
                        subject: r.text("subject").unwrap_or_default(),
                        scope: r.text("scope").unwrap_or_default(),
                        expires_at: r.text("expires_at").unwrap_or_default(),
                        used: r.text("used").is_some_and(|u| u != "0"),
                    })
                },
                COLS,
            )?
            .pop())
    }

    pub(crate) fn use_code(&self, hash: &str) -> Result<()> {
        self.conn.execute(
            "UPDATE oauth_codes SET used = 1 WHERE code_hash = $1",
            &[hash.into()],
        )?;
        Ok(())
    }
}
