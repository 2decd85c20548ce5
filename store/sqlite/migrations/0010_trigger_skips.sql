-- Occurrences a pre_trigger hook denied: counted, with the last one and
-- the reason it was given, so a binding's record says what it skipped.
ALTER TABLE triggers ADD COLUMN skip_count INTEGER NOT NULL DEFAULT 0;
ALTER TABLE triggers ADD COLUMN last_skip INTEGER NOT NULL DEFAULT 0;
ALTER TABLE triggers ADD COLUMN skip_reason TEXT NOT NULL DEFAULT '';
