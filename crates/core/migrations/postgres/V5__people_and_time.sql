-- People and time, as on SQLite (see its V5); and a notification on every event, so
-- that waiting commands wake at once instead of polling.
ALTER TABLE questions ADD COLUMN IF NOT EXISTS answered_by TEXT;
ALTER TABLE questions ADD COLUMN IF NOT EXISTS channel TEXT;
ALTER TABLE questions ADD COLUMN IF NOT EXISTS expires_at TEXT;
ALTER TABLE questions ADD COLUMN IF NOT EXISTS on_expiry TEXT;
ALTER TABLE questions ADD COLUMN IF NOT EXISTS decline_reason TEXT;
CREATE INDEX IF NOT EXISTS questions_expiring
  ON questions (expires_at) WHERE expires_at IS NOT NULL;

ALTER TABLE question_events ADD COLUMN IF NOT EXISTS answered_by TEXT;
ALTER TABLE question_events ADD COLUMN IF NOT EXISTS channel TEXT;

CREATE TABLE IF NOT EXISTS watchers (
  name TEXT PRIMARY KEY,
  position BIGINT NOT NULL,
  updated_at TEXT NOT NULL
);

CREATE OR REPLACE FUNCTION question_events_notify() RETURNS trigger AS $$
BEGIN
  PERFORM pg_notify('questions_events', NEW.id::text);
  RETURN NEW;
END;
$$ LANGUAGE plpgsql;

DROP TRIGGER IF EXISTS question_events_notify ON question_events;
CREATE TRIGGER question_events_notify AFTER INSERT ON question_events
  FOR EACH ROW EXECUTE FUNCTION question_events_notify();
