-- Who this ledger is, and an exact duplicate check whatever the texts (see SQLite's V6).
CREATE TABLE IF NOT EXISTS ledger_identity (
  id TEXT NOT NULL
);
INSERT INTO ledger_identity (id)
  SELECT md5(random()::text || clock_timestamp()::text)
  WHERE NOT EXISTS (SELECT 1 FROM ledger_identity);

ALTER TABLE questions ADD COLUMN IF NOT EXISTS text_hash INTEGER;
DROP INDEX IF EXISTS questions_stage_text;
CREATE INDEX IF NOT EXISTS questions_stage_hash ON questions (trim(stage), text_hash);
