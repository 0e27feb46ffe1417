-- People and time: who made each change and through what, when a question's time runs
-- out and what happens then, a person declining to answer as asked, and watchers'
-- positions in the history.
ALTER TABLE questions ADD COLUMN answered_by TEXT;
ALTER TABLE questions ADD COLUMN channel TEXT;
ALTER TABLE questions ADD COLUMN expires_at TEXT;
-- NULL: keep (the question stays pending).
ALTER TABLE questions ADD COLUMN on_expiry TEXT;
ALTER TABLE questions ADD COLUMN decline_reason TEXT;
-- Only questions with a deadline are in it: the others cost nothing.
CREATE INDEX IF NOT EXISTS questions_expiring
  ON questions (expires_at) WHERE expires_at IS NOT NULL;

ALTER TABLE question_events ADD COLUMN answered_by TEXT;
ALTER TABLE question_events ADD COLUMN channel TEXT;

CREATE TABLE IF NOT EXISTS watchers (
  name TEXT PRIMARY KEY,
  position INTEGER NOT NULL,
  updated_at TEXT NOT NULL
);
