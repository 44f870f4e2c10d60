-- Hand-written (Drizzle cannot declare INCLUDE), covering like the catalogue indexes of 0007.
-- A district with a price range was counted and paged on catalogue_district_recent_idx,
-- reading the whole district to keep the range: 4-8 ms per total on 1M listings, a fifth of
-- the database's time in the bench for one search in thirty. Rents and sales hardly overlap
-- in price, so the deal is left to the filter.
CREATE INDEX "catalogue_district_price_idx" ON "properties" ("district_id", "price", "id")
  INCLUDE ("city_id", "property_type_id", "deal_type_id", "residential_complex_id", "tenant_id", "area", "rooms", "floor", "total_floors", "created_at")
  WHERE "status_id" = 2;
