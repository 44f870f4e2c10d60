CREATE TABLE "webhook_subscriptions_revision" (
	"one" boolean PRIMARY KEY DEFAULT true NOT NULL,
	"revision" bigint DEFAULT 0 NOT NULL,
	CONSTRAINT "webhook_subscriptions_revision_one_check" CHECK ("webhook_subscriptions_revision"."one")
);
--> statement-breakpoint
ALTER TABLE "webhook_deliveries" ADD COLUMN "variant" text;--> statement-breakpoint
ALTER TABLE "webhook_subscriptions" ADD COLUMN "filter" jsonb;--> statement-breakpoint
ALTER TABLE "webhook_deliveries" ADD CONSTRAINT "webhook_deliveries_variant_check" CHECK ("webhook_deliveries"."variant" in ('unmatched'));--> statement-breakpoint
INSERT INTO "webhook_subscriptions_revision" ("one", "revision") VALUES (true, 0);--> statement-breakpoint
-- Moves the revision whenever what fan-out keeps in memory of the subscriptions may have changed
-- (src/modules/webhooks/subscription-filters.ts): a subscription created or deleted, its events,
-- filter or agency updated. Not its health (failing_since, is_active): fan-out checks that
-- against the table itself, and a worker's attempts change it, which would otherwise make two
-- workers disabling subscriptions wait on each other here. Once per statement; concurrent writers
-- take turns on the one row, so the revision grows in the order the changes commit.
CREATE FUNCTION "bump_webhook_subscriptions_revision"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  UPDATE "webhook_subscriptions_revision" SET "revision" = "revision" + 1;
  RETURN NULL;
END
$$;--> statement-breakpoint
CREATE TRIGGER "webhook_subscriptions_revision_on_change" AFTER INSERT OR DELETE OR UPDATE OF "events", "filter", "tenant_id" ON "webhook_subscriptions" FOR EACH STATEMENT EXECUTE FUNCTION "bump_webhook_subscriptions_revision"();
