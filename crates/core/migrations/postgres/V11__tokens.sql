-- The ledger's tokens (§15): see SQLite's V11. The secret is never stored: its SHA-256.
CREATE TABLE IF NOT EXISTS api_tokens (
  name TEXT PRIMARY KEY,
  role TEXT NOT NULL,
  stages TEXT NOT NULL,
  person TEXT,
  secret_hash TEXT NOT NULL UNIQUE,
  created_at TEXT NOT NULL,
  expires_at TEXT,
  last_used_at TEXT
);
