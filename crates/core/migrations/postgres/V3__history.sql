-- Append-only history, as on SQLite: every change writes an event in the same
-- transaction, with the whole question before and after it (JSON text).
CREATE TABLE IF NOT EXISTS question_events (
  id BIGSERIAL PRIMARY KEY,
  at TEXT NOT NULL,
  event TEXT NOT NULL,
  question_id BIGINT NOT NULL,
  stage TEXT NOT NULL,
  before TEXT,
  after TEXT
);
CREATE INDEX IF NOT EXISTS question_events_question ON question_events (question_id);
CREATE INDEX IF NOT EXISTS question_events_stage ON question_events (stage);

CREATE OR REPLACE FUNCTION question_events_append_only() RETURNS trigger AS $$
BEGIN
  RAISE EXCEPTION 'the history is append-only';
END;
$$ LANGUAGE plpgsql;

DROP TRIGGER IF EXISTS question_events_no_change ON question_events;
CREATE TRIGGER question_events_no_change BEFORE UPDATE OR DELETE ON question_events
  FOR EACH ROW EXECUTE FUNCTION question_events_append_only();
