-- The schema the migrations make, written by the test the_stand_in_has_the_schema_of_a_migrated_ledger: do not edit.
CREATE TABLE questions (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  stage TEXT NOT NULL,
  group_name TEXT,
  question TEXT NOT NULL,
  proposed TEXT,
  required INTEGER NOT NULL DEFAULT 1,
  status TEXT NOT NULL DEFAULT 'pending',
  answer TEXT,
  created_at TEXT NOT NULL,
  answered_at TEXT
, updated_at TEXT, header TEXT, context TEXT, options TEXT NOT NULL DEFAULT '[]', multi_select INTEGER NOT NULL DEFAULT 0, allow_freeform INTEGER NOT NULL DEFAULT 1, selected TEXT NOT NULL DEFAULT '[]', was_custom INTEGER, skip_reason TEXT, source TEXT NOT NULL DEFAULT 'cli', answered_by TEXT, channel TEXT, expires_at TEXT, on_expiry TEXT, decline_reason TEXT, text_hash INTEGER, approval TEXT, harness_call TEXT, urgent INTEGER, logged_by TEXT);
CREATE TABLE question_events (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  at TEXT NOT NULL,
  event TEXT NOT NULL,
  question_id INTEGER NOT NULL,
  stage TEXT NOT NULL,
  before TEXT,
  after TEXT
, answered_by TEXT, channel TEXT, detail TEXT);
CREATE INDEX question_events_question ON question_events (question_id);
CREATE TRIGGER question_events_no_delete BEFORE DELETE ON question_events
BEGIN
  SELECT RAISE(ABORT, 'the history is append-only');
END;
CREATE TRIGGER question_events_no_update BEFORE UPDATE ON question_events
BEGIN
  SELECT RAISE(ABORT, 'the history is append-only');
END;
CREATE INDEX question_events_cleared
  ON question_events (trim(stage), question_id) WHERE event = 'cleared';
CREATE INDEX questions_expiring
  ON questions (expires_at) WHERE expires_at IS NOT NULL;
CREATE TABLE watchers (
  name TEXT PRIMARY KEY,
  position INTEGER NOT NULL,
  updated_at TEXT NOT NULL
);
CREATE TABLE ledger_identity (
  id TEXT NOT NULL
);
CREATE INDEX questions_stage_hash ON questions (trim(stage), text_hash);
CREATE TRIGGER questions_keep_cleared BEFORE DELETE ON questions
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
CREATE TABLE approval_groups (
  name TEXT NOT NULL,
  member TEXT NOT NULL,
  PRIMARY KEY (name, member)
);
CREATE TABLE mcp_tasks (
  id TEXT PRIMARY KEY,
  tool TEXT NOT NULL,
  stage TEXT,
  question_ids TEXT NOT NULL,
  template TEXT NOT NULL,
  seen INTEGER NOT NULL,
  status TEXT NOT NULL,
  result TEXT,
  deadline TEXT,
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL
);
CREATE INDEX questions_harness_call ON questions (harness_call)
  WHERE harness_call IS NOT NULL;
CREATE TABLE approval_group_admins (
  name TEXT NOT NULL,
  admin TEXT NOT NULL,
  PRIMARY KEY (name, admin)
);
