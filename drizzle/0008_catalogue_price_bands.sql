CREATE TABLE "catalogue_counts_by_price" (
	"city_id" integer NOT NULL,
	"property_type_id" smallint NOT NULL,
	"deal_type_id" smallint NOT NULL,
	"rooms" integer NOT NULL,
	"price_band" integer NOT NULL,
	"listings" integer NOT NULL,
	CONSTRAINT "catalogue_counts_by_price_city_id_property_type_id_deal_type_id_rooms_price_band_pk" PRIMARY KEY("city_id","property_type_id","deal_type_id","rooms","price_band")
);
--> statement-breakpoint
-- Hand-written below. A price's band: its magnitude (digits before the point, less one) times
-- 100 plus its first two digits; prices under 10 are band 0. Bands are contiguous and ordered
-- like the prices, and a band's bounds are exact in numeric arithmetic, so "the listings of the
-- bands strictly between those of min_price and max_price" is exactly the price range between
-- the end of the first and the start of the last.
CREATE FUNCTION catalogue_price_band(price numeric) RETURNS integer LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
  SELECT CASE WHEN price < 10 THEN 0
    ELSE (length(trunc(price)::text) - 1) * 100 + trunc(price / 10::numeric ^ (length(trunc(price)::text) - 2))::integer END
$$;
--> statement-breakpoint
-- The lowest price of the band `price` is in.
CREATE FUNCTION catalogue_price_band_start(price numeric) RETURNS numeric LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
  SELECT CASE WHEN price < 10 THEN 0
    ELSE trunc(price / 10::numeric ^ (length(trunc(price)::text) - 2)) * 10::numeric ^ (length(trunc(price)::text) - 2) END
$$;
--> statement-breakpoint
-- The lowest price of the next band: the band of `price` is [start, end).
CREATE FUNCTION catalogue_price_band_end(price numeric) RETURNS numeric LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
  SELECT CASE WHEN price < 10 THEN 10
    ELSE catalogue_price_band_start(price) + 10::numeric ^ (length(trunc(price)::text) - 2) END
$$;
--> statement-breakpoint
-- catalogue_counts_track of migration 0002, now keeping the price bands too (price joins the
-- columns whose update fires it).
CREATE OR REPLACE FUNCTION catalogue_counts_track() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP IN ('UPDATE', 'DELETE') AND OLD.status_id = 2 THEN
    UPDATE catalogue_counts SET listings = listings - 1
     WHERE city_id = OLD.city_id AND property_type_id = OLD.property_type_id AND deal_type_id = OLD.deal_type_id
       AND district_id = coalesce(OLD.district_id, 0) AND rooms = coalesce(OLD.rooms, -1);
    UPDATE catalogue_counts_by_city SET listings = listings - 1
     WHERE city_id = OLD.city_id AND property_type_id = OLD.property_type_id AND deal_type_id = OLD.deal_type_id;
    IF OLD.price IS NOT NULL THEN
      UPDATE catalogue_counts_by_price SET listings = listings - 1
       WHERE city_id = OLD.city_id AND property_type_id = OLD.property_type_id AND deal_type_id = OLD.deal_type_id
         AND rooms = coalesce(OLD.rooms, -1) AND price_band = catalogue_price_band(OLD.price);
    END IF;
  END IF;
  IF TG_OP IN ('UPDATE', 'INSERT') AND NEW.status_id = 2 THEN
    INSERT INTO catalogue_counts (city_id, property_type_id, deal_type_id, district_id, rooms, listings)
    VALUES (NEW.city_id, NEW.property_type_id, NEW.deal_type_id, coalesce(NEW.district_id, 0), coalesce(NEW.rooms, -1), 1)
    ON CONFLICT (city_id, property_type_id, deal_type_id, district_id, rooms)
    DO UPDATE SET listings = catalogue_counts.listings + 1;
    INSERT INTO catalogue_counts_by_city (city_id, property_type_id, deal_type_id, listings)
    VALUES (NEW.city_id, NEW.property_type_id, NEW.deal_type_id, 1)
    ON CONFLICT (city_id, property_type_id, deal_type_id) DO UPDATE SET listings = catalogue_counts_by_city.listings + 1;
    IF NEW.price IS NOT NULL THEN
      INSERT INTO catalogue_counts_by_price (city_id, property_type_id, deal_type_id, rooms, price_band, listings)
      VALUES (NEW.city_id, NEW.property_type_id, NEW.deal_type_id, coalesce(NEW.rooms, -1), catalogue_price_band(NEW.price), 1)
      ON CONFLICT (city_id, property_type_id, deal_type_id, rooms, price_band)
      DO UPDATE SET listings = catalogue_counts_by_price.listings + 1;
    END IF;
  END IF;
  RETURN NULL;
END
$$;
--> statement-breakpoint
DROP TRIGGER properties_catalogue_counts ON properties;
--> statement-breakpoint
CREATE TRIGGER properties_catalogue_counts
  AFTER INSERT OR DELETE OR UPDATE OF status_id, city_id, property_type_id, deal_type_id, district_id, attributes, price ON properties
  FOR EACH ROW EXECUTE FUNCTION catalogue_counts_track();
--> statement-breakpoint
CREATE OR REPLACE FUNCTION catalogue_counts_rebuild() RETURNS void LANGUAGE sql AS $$
  DELETE FROM catalogue_counts;
  INSERT INTO catalogue_counts (city_id, property_type_id, deal_type_id, district_id, rooms, listings)
  SELECT city_id, property_type_id, deal_type_id, coalesce(district_id, 0), coalesce(rooms, -1), count(*)
    FROM properties WHERE status_id = 2
   GROUP BY 1, 2, 3, 4, 5;
  DELETE FROM catalogue_counts_by_city;
  INSERT INTO catalogue_counts_by_city (city_id, property_type_id, deal_type_id, listings)
  SELECT city_id, property_type_id, deal_type_id, sum(listings) FROM catalogue_counts GROUP BY 1, 2, 3;
  DELETE FROM catalogue_counts_by_price;
  INSERT INTO catalogue_counts_by_price (city_id, property_type_id, deal_type_id, rooms, price_band, listings)
  SELECT city_id, property_type_id, deal_type_id, coalesce(rooms, -1), catalogue_price_band(price), count(*)
    FROM properties WHERE status_id = 2 AND price IS NOT NULL
   GROUP BY 1, 2, 3, 4, 5;
$$;
--> statement-breakpoint
SELECT catalogue_counts_rebuild();
