-- The catalogue shows each listing's coordinates (its pin on a map), and a map search whose box
-- keeps many of a search's listings walks the order's own index checking the box. Carried in
-- every covering index, both are read from the index alone: without them a page read each of
-- its rows' coordinates from the table, and a walk over a box read the table row of every
-- entry it checked. Each index as it was (migrations 0007, 0010), with latitude and longitude
-- last in INCLUDE.
DROP INDEX "catalogue_city_deal_price_idx";--> statement-breakpoint
CREATE INDEX catalogue_city_deal_price_idx ON "properties" USING btree (city_id, deal_type_id, price, id) INCLUDE (property_type_id, district_id, residential_complex_id, tenant_id, area, rooms, floor, total_floors, created_at, latitude, longitude) WHERE (status_id = 2);--> statement-breakpoint
DROP INDEX "catalogue_city_price_idx";--> statement-breakpoint
CREATE INDEX catalogue_city_price_idx ON "properties" USING btree (city_id, price, id) INCLUDE (property_type_id, deal_type_id, district_id, residential_complex_id, tenant_id, area, rooms, floor, total_floors, created_at, latitude, longitude) WHERE (status_id = 2);--> statement-breakpoint
DROP INDEX "catalogue_city_recent_idx";--> statement-breakpoint
CREATE INDEX catalogue_city_recent_idx ON "properties" USING btree (city_id, created_at DESC, id DESC) INCLUDE (property_type_id, deal_type_id, district_id, residential_complex_id, tenant_id, price, area, rooms, floor, total_floors, latitude, longitude) WHERE (status_id = 2);--> statement-breakpoint
DROP INDEX "catalogue_city_type_deal_price_idx";--> statement-breakpoint
CREATE INDEX catalogue_city_type_deal_price_idx ON "properties" USING btree (city_id, property_type_id, deal_type_id, price, id) INCLUDE (district_id, residential_complex_id, tenant_id, area, rooms, floor, total_floors, created_at, latitude, longitude) WHERE (status_id = 2);--> statement-breakpoint
DROP INDEX "catalogue_city_type_deal_recent_idx";--> statement-breakpoint
CREATE INDEX catalogue_city_type_deal_recent_idx ON "properties" USING btree (city_id, property_type_id, deal_type_id, created_at DESC, id DESC) INCLUDE (district_id, residential_complex_id, tenant_id, price, area, rooms, floor, total_floors, latitude, longitude) WHERE (status_id = 2);--> statement-breakpoint
DROP INDEX "catalogue_deal_price_idx";--> statement-breakpoint
CREATE INDEX catalogue_deal_price_idx ON "properties" USING btree (deal_type_id, price, id) INCLUDE (city_id, property_type_id, district_id, residential_complex_id, tenant_id, area, rooms, floor, total_floors, created_at, latitude, longitude) WHERE (status_id = 2);--> statement-breakpoint
DROP INDEX "catalogue_deal_recent_idx";--> statement-breakpoint
CREATE INDEX catalogue_deal_recent_idx ON "properties" USING btree (deal_type_id, created_at DESC, id DESC) INCLUDE (city_id, property_type_id, district_id, residential_complex_id, tenant_id, price, area, rooms, floor, total_floors, latitude, longitude) WHERE (status_id = 2);--> statement-breakpoint
DROP INDEX "catalogue_district_price_idx";--> statement-breakpoint
CREATE INDEX catalogue_district_price_idx ON "properties" USING btree (district_id, price, id) INCLUDE (city_id, property_type_id, deal_type_id, residential_complex_id, tenant_id, area, rooms, floor, total_floors, created_at, latitude, longitude) WHERE (status_id = 2);--> statement-breakpoint
DROP INDEX "catalogue_district_recent_idx";--> statement-breakpoint
CREATE INDEX catalogue_district_recent_idx ON "properties" USING btree (district_id, created_at DESC, id DESC) INCLUDE (city_id, property_type_id, deal_type_id, residential_complex_id, tenant_id, price, area, rooms, floor, total_floors, latitude, longitude) WHERE (status_id = 2);--> statement-breakpoint
DROP INDEX "catalogue_price_idx";--> statement-breakpoint
CREATE INDEX catalogue_price_idx ON "properties" USING btree (price, id) INCLUDE (city_id, property_type_id, deal_type_id, district_id, residential_complex_id, tenant_id, area, rooms, floor, total_floors, created_at, latitude, longitude) WHERE (status_id = 2);--> statement-breakpoint
DROP INDEX "catalogue_recent_idx";--> statement-breakpoint
CREATE INDEX catalogue_recent_idx ON "properties" USING btree (created_at DESC, id DESC) INCLUDE (city_id, property_type_id, deal_type_id, district_id, residential_complex_id, tenant_id, price, area, rooms, floor, total_floors, latitude, longitude) WHERE (status_id = 2);--> statement-breakpoint
DROP INDEX "catalogue_type_deal_price_idx";--> statement-breakpoint
CREATE INDEX catalogue_type_deal_price_idx ON "properties" USING btree (property_type_id, deal_type_id, price, id) INCLUDE (city_id, district_id, residential_complex_id, tenant_id, area, rooms, floor, total_floors, created_at, latitude, longitude) WHERE (status_id = 2);--> statement-breakpoint
DROP INDEX "catalogue_type_deal_recent_idx";--> statement-breakpoint
CREATE INDEX catalogue_type_deal_recent_idx ON "properties" USING btree (property_type_id, deal_type_id, created_at DESC, id DESC) INCLUDE (city_id, district_id, residential_complex_id, tenant_id, price, area, rooms, floor, total_floors, latitude, longitude) WHERE (status_id = 2);
