-- Sign-ins (§17): see SQLite's V15. A token a sign-in made, how, and its refresh token's
-- SHA-256 (never the secret).
CREATE TABLE IF NOT EXISTS sign_ins (
  token TEXT PRIMARY KEY,
  kind TEXT NOT NULL,
  issuer TEXT NOT NULL,
  subject TEXT NOT NULL,
  idle_seconds BIGINT,
  refresh_hash TEXT UNIQUE,
  refresh_expires_at TEXT,
  family TEXT,
  client_id TEXT,
  scope TEXT
);
-- Refresh tokens spent, by family: one used again ends its family.
CREATE TABLE IF NOT EXISTS spent_refresh (
  refresh_hash TEXT PRIMARY KEY,
  family TEXT NOT NULL,
  spent_at TEXT NOT NULL
);
-- MCP hosts as OAuth clients (§17), and their authorization codes (as SHA-256).
CREATE TABLE IF NOT EXISTS oauth_clients (
  client_id TEXT PRIMARY KEY,
  name TEXT NOT NULL,
  redirect_uris TEXT NOT NULL,
  created_at TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS oauth_codes (
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
);
-- `questions login`'s device sign-ins (RFC 8628): the device code kept as its SHA-256.
CREATE TABLE IF NOT EXISTS device_sign_ins (
  device_hash TEXT PRIMARY KEY,
  user_code TEXT NOT NULL UNIQUE,
  created_at TEXT NOT NULL,
  expires_at TEXT NOT NULL,
  state TEXT NOT NULL,
  person TEXT,
  issuer TEXT,
  subject TEXT,
  polled_at TEXT
);
