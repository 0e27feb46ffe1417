-- Who this ledger is, and an exact duplicate check whatever the texts.
-- * `ledger_identity` holds one id made when the ledger is created: a front end that
--   showed a person a question names it with its answer, so an answer never lands in
--   another ledger that took this one's place (reset, a file replaced).
-- * `text_hash` is 32 bits of SHA-256 of a question's text, written by questions: the
--   duplicate check looks a text up by it, so questions that share their length and
--   first characters (one template's) no longer make it scan. Rows written by other
--   tools (questions.mjs) leave it NULL and are looked up by that.
CREATE TABLE IF NOT EXISTS ledger_identity (
  id TEXT NOT NULL
);
INSERT INTO ledger_identity (id)
  SELECT lower(hex(randomblob(16))) WHERE NOT EXISTS (SELECT 1 FROM ledger_identity);

ALTER TABLE questions ADD COLUMN text_hash INTEGER;
DROP INDEX IF EXISTS questions_stage_text;
CREATE INDEX IF NOT EXISTS questions_stage_hash ON questions (trim(stage), text_hash);
