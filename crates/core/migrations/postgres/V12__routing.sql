-- Routing policy (§14a): see SQLite's V12. The policy itself is JSON, keyed by its stage
-- pattern.
CREATE TABLE IF NOT EXISTS routing_policies (
  stage TEXT PRIMARY KEY,
  policy TEXT NOT NULL,
  set_at TEXT NOT NULL
);
