-- Routing policy (§14a): see SQLite's V12. The policy itself is JSON, keyed by its stage
-- pattern.
CREATE TABLE IF NOT EXISTS routing_policies (
  stage TEXT PRIMARY KEY,
  policy TEXT NOT NULL,
  set_at TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS routing_slots (
  question_id BIGINT NOT NULL,
  slot TEXT NOT NULL,
  at TEXT NOT NULL,
  PRIMARY KEY (question_id, slot)
);
CREATE TABLE IF NOT EXISTS routing_reminders (
  delivery_id BIGINT PRIMARY KEY,
  reminder BIGINT NOT NULL,
  at TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS people_delegations (
  person TEXT PRIMARY KEY,
  delegate TEXT NOT NULL,
  until TEXT NOT NULL,
  set_at TEXT NOT NULL
);
