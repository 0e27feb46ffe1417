-- Structured questions (options, multi-select, free text) and provenance.
-- Every column is nullable or defaulted, so rows inserted by questions.mjs stay valid.
ALTER TABLE questions ADD COLUMN updated_at TEXT;
ALTER TABLE questions ADD COLUMN header TEXT;
ALTER TABLE questions ADD COLUMN context TEXT;
ALTER TABLE questions ADD COLUMN options TEXT NOT NULL DEFAULT '[]';
ALTER TABLE questions ADD COLUMN multi_select INTEGER NOT NULL DEFAULT 0;
ALTER TABLE questions ADD COLUMN allow_freeform INTEGER NOT NULL DEFAULT 1;
ALTER TABLE questions ADD COLUMN selected TEXT NOT NULL DEFAULT '[]';
ALTER TABLE questions ADD COLUMN was_custom INTEGER;
ALTER TABLE questions ADD COLUMN skip_reason TEXT;
ALTER TABLE questions ADD COLUMN source TEXT NOT NULL DEFAULT 'cli';

-- What check, list and log's dedup filter by.
CREATE INDEX IF NOT EXISTS questions_stage_status ON questions (stage, status);
CREATE INDEX IF NOT EXISTS questions_stage_question ON questions (stage, question);
