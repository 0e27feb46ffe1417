-- Questions logged `--urgent` (§14a): see SQLite's V13.
ALTER TABLE questions ADD COLUMN IF NOT EXISTS urgent BOOLEAN;
