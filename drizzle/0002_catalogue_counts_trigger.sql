-- Keeps catalogue_counts equal to the number of published listings per (city, type, deal),
-- in the same transaction as every change to properties, so the catalogue's `total` for
-- those filters is exact without counting the catalogue on each request.
CREATE FUNCTION catalogue_counts_track() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP IN ('UPDATE', 'DELETE') AND OLD.status_id = 2 THEN
    UPDATE catalogue_counts SET listings = listings - 1
     WHERE city_id = OLD.city_id AND property_type_id = OLD.property_type_id AND deal_type_id = OLD.deal_type_id;
  END IF;
  IF TG_OP IN ('UPDATE', 'INSERT') AND NEW.status_id = 2 THEN
    INSERT INTO catalogue_counts (city_id, property_type_id, deal_type_id, listings)
    VALUES (NEW.city_id, NEW.property_type_id, NEW.deal_type_id, 1)
    ON CONFLICT (city_id, property_type_id, deal_type_id) DO UPDATE SET listings = catalogue_counts.listings + 1;
  END IF;
  RETURN NULL;
END
$$;
--> statement-breakpoint
CREATE TRIGGER properties_catalogue_counts
  AFTER INSERT OR DELETE OR UPDATE OF status_id, city_id, property_type_id, deal_type_id ON properties
  FOR EACH ROW EXECUTE FUNCTION catalogue_counts_track();
--> statement-breakpoint
-- Recomputes the counts from scratch (after a bulk load with triggers off, or to verify them).
CREATE FUNCTION catalogue_counts_rebuild() RETURNS void LANGUAGE sql AS $$
  DELETE FROM catalogue_counts;
  INSERT INTO catalogue_counts (city_id, property_type_id, deal_type_id, listings)
  SELECT city_id, property_type_id, deal_type_id, count(*) FROM properties WHERE status_id = 2
  GROUP BY city_id, property_type_id, deal_type_id;
$$;
