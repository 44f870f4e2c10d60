-- A run counts the workers that took it: only a run taken before may have had offers applied
-- and not recorded, which its next worker counts by their listings (feed-import.ts). A run
-- under way as this lands may have been, so it counts as taken once already.
ALTER TABLE "feed_runs" ADD COLUMN "claims" integer DEFAULT 0 NOT NULL;--> statement-breakpoint
UPDATE "feed_runs" SET "claims" = 1 WHERE "status" = 'running';
