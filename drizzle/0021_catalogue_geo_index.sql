-- Hand-written (Drizzle cannot declare INCLUDE or expression keys): the catalogue's map
-- searches (bbox, near) and clusters. A B-tree on the coordinates as float8, partial on
-- published rows like the other catalogue indexes, carrying every column a page shows or
-- filters on (the coordinates themselves too, for index-only scans): a box is one index-only
-- range scan of its band of latitudes, with the longitudes and the other filters checked in
-- the index. Chosen by EXPLAIN ANALYZE on 200,000 listings (docs/performance.md#map-searches),
-- for a whole city's box with a deal (24,802 of 40,881 listings in the box):
--   GiST on point(longitude, latitude), same columns   56-156 ms
--   B-tree on (latitude, longitude), numeric keys      26-50 ms
--   this index, float8 keys                            12-15 ms
-- GiST read a street's box faster (0.3 ms against 0.7-2.9 ms), but the whole-city boxes, whose
-- totals and clusters read every listing in them, are the slow end. All work on PGlite too.
CREATE INDEX "catalogue_geo_idx" ON "properties" (("latitude"::float8), ("longitude"::float8))
  INCLUDE ("latitude", "longitude", "created_at", "id", "price", "city_id", "property_type_id", "deal_type_id", "district_id", "residential_complex_id", "tenant_id", "area", "rooms", "floor", "total_floors")
  WHERE "status_id" = 2;
