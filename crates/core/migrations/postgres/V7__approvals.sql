-- Approvals (§12): see SQLite's V7.
ALTER TABLE questions ADD COLUMN IF NOT EXISTS approval TEXT;
ALTER TABLE question_events ADD COLUMN IF NOT EXISTS detail TEXT;
CREATE TABLE IF NOT EXISTS approval_groups (
  name TEXT NOT NULL,
  member TEXT NOT NULL,
  PRIMARY KEY (name, member)
);
