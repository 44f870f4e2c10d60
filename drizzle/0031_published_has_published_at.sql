-- A published listing has the time it was published: the catalogue's and the change feed's
-- answers show it, and one without it could not be answered. Approval always sets it; a row
-- written otherwise (by hand) takes its last change's time before the check is added.
UPDATE "properties" SET "published_at" = "updated_at" WHERE "status_id" = 2 AND "published_at" IS NULL;--> statement-breakpoint
ALTER TABLE "properties" ADD CONSTRAINT "properties_published_has_published_at_check" CHECK ("properties"."status_id" <> 2 or "properties"."published_at" is not null);
