-- Occurrences a pre_trigger hook denied: counted, with the last one and
-- the reason it was given, so a binding's record says what it skipped.
ALTER TABLE hitch_triggers ADD COLUMN skip_count BIGINT NOT NULL DEFAULT 0;
ALTER TABLE hitch_triggers ADD COLUMN last_skip TIMESTAMPTZ;
ALTER TABLE hitch_triggers ADD COLUMN skip_reason TEXT NOT NULL DEFAULT '';
