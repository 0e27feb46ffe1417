-- Who logged each question (§15): an agent token's name, a person's, or the direct
-- caller's. NULL for the questions logged before, whose logger nobody recorded.
ALTER TABLE questions ADD COLUMN logged_by TEXT;
