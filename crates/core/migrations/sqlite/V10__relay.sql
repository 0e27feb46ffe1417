-- The relay (§14): people reached on the channels they use, and what was put to them.
-- * `people_links`: a channel identity (a provider id, `telegram:<from.id>`) and the person
--   it is; one person to an identity.
-- * `relay_pairings`: one-time codes (`relay pair`), stored as their SHA-256 only.
-- * `relay_deliveries`: one card put to one person on one channel, with the question's
--   fingerprint as it was then, the provider's reference to the message, and to the
--   prompt for a typed answer when the person asked for one.
-- * `relay_events`: each provider event the relay acted on, once (its unique key is what
--   makes a redelivered click change nothing).
-- * `relay_positions`: each channel's read position, advanced with what it read.
-- * `relay_leases`: which relay holds a channel, until when.
-- * `relay_keys`: the key that signs the buttons' values.
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
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  question_id INTEGER NOT NULL,
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
CREATE INDEX IF NOT EXISTS relay_deliveries_open ON relay_deliveries (channel, state);
CREATE TABLE IF NOT EXISTS relay_events (
  channel TEXT NOT NULL,
  event_id TEXT NOT NULL,
  question_id INTEGER NOT NULL,
  person TEXT,
  outcome TEXT NOT NULL,
  at TEXT NOT NULL,
  PRIMARY KEY (channel, event_id)
);
CREATE TABLE IF NOT EXISTS relay_positions (
  channel TEXT PRIMARY KEY,
  position TEXT NOT NULL,
  updated_at TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS relay_leases (
  channel TEXT PRIMARY KEY,
  holder TEXT NOT NULL,
  until TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS relay_keys (
  name TEXT PRIMARY KEY,
  secret TEXT NOT NULL
);
