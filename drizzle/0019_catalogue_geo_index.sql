-- Hand-written (Drizzle cannot declare INCLUDE): the catalogue's map searches (bbox, near) and
-- clusters. A B-tree on (latitude, longitude), partial on published rows like the other
-- catalogue indexes, carrying every column a page shows or filters on: a box is one index-only
-- range scan of its band of latitudes, with the longitudes and the other filters checked in
-- the index. Chosen over a GiST index on point(longitude, latitude) with the same columns
-- (both work on PostgreSQL and PGlite) by EXPLAIN ANALYZE on 200,000 listings: a whole city's
-- box with a deal, 25-45 ms here against 56-156 ms on the GiST (an index-only GiST scan costs
-- several times a B-tree's per entry); a district's, 5 ms against 2 ms. The figures are in
-- docs/performance.md#map-searches.
CREATE INDEX "catalogue_geo_idx" ON "properties" ("latitude", "longitude")
  INCLUDE ("created_at", "id", "price", "city_id", "property_type_id", "deal_type_id", "district_id", "residential_complex_id", "tenant_id", "area", "rooms", "floor", "total_floors")
  WHERE "status_id" = 2;
