-- Sign-ins (§18): see SQLite's V15. A token a sign-in made, how, and its refresh token's
-- SHA-256 (never the secret).
CREATE TABLE IF NOT EXISTS sign_ins (
  token TEXT PRIMARY KEY,
  kind TEXT NOT NULL,
  issuer TEXT NOT NULL,
  subject TEXT NOT NULL,
  idle_seconds BIGINT,
  refresh_hash TEXT UNIQUE,
  refresh_expires_at TEXT
);
