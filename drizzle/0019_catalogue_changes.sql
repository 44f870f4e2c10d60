CREATE TABLE "catalogue_change_horizon" (
	"id" smallint PRIMARY KEY DEFAULT 1 NOT NULL,
	"pruned_through" bigint DEFAULT 0 NOT NULL,
	CONSTRAINT "catalogue_change_horizon_one_row_check" CHECK ("catalogue_change_horizon"."id" = 1)
);
--> statement-breakpoint
CREATE TABLE "catalogue_changes" (
	"listing_id" integer PRIMARY KEY NOT NULL,
	"position" bigint,
	"op" text NOT NULL,
	"reason" text,
	"changed_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "catalogue_changes_op_check" CHECK ("catalogue_changes"."op" in ('upsert', 'remove')),
	CONSTRAINT "catalogue_changes_reason_check" CHECK (("catalogue_changes"."op" = 'remove') = ("catalogue_changes"."reason" is not null))
);
--> statement-breakpoint
CREATE TABLE "property_revisions" (
	"property_id" integer PRIMARY KEY NOT NULL,
	"tenant_id" integer NOT NULL,
	"status" text DEFAULT 'pending_review' NOT NULL,
	"fields" jsonb NOT NULL,
	"moderation" jsonb,
	"submitted_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "property_revisions_status_check" CHECK ("property_revisions"."status" in ('pending_review', 'rejected'))
);
--> statement-breakpoint
ALTER TABLE "property_revisions" ADD CONSTRAINT "property_revisions_property_id_properties_id_fk" FOREIGN KEY ("property_id") REFERENCES "public"."properties"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "property_revisions" ADD CONSTRAINT "property_revisions_tenant_id_tenants_id_fk" FOREIGN KEY ("tenant_id") REFERENCES "public"."tenants"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE UNIQUE INDEX "catalogue_changes_position_key" ON "catalogue_changes" USING btree ("position");--> statement-breakpoint
CREATE INDEX "catalogue_changes_unsequenced_idx" ON "catalogue_changes" USING btree ("listing_id") WHERE "catalogue_changes"."position" is null;--> statement-breakpoint
CREATE INDEX "catalogue_changes_removed_idx" ON "catalogue_changes" USING btree ("changed_at") WHERE "catalogue_changes"."op" = 'remove';--> statement-breakpoint
INSERT INTO "catalogue_change_horizon" ("id", "pruned_through") VALUES (1, 0);--> statement-breakpoint
CREATE SEQUENCE "catalogue_change_positions" AS bigint;--> statement-breakpoint
-- Every listing in the catalogue starts the feed with its publication.
INSERT INTO "catalogue_changes" ("listing_id", "position", "op", "reason", "changed_at")
SELECT "id", nextval('catalogue_change_positions'), 'upsert', NULL, coalesce("published_at", "updated_at")
FROM (SELECT "id", "published_at", "updated_at" FROM "properties" WHERE "status_id" = 2 ORDER BY "published_at", "id") AS "published";--> statement-breakpoint
-- Moves a listing to the end of the feed, without a position until its transaction commits.
CREATE FUNCTION catalogue_change_record(listing integer, change_op text, change_reason text) RETURNS void LANGUAGE sql AS $$
  INSERT INTO catalogue_changes (listing_id, position, op, reason, changed_at)
  VALUES (listing, NULL, change_op, change_reason, now())
  ON CONFLICT (listing_id) DO UPDATE SET position = NULL, op = excluded.op, reason = excluded.reason, changed_at = excluded.changed_at
$$;--> statement-breakpoint
-- A listing's row changes what the catalogue shows when it enters the catalogue (status 2),
-- leaves it, or changes a column the catalogue shows while in it. Why it left, from its new
-- status: a suspension withdraws with held_status_id set (see schema.ts).
CREATE FUNCTION catalogue_changes_track_properties() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'DELETE' THEN
    PERFORM catalogue_change_record(OLD.id, 'remove', 'deleted');
  ELSIF NEW.status_id = 2 THEN
    IF TG_OP = 'INSERT' OR OLD.status_id <> 2
      OR (OLD.tenant_id, OLD.property_type_id, OLD.deal_type_id, OLD.price, OLD.description, OLD.city_id, OLD.district_id,
          OLD.residential_complex_id, OLD.latitude, OLD.longitude, OLD.attributes, OLD.created_at, OLD.published_at)
         IS DISTINCT FROM
         (NEW.tenant_id, NEW.property_type_id, NEW.deal_type_id, NEW.price, NEW.description, NEW.city_id, NEW.district_id,
          NEW.residential_complex_id, NEW.latitude, NEW.longitude, NEW.attributes, NEW.created_at, NEW.published_at)
    THEN
      PERFORM catalogue_change_record(NEW.id, 'upsert', NULL);
    END IF;
  ELSE
    PERFORM catalogue_change_record(NEW.id, 'remove', CASE
      WHEN NEW.status_id = 5 THEN 'closed'
      WHEN NEW.status_id = 3 THEN 'rejected'
      WHEN NEW.held_status_id IS NOT NULL THEN 'suspended'
      ELSE 'withdrawn' END);
  END IF;
  RETURN NULL;
END
$$;--> statement-breakpoint
CREATE TRIGGER "properties_catalogue_changes_insert" AFTER INSERT ON "properties"
  FOR EACH ROW WHEN (NEW.status_id = 2) EXECUTE FUNCTION catalogue_changes_track_properties();--> statement-breakpoint
CREATE TRIGGER "properties_catalogue_changes_update" AFTER UPDATE ON "properties"
  FOR EACH ROW WHEN (OLD.status_id = 2 OR NEW.status_id = 2) EXECUTE FUNCTION catalogue_changes_track_properties();--> statement-breakpoint
CREATE TRIGGER "properties_catalogue_changes_delete" AFTER DELETE ON "properties"
  FOR EACH ROW WHEN (OLD.status_id = 2) EXECUTE FUNCTION catalogue_changes_track_properties();--> statement-breakpoint
-- A photo added, removed or moved changes the images and thumbnail of a published listing.
CREATE FUNCTION catalogue_changes_track_images() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM catalogue_change_record(p.id, 'upsert', NULL)
  FROM properties p
  WHERE p.id IN (SELECT property_id FROM changed_images) AND p.status_id = 2;
  RETURN NULL;
END
$$;--> statement-breakpoint
CREATE TRIGGER "property_images_catalogue_changes_insert" AFTER INSERT ON "property_images"
  REFERENCING NEW TABLE AS changed_images FOR EACH STATEMENT EXECUTE FUNCTION catalogue_changes_track_images();--> statement-breakpoint
CREATE TRIGGER "property_images_catalogue_changes_update" AFTER UPDATE ON "property_images"
  REFERENCING NEW TABLE AS changed_images FOR EACH STATEMENT EXECUTE FUNCTION catalogue_changes_track_images();--> statement-breakpoint
CREATE TRIGGER "property_images_catalogue_changes_delete" AFTER DELETE ON "property_images"
  REFERENCING OLD TABLE AS changed_images FOR EACH STATEMENT EXECUTE FUNCTION catalogue_changes_track_images();--> statement-breakpoint
-- Positions in commit order. Sequence numbers taken while transactions run commit out of order:
-- a reader that has seen position 7 committed would never see a 6 committed after it. So a
-- change takes its position at COMMIT (a deferred trigger), under one transaction-scoped lock
-- held until the transaction has ended and its rows are visible: positions are handed out in
-- the order transactions become visible, and whatever a reader sees is a prefix of the feed.
-- The lock is taken after every other lock of the transaction, so it cannot deadlock; it
-- serialises only the last instant of transactions that change the catalogue.
CREATE FUNCTION catalogue_changes_sequence() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_advisory_xact_lock(hashtextextended('mls.catalogue_changes', 0));
  -- Only this transaction's rows can be without a position: the others' are not visible
  -- until they commit, and they commit with positions.
  UPDATE catalogue_changes SET position = nextval('catalogue_change_positions') WHERE position IS NULL;
  RETURN NULL;
END
$$;--> statement-breakpoint
CREATE CONSTRAINT TRIGGER "catalogue_changes_sequence" AFTER INSERT OR UPDATE ON "catalogue_changes"
  DEFERRABLE INITIALLY DEFERRED FOR EACH ROW WHEN (NEW.position IS NULL) EXECUTE FUNCTION catalogue_changes_sequence();
