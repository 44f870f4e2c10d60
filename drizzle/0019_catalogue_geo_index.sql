-- Hand-written (Drizzle cannot declare an expression GiST index with INCLUDE): the catalogue's
-- map searches (bbox, near) and clusters. A GiST index on the listing's point, partial on
-- published rows like the other catalogue indexes, carrying every column a page shows or
-- filters on, so a search in a small area is one index-only scan of the area's listings.
-- Chosen over a B-tree on (latitude, longitude), which serves a box as the whole band of its
-- latitudes (every city at that latitude) with the longitudes checked in it; the EXPLAIN
-- ANALYZE both were judged on is in docs/performance.md#map-searches. PGlite has GiST on
-- points too: the same index serves both.
CREATE INDEX "catalogue_geo_idx" ON "properties" USING gist (point("longitude", "latitude"))
  INCLUDE ("latitude", "longitude", "created_at", "id", "price", "city_id", "property_type_id", "deal_type_id", "district_id", "residential_complex_id", "tenant_id", "area", "rooms", "floor", "total_floors")
  WHERE "status_id" = 2;
