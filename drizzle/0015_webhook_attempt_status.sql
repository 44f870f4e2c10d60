-- A log entry's status is its attempt's own outcome: a failed attempt that was to be retried
-- was 'pending', and is 'failed' now; its next_attempt_at still says when the retry was due.
UPDATE "webhook_attempts" SET "status" = 'failed' WHERE "status" = 'pending';--> statement-breakpoint
ALTER TABLE "webhook_attempts" DROP CONSTRAINT "webhook_attempts_status_check";--> statement-breakpoint
ALTER TABLE "webhook_attempts" ADD CONSTRAINT "webhook_attempts_status_check" CHECK ("webhook_attempts"."status" in ('succeeded', 'failed'));
