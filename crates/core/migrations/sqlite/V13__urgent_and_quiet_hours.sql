-- Questions logged `--urgent` (§14a): quiet hours hold no card of theirs. NULL for every
-- other question, so a ledger where nothing is urgent keeps its rows as they were.
ALTER TABLE questions ADD COLUMN urgent INTEGER;
-- Quiet hours' table (people_quiet) is made by the first `people quiet`
-- (store/sql/routing.rs), as the other routing tables are (see V12).
