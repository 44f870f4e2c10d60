-- Keeps catalogue_counts equal to the number of published listings per (city, type, deal,
-- district, rooms), and catalogue_counts_by_city per (city, type, deal), in the same
-- transaction as every change to properties, so the catalogue's `total` for those filters is
-- exact without counting the catalogue on each request.
CREATE FUNCTION catalogue_counts_track() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP IN ('UPDATE', 'DELETE') AND OLD.status_id = 2 THEN
    UPDATE catalogue_counts SET listings = listings - 1
     WHERE city_id = OLD.city_id AND property_type_id = OLD.property_type_id AND deal_type_id = OLD.deal_type_id
       AND district_id = coalesce(OLD.district_id, 0) AND rooms = coalesce(OLD.rooms, -1);
    UPDATE catalogue_counts_by_city SET listings = listings - 1
     WHERE city_id = OLD.city_id AND property_type_id = OLD.property_type_id AND deal_type_id = OLD.deal_type_id;
  END IF;
  IF TG_OP IN ('UPDATE', 'INSERT') AND NEW.status_id = 2 THEN
    INSERT INTO catalogue_counts (city_id, property_type_id, deal_type_id, district_id, rooms, listings)
    VALUES (NEW.city_id, NEW.property_type_id, NEW.deal_type_id, coalesce(NEW.district_id, 0), coalesce(NEW.rooms, -1), 1)
    ON CONFLICT (city_id, property_type_id, deal_type_id, district_id, rooms)
    DO UPDATE SET listings = catalogue_counts.listings + 1;
    INSERT INTO catalogue_counts_by_city (city_id, property_type_id, deal_type_id, listings)
    VALUES (NEW.city_id, NEW.property_type_id, NEW.deal_type_id, 1)
    ON CONFLICT (city_id, property_type_id, deal_type_id) DO UPDATE SET listings = catalogue_counts_by_city.listings + 1;
  END IF;
  RETURN NULL;
END
$$;
--> statement-breakpoint
CREATE TRIGGER properties_catalogue_counts
  AFTER INSERT OR DELETE OR UPDATE OF status_id, city_id, property_type_id, deal_type_id, district_id, attributes ON properties
  FOR EACH ROW EXECUTE FUNCTION catalogue_counts_track();
--> statement-breakpoint
-- Recomputes the counts from scratch (after a bulk load with the trigger off, or to verify them).
CREATE FUNCTION catalogue_counts_rebuild() RETURNS void LANGUAGE sql AS $$
  DELETE FROM catalogue_counts;
  INSERT INTO catalogue_counts (city_id, property_type_id, deal_type_id, district_id, rooms, listings)
  SELECT city_id, property_type_id, deal_type_id, coalesce(district_id, 0), coalesce(rooms, -1), count(*)
    FROM properties WHERE status_id = 2
   GROUP BY 1, 2, 3, 4, 5;
  DELETE FROM catalogue_counts_by_city;
  INSERT INTO catalogue_counts_by_city (city_id, property_type_id, deal_type_id, listings)
  SELECT city_id, property_type_id, deal_type_id, sum(listings) FROM catalogue_counts GROUP BY 1, 2, 3;
$$;
--> statement-breakpoint
-- Price-range counts and price-ordered pages with city, type and deal (or type and deal): the
-- INCLUDE columns let a count with rooms, district or area filters read only the index.
-- (Drizzle cannot declare INCLUDE, hence here rather than in schema.ts.)
CREATE INDEX catalogue_city_type_deal_price_idx ON properties (city_id, property_type_id, deal_type_id, price, id)
  INCLUDE (rooms, district_id, area) WHERE status_id = 2;
--> statement-breakpoint
CREATE INDEX catalogue_type_deal_price_idx ON properties (property_type_id, deal_type_id, price, id)
  INCLUDE (rooms, district_id, area, city_id) WHERE status_id = 2;
--> statement-breakpoint
-- A city and deal with a price but no type: counted and paged on the index alone.
CREATE INDEX catalogue_city_deal_price_idx ON properties (city_id, deal_type_id, price, id)
  INCLUDE (property_type_id, rooms, district_id, area) WHERE status_id = 2;
--> statement-breakpoint
-- A district is a small part of its city: its pages start from its own entries.
CREATE INDEX catalogue_district_recent_idx ON properties (district_id, created_at DESC, id DESC) WHERE status_id = 2;
