-- A run's report lists the internal check's findings on the listings that run submitted
-- (feeds.repository.ts, pageOfProblems): found by the run, not by scanning the feed's offers.
CREATE INDEX "feed_offers_last_run_idx" ON "feed_offers" USING btree ("last_run_id");