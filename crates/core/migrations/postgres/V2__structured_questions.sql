-- Structured questions (options, multi-select, free text) and provenance; every column
-- nullable or defaulted, as on SQLite.
ALTER TABLE questions ADD COLUMN IF NOT EXISTS updated_at TEXT;
ALTER TABLE questions ADD COLUMN IF NOT EXISTS header TEXT;
ALTER TABLE questions ADD COLUMN IF NOT EXISTS context TEXT;
ALTER TABLE questions ADD COLUMN IF NOT EXISTS options TEXT NOT NULL DEFAULT '[]';
ALTER TABLE questions ADD COLUMN IF NOT EXISTS multi_select BOOLEAN NOT NULL DEFAULT FALSE;
ALTER TABLE questions ADD COLUMN IF NOT EXISTS allow_freeform BOOLEAN NOT NULL DEFAULT TRUE;
ALTER TABLE questions ADD COLUMN IF NOT EXISTS selected TEXT NOT NULL DEFAULT '[]';
ALTER TABLE questions ADD COLUMN IF NOT EXISTS was_custom BOOLEAN;
ALTER TABLE questions ADD COLUMN IF NOT EXISTS skip_reason TEXT;
ALTER TABLE questions ADD COLUMN IF NOT EXISTS source TEXT NOT NULL DEFAULT 'cli';

CREATE INDEX IF NOT EXISTS questions_stage_status ON questions (stage, status);
CREATE INDEX IF NOT EXISTS questions_stage_question ON questions (stage, question);
