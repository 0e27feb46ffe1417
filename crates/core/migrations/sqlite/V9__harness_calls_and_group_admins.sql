-- Harness calls (§11) and the admins of approval groups (§12).
-- * `harness_call` names the call of an agent harness's own ask tool that a question was
--   asked in (`<harness>:<session id>:<call id>`), as `questions hook` logs it: each call
--   is its own question, found again by this key and never by its text, so that no call
--   is answered from another's answer. NULL for every other question.
-- * `approval_group_admins` names who may change a group's members, one row per admin.
ALTER TABLE questions ADD COLUMN harness_call TEXT;
CREATE INDEX IF NOT EXISTS questions_harness_call ON questions (harness_call)
  WHERE harness_call IS NOT NULL;
CREATE TABLE IF NOT EXISTS approval_group_admins (
  name TEXT NOT NULL,
  admin TEXT NOT NULL,
  PRIMARY KEY (name, admin)
);
