-- Coordinates outside the Earth's ranges, which a location could store while a coordinate
-- written as a string ("91") was not yet held to -90..90 / -180..180 as a number was: every
-- answer that showed such a listing failed. The listing (or its revision waiting for the check)
-- keeps no coordinates instead, as when its agency gives none; the agency can set them again.
UPDATE "properties" SET "latitude" = NULL, "longitude" = NULL
WHERE "latitude" NOT BETWEEN -90 AND 90 OR "longitude" NOT BETWEEN -180 AND 180;--> statement-breakpoint
UPDATE "property_revisions" SET "fields" = "fields" || '{"latitude": null, "longitude": null}'::jsonb
WHERE ("fields"->>'latitude')::numeric NOT BETWEEN -90 AND 90 OR ("fields"->>'longitude')::numeric NOT BETWEEN -180 AND 180;
