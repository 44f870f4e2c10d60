CREATE TABLE "catalogue_versions" (
	"city_id" integer PRIMARY KEY NOT NULL,
	"version" bigint NOT NULL
);
--> statement-breakpoint
-- Raises the counter of each city given, once, in city order so that two transactions
-- touching the same cities lock their rows in the same order and cannot deadlock.
CREATE FUNCTION catalogue_versions_bump(changed_cities integer[]) RETURNS void LANGUAGE sql AS $$
  INSERT INTO catalogue_versions (city_id, version)
  SELECT DISTINCT city_id, 1 FROM unnest(changed_cities) AS city_id ORDER BY city_id
  ON CONFLICT (city_id) DO UPDATE SET version = catalogue_versions.version + 1;
$$;
--> statement-breakpoint
-- Statement triggers with transition tables: a bulk change raises each city once, not once
-- per row. PostgreSQL allows transition tables on one event per trigger, hence one trigger per
-- event, all calling this function. Any change to a row that is or was published counts.
CREATE FUNCTION catalogue_versions_track_properties() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'INSERT' THEN
    PERFORM catalogue_versions_bump(array(SELECT coalesce(city_id, 0) FROM new_rows WHERE status_id = 2));
  ELSIF TG_OP = 'UPDATE' THEN
    PERFORM catalogue_versions_bump(array(
      SELECT coalesce(city_id, 0) FROM old_rows WHERE status_id = 2
      UNION SELECT coalesce(city_id, 0) FROM new_rows WHERE status_id = 2));
  ELSIF TG_OP = 'DELETE' THEN
    PERFORM catalogue_versions_bump(array(SELECT coalesce(city_id, 0) FROM old_rows WHERE status_id = 2));
  ELSE -- TRUNCATE
    PERFORM catalogue_versions_bump(array(SELECT id FROM cities UNION SELECT city_id FROM catalogue_versions UNION SELECT 0));
  END IF;
  RETURN NULL;
END
$$;
--> statement-breakpoint
CREATE TRIGGER properties_catalogue_versions_insert AFTER INSERT ON properties
  REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION catalogue_versions_track_properties();
--> statement-breakpoint
CREATE TRIGGER properties_catalogue_versions_update AFTER UPDATE ON properties
  REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION catalogue_versions_track_properties();
--> statement-breakpoint
CREATE TRIGGER properties_catalogue_versions_delete AFTER DELETE ON properties
  REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION catalogue_versions_track_properties();
--> statement-breakpoint
CREATE TRIGGER properties_catalogue_versions_truncate AFTER TRUNCATE ON properties
  FOR EACH STATEMENT EXECUTE FUNCTION catalogue_versions_track_properties();
--> statement-breakpoint
-- Photos show in the catalogue (thumbnail_url, images) only through a published listing.
CREATE FUNCTION catalogue_versions_track_images() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'TRUNCATE' THEN
    PERFORM catalogue_versions_bump(array(SELECT id FROM cities UNION SELECT city_id FROM catalogue_versions UNION SELECT 0));
  ELSE
    PERFORM catalogue_versions_bump(array(
      SELECT coalesce(p.city_id, 0) FROM properties p
       WHERE p.status_id = 2
         AND p.id IN (SELECT property_id FROM changed_images)));
  END IF;
  RETURN NULL;
END
$$;
--> statement-breakpoint
CREATE TRIGGER property_images_catalogue_versions_insert AFTER INSERT ON property_images
  REFERENCING NEW TABLE AS changed_images FOR EACH STATEMENT EXECUTE FUNCTION catalogue_versions_track_images();
--> statement-breakpoint
CREATE TRIGGER property_images_catalogue_versions_update AFTER UPDATE ON property_images
  REFERENCING NEW TABLE AS changed_images FOR EACH STATEMENT EXECUTE FUNCTION catalogue_versions_track_images();
--> statement-breakpoint
CREATE TRIGGER property_images_catalogue_versions_delete AFTER DELETE ON property_images
  REFERENCING OLD TABLE AS changed_images FOR EACH STATEMENT EXECUTE FUNCTION catalogue_versions_track_images();
--> statement-breakpoint
CREATE TRIGGER property_images_catalogue_versions_truncate AFTER TRUNCATE ON property_images
  FOR EACH STATEMENT EXECUTE FUNCTION catalogue_versions_track_images();
