-- A feed keeps the photos it added as its offer lists them, and leaves the agency's own alone.
-- It told them apart by their source URL, which a photo the agency adds by URL has too, so a
-- run removed such a photo. Photos the feed added are now marked. Those already stored are
-- taken to be the feed's where it keeps the listing and the photo has a source URL: the
-- feed's own are, and only an agency's photo by URL on a feed's listing is taken wrongly,
-- as every run did until now.
ALTER TABLE "property_images" ADD COLUMN "added_by_feed" boolean DEFAULT false NOT NULL;--> statement-breakpoint
UPDATE "property_images" SET "added_by_feed" = true
WHERE "source_url" IS NOT NULL AND "property_id" IN (SELECT "property_id" FROM "feed_offers");
