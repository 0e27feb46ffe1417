-- MCP tasks (§9): a wait of `questions mcp` that outlives the tool call that started it.
-- A task is a durable handle: the questions it waits for, the seq of the last event it
-- has seen, and, once every question has left pending (or its time is up), the tool's
-- result. Kept here, not in the server, so that `tasks/get` after a restart of the server
-- reports the same task. Ordinary questions are untouched.
CREATE TABLE IF NOT EXISTS mcp_tasks (
  id TEXT PRIMARY KEY,
  tool TEXT NOT NULL,
  stage TEXT,
  question_ids TEXT NOT NULL,
  template TEXT NOT NULL,
  seen BIGINT NOT NULL,
  status TEXT NOT NULL,
  result TEXT,
  deadline TEXT,
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL
);
