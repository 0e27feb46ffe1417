-- The relay (§14): see SQLite's V10.
CREATE TABLE IF NOT EXISTS people_links (
  identity TEXT PRIMARY KEY,
  person TEXT NOT NULL,
  linked_at TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS relay_pairings (
  code_hash TEXT PRIMARY KEY,
  channel TEXT NOT NULL,
  person TEXT NOT NULL,
  expires_at TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS relay_deliveries (
  id BIGSERIAL PRIMARY KEY,
  question_id BIGINT NOT NULL,
  fingerprint TEXT NOT NULL,
  person TEXT NOT NULL,
  channel TEXT NOT NULL,
  identity TEXT NOT NULL,
  message_ref TEXT,
  prompt_ref TEXT,
  state TEXT NOT NULL,
  created_at TEXT NOT NULL,
  closed_at TEXT,
  UNIQUE (channel, identity, question_id, fingerprint)
);
CREATE TABLE IF NOT EXISTS relay_events (
  channel TEXT NOT NULL,
  event_id TEXT NOT NULL,
  question_id BIGINT NOT NULL,
  person TEXT,
  outcome TEXT NOT NULL,
  at TEXT NOT NULL,
  PRIMARY KEY (channel, event_id)
);
CREATE TABLE IF NOT EXISTS relay_state (
  name TEXT PRIMARY KEY,
  value TEXT NOT NULL,
  until TEXT,
  at TEXT NOT NULL
);
