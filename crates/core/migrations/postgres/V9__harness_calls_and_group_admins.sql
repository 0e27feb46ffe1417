-- Harness calls (§11) and the admins of approval groups (§12): see SQLite's V9.
ALTER TABLE questions ADD COLUMN IF NOT EXISTS harness_call TEXT;
CREATE INDEX IF NOT EXISTS questions_harness_call ON questions (harness_call)
  WHERE harness_call IS NOT NULL;
CREATE TABLE IF NOT EXISTS approval_group_admins (
  name TEXT NOT NULL,
  admin TEXT NOT NULL,
  PRIMARY KEY (name, admin)
);
