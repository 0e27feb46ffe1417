-- A lean ledger, as on SQLite (see its V4): `logged` events hold only their kind, a
-- change holds the status and answer before and after, `cleared` keeps the whole row;
-- `updated_at` stays NULL until a question changes; one index on the trimmed stage, the
-- text's length and its first characters serves every stage query and the duplicate check.
DROP TRIGGER IF EXISTS question_events_no_change ON question_events;

UPDATE question_events
SET at = CASE WHEN at = (after::jsonb ->> 'created_at') THEN '' ELSE at END,
    before = NULL,
    after = NULL
WHERE event = 'logged';

UPDATE question_events
SET before = (before::jsonb - ARRAY['id', 'stage', 'group_name', 'question', 'proposed',
      'required', 'created_at', 'header', 'context', 'options', 'multi_select',
      'allow_freeform', 'source'])::text,
    after = (after::jsonb - ARRAY['id', 'stage', 'group_name', 'question', 'proposed',
      'required', 'created_at', 'header', 'context', 'options', 'multi_select',
      'allow_freeform', 'source'])::text
WHERE event NOT IN ('logged', 'cleared');

CREATE TRIGGER question_events_no_change BEFORE UPDATE OR DELETE ON question_events
  FOR EACH ROW EXECUTE FUNCTION question_events_append_only();

UPDATE questions SET updated_at = NULL WHERE updated_at = created_at;

DROP INDEX IF EXISTS questions_stage_status;
DROP INDEX IF EXISTS questions_stage_question;
DROP INDEX IF EXISTS question_events_stage;
CREATE INDEX IF NOT EXISTS questions_stage_text
  ON questions ((trim(stage)), (length(question)), (substr(question, 1, 12)));
-- Cleared questions: their rows (history puts them back together), and the stages they
-- held (a stage that was cleared is still a known stage to `check`).
CREATE INDEX IF NOT EXISTS question_events_cleared
  ON question_events ((trim(stage)), question_id) WHERE event = 'cleared';
