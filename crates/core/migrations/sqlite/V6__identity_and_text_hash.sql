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

-- questions.mjs's `clear` deletes rows without a word to the history: keep the whole row
-- as a `cleared` event, as questions' own `clear` does (which writes its event first, so
-- this adds nothing then).
CREATE TRIGGER IF NOT EXISTS questions_keep_cleared BEFORE DELETE ON questions
WHEN NOT EXISTS (
  SELECT 1 FROM question_events WHERE question_id = old.id AND event = 'cleared'
)
BEGIN
  INSERT INTO question_events (at, event, question_id, stage, before, after)
  VALUES (
    strftime('%Y-%m-%dT%H:%M:%fZ', 'now'), 'cleared', old.id, old.stage,
    json_object(
      'id', old.id, 'stage', old.stage, 'group_name', old.group_name,
      'question', old.question, 'proposed', old.proposed,
      'required', json(CASE WHEN lower(CAST(old.required AS TEXT)) IN ('0', 'false', 'no')
                       THEN 'false' ELSE 'true' END),
      'status', coalesce(old.status, 'pending'), 'answer', CAST(old.answer AS TEXT),
      'created_at', coalesce(CAST(old.created_at AS TEXT), ''),
      'answered_at', CAST(old.answered_at AS TEXT),
      'updated_at', coalesce(CAST(coalesce(old.updated_at, old.answered_at, old.created_at) AS TEXT), ''),
      'header', old.header, 'context', old.context,
      'options', json(CASE WHEN json_valid(old.options) THEN old.options ELSE '[]' END),
      'multi_select', json(CASE WHEN lower(CAST(old.multi_select AS TEXT)) IN ('1', 'true')
                           THEN 'true' ELSE 'false' END),
      'allow_freeform', json(CASE WHEN lower(CAST(old.allow_freeform AS TEXT)) IN ('0', 'false')
                             THEN 'false' ELSE 'true' END),
      'selected', json(CASE WHEN json_valid(old.selected) THEN old.selected ELSE '[]' END),
      'was_custom', CASE WHEN old.was_custom IS NULL THEN NULL
                         WHEN lower(CAST(old.was_custom AS TEXT)) IN ('1', 'true') THEN json('true')
                         ELSE json('false') END,
      'skip_reason', old.skip_reason, 'source', coalesce(old.source, 'cli'),
      'answered_by', old.answered_by, 'channel', old.channel, 'expires_at', old.expires_at,
      'on_expiry', coalesce(old.on_expiry, 'keep'), 'decline_reason', old.decline_reason
    ),
    NULL
  );
END;
