-- When an agency's latest suspension was lifted: the fan-out delivers it no event raised before then (schema.ts).
-- (This migration's snapshot is the first to carry the map's count tables, which 0026–0028 made by hand.)
ALTER TABLE "tenants" ADD COLUMN "unsuspended_at" timestamp with time zone;
