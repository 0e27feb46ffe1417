-- Approvals (§12): a required question whose answers are votes.
-- * `approval` holds, for an approval only, its policy (approvers, people and
--   `group:NAME`s; how many must approve; who asked) and the votes cast so far, one per
--   person, as JSON. NULL for every ordinary question: they cost one byte more.
-- * `question_events.detail` says what a vote, a refused vote, a settlement or a group
--   change was, beyond the question's state before and after.
-- * `approval_groups` holds the groups approvals name, one row per member.
ALTER TABLE questions ADD COLUMN approval TEXT;
ALTER TABLE question_events ADD COLUMN detail TEXT;
CREATE TABLE IF NOT EXISTS approval_groups (
  name TEXT NOT NULL,
  member TEXT NOT NULL,
  PRIMARY KEY (name, member)
);
