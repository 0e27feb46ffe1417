-- Who logged each question (§15): see SQLite's V14.
ALTER TABLE questions ADD COLUMN IF NOT EXISTS logged_by TEXT;
