-- Append-only history: every change writes an event in the same transaction,
-- with the full question before and after it (JSON), so no answer is ever lost.
CREATE TABLE IF NOT EXISTS question_events (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  at TEXT NOT NULL,
  event TEXT NOT NULL,
  question_id INTEGER NOT NULL,
  stage TEXT NOT NULL,
  before TEXT,
  after TEXT
);
CREATE INDEX IF NOT EXISTS question_events_question ON question_events (question_id);
CREATE INDEX IF NOT EXISTS question_events_stage ON question_events (stage);

CREATE TRIGGER IF NOT EXISTS question_events_no_update BEFORE UPDATE ON question_events
BEGIN
  SELECT RAISE(ABORT, 'the history is append-only');
END;
CREATE TRIGGER IF NOT EXISTS question_events_no_delete BEFORE DELETE ON question_events
BEGIN
  SELECT RAISE(ABORT, 'the history is append-only');
END;
