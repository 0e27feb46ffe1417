-- A lean ledger. The history keeps everything it did, stored compactly:
-- * a `logged` event holds only its kind: the question as logged is its row, pending,
--   at its created_at (an empty `at` says so);
-- * a change holds only the status and answer before and after (the rest of a question
--   never changes; it is on the row, or in the `cleared` event once the row is gone);
-- * `cleared` keeps the whole row.
-- `updated_at` stays NULL until a question changes (reads fall back to created_at), and
-- one index on the trimmed stage, the text's length and its first characters serves
-- every stage query and the duplicate check, in place of three wider ones.
DROP TRIGGER IF EXISTS question_events_no_update;

UPDATE question_events
SET at = CASE
      WHEN json_valid(after) AND at = json_extract(after, '$.created_at') THEN ''
      ELSE at
    END,
    before = NULL,
    after = NULL
WHERE event = 'logged';

UPDATE question_events
SET before = CASE
      WHEN json_valid(before) THEN json_remove(before, '$.id', '$.stage', '$.group_name',
        '$.question', '$.proposed', '$.required', '$.created_at', '$.header', '$.context',
        '$.options', '$.multi_select', '$.allow_freeform', '$.source')
      ELSE before
    END,
    after = CASE
      WHEN json_valid(after) THEN json_remove(after, '$.id', '$.stage', '$.group_name',
        '$.question', '$.proposed', '$.required', '$.created_at', '$.header', '$.context',
        '$.options', '$.multi_select', '$.allow_freeform', '$.source')
      ELSE after
    END
WHERE event NOT IN ('logged', 'cleared');

CREATE TRIGGER IF NOT EXISTS question_events_no_update BEFORE UPDATE ON question_events
BEGIN
  SELECT RAISE(ABORT, 'the history is append-only');
END;

UPDATE questions SET updated_at = NULL WHERE updated_at = created_at;

DROP INDEX IF EXISTS questions_stage_status;
DROP INDEX IF EXISTS questions_stage_question;
DROP INDEX IF EXISTS question_events_stage;
CREATE INDEX IF NOT EXISTS questions_stage_text
  ON questions (trim(stage), length(question), substr(question, 1, 12));
-- Cleared questions: their rows (history puts them back together), and the stages they
-- held (a stage that was cleared is still a known stage to `check`).
CREATE INDEX IF NOT EXISTS question_events_cleared
  ON question_events (trim(stage), question_id) WHERE event = 'cleared';
