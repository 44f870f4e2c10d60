-- A change is timed when it takes its position, at commit, not when its transaction began
-- (now()): a long transaction that changed a listing first and committed last would otherwise
-- come later in the feed with an earlier changed_at, and the feed, oldest first, would go back
-- in time. Under the sequencer's lock, times rise with positions (clock_timestamp() is the
-- clock's, not the transaction's).
CREATE OR REPLACE FUNCTION catalogue_changes_sequence() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_advisory_xact_lock(hashtextextended('mls.catalogue_changes', 0));
  -- Only this transaction's rows can be without a position: the others' are not visible
  -- until they commit, and they commit with positions.
  UPDATE catalogue_changes SET position = nextval('catalogue_change_positions'), changed_at = clock_timestamp()
  WHERE position IS NULL;
  RETURN NULL;
END
$$;
