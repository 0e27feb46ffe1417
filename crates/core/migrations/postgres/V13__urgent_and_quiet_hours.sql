-- Questions logged `--urgent` (§14a): see SQLite's V13.
ALTER TABLE questions ADD COLUMN IF NOT EXISTS urgent BOOLEAN;
-- A person's quiet hours (§14a): SQLite makes this table with the first `people quiet`.
CREATE TABLE IF NOT EXISTS people_quiet (
  person TEXT PRIMARY KEY,
  start TEXT NOT NULL,
  finish TEXT NOT NULL,
  tz TEXT NOT NULL,
  set_at TEXT NOT NULL
);
