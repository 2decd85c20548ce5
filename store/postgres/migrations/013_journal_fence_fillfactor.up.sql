-- A journal row is written only by a statement that takes its run_seq from
-- the run's row it creates or fences in the same statement (a create, an
-- append that matched its token and position), and the journal of a run
-- is deleted before its run, under the run's lock (retention). The foreign
-- key checked what those statements already make true, at the price of a
-- lookup and a row lock on the run for every entry written.
ALTER TABLE hitch_journal DROP CONSTRAINT hitch_journal_run_seq_fkey;
-- A step updates its run's length and time, which no index covers, so the
-- update can be HOT (no index entry written) when the run's page has room
-- for the new version. Pages filled to 70% keep that room for new runs.
ALTER TABLE hitch_runs SET (fillfactor = 70);
