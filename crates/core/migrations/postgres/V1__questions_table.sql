-- The same table as the SQLite ledger's, in PostgreSQL's types.
CREATE TABLE IF NOT EXISTS questions (
  id BIGSERIAL PRIMARY KEY,
  stage TEXT NOT NULL,
  group_name TEXT,
  question TEXT NOT NULL,
  proposed TEXT,
  required BOOLEAN NOT NULL DEFAULT TRUE,
  status TEXT NOT NULL DEFAULT 'pending',
  answer TEXT,
  created_at TEXT NOT NULL,
  answered_at TEXT
);
