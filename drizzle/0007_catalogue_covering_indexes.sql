DROP INDEX "catalogue_recent_idx";--> statement-breakpoint
DROP INDEX "catalogue_city_recent_idx";--> statement-breakpoint
DROP INDEX "catalogue_city_type_deal_recent_idx";--> statement-breakpoint
DROP INDEX "catalogue_type_deal_recent_idx";--> statement-breakpoint
DROP INDEX "catalogue_deal_recent_idx";--> statement-breakpoint
DROP INDEX "catalogue_price_idx";--> statement-breakpoint
-- Hand-written below (Drizzle cannot declare INCLUDE): every catalogue index now carries
-- every column a page shows or filters on. A page is then one index-only scan that checks the
-- remaining filters in the index and returns the rows from it, where it used to read a table
-- row for each entry it looked at (a filter on rooms or a district read ~1,300 rows for a
-- page at offset 100: 4.2 ms; index-only: 0.4 ms, on 1M listings).
DROP INDEX "catalogue_city_type_deal_price_idx";--> statement-breakpoint
DROP INDEX "catalogue_type_deal_price_idx";--> statement-breakpoint
DROP INDEX "catalogue_city_deal_price_idx";--> statement-breakpoint
DROP INDEX "catalogue_district_recent_idx";--> statement-breakpoint
DROP INDEX "catalogue_city_price_covering_idx";--> statement-breakpoint
DROP INDEX "catalogue_deal_price_idx";--> statement-breakpoint
CREATE INDEX "catalogue_recent_idx" ON "properties" ("created_at" DESC, "id" DESC)
  INCLUDE ("city_id", "property_type_id", "deal_type_id", "district_id", "residential_complex_id", "tenant_id", "price", "area", "rooms", "floor", "total_floors")
  WHERE "status_id" = 2;--> statement-breakpoint
CREATE INDEX "catalogue_city_recent_idx" ON "properties" ("city_id", "created_at" DESC, "id" DESC)
  INCLUDE ("property_type_id", "deal_type_id", "district_id", "residential_complex_id", "tenant_id", "price", "area", "rooms", "floor", "total_floors")
  WHERE "status_id" = 2;--> statement-breakpoint
CREATE INDEX "catalogue_city_type_deal_recent_idx" ON "properties" ("city_id", "property_type_id", "deal_type_id", "created_at" DESC, "id" DESC)
  INCLUDE ("district_id", "residential_complex_id", "tenant_id", "price", "area", "rooms", "floor", "total_floors")
  WHERE "status_id" = 2;--> statement-breakpoint
CREATE INDEX "catalogue_type_deal_recent_idx" ON "properties" ("property_type_id", "deal_type_id", "created_at" DESC, "id" DESC)
  INCLUDE ("city_id", "district_id", "residential_complex_id", "tenant_id", "price", "area", "rooms", "floor", "total_floors")
  WHERE "status_id" = 2;--> statement-breakpoint
CREATE INDEX "catalogue_deal_recent_idx" ON "properties" ("deal_type_id", "created_at" DESC, "id" DESC)
  INCLUDE ("city_id", "property_type_id", "district_id", "residential_complex_id", "tenant_id", "price", "area", "rooms", "floor", "total_floors")
  WHERE "status_id" = 2;--> statement-breakpoint
CREATE INDEX "catalogue_district_recent_idx" ON "properties" ("district_id", "created_at" DESC, "id" DESC)
  INCLUDE ("city_id", "property_type_id", "deal_type_id", "residential_complex_id", "tenant_id", "price", "area", "rooms", "floor", "total_floors")
  WHERE "status_id" = 2;--> statement-breakpoint
CREATE INDEX "catalogue_price_idx" ON "properties" ("price", "id")
  INCLUDE ("city_id", "property_type_id", "deal_type_id", "district_id", "residential_complex_id", "tenant_id", "area", "rooms", "floor", "total_floors", "created_at")
  WHERE "status_id" = 2;--> statement-breakpoint
CREATE INDEX "catalogue_city_price_idx" ON "properties" ("city_id", "price", "id")
  INCLUDE ("property_type_id", "deal_type_id", "district_id", "residential_complex_id", "tenant_id", "area", "rooms", "floor", "total_floors", "created_at")
  WHERE "status_id" = 2;--> statement-breakpoint
CREATE INDEX "catalogue_deal_price_idx" ON "properties" ("deal_type_id", "price", "id")
  INCLUDE ("city_id", "property_type_id", "district_id", "residential_complex_id", "tenant_id", "area", "rooms", "floor", "total_floors", "created_at")
  WHERE "status_id" = 2;--> statement-breakpoint
CREATE INDEX "catalogue_city_deal_price_idx" ON "properties" ("city_id", "deal_type_id", "price", "id")
  INCLUDE ("property_type_id", "district_id", "residential_complex_id", "tenant_id", "area", "rooms", "floor", "total_floors", "created_at")
  WHERE "status_id" = 2;--> statement-breakpoint
CREATE INDEX "catalogue_type_deal_price_idx" ON "properties" ("property_type_id", "deal_type_id", "price", "id")
  INCLUDE ("city_id", "district_id", "residential_complex_id", "tenant_id", "area", "rooms", "floor", "total_floors", "created_at")
  WHERE "status_id" = 2;--> statement-breakpoint
CREATE INDEX "catalogue_city_type_deal_price_idx" ON "properties" ("city_id", "property_type_id", "deal_type_id", "price", "id")
  INCLUDE ("district_id", "residential_complex_id", "tenant_id", "area", "rooms", "floor", "total_floors", "created_at")
  WHERE "status_id" = 2;
