-- The table exactly as questions.mjs created it, so a ledger it wrote is already at V1
-- and keeps working with it after every later migration (they only ever add).
CREATE TABLE IF NOT EXISTS questions (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  stage TEXT NOT NULL,
  group_name TEXT,
  question TEXT NOT NULL,
  proposed TEXT,
  required INTEGER NOT NULL DEFAULT 1,
  status TEXT NOT NULL DEFAULT 'pending',
  answer TEXT,
  created_at TEXT NOT NULL,
  answered_at TEXT
);
