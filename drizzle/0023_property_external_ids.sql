ALTER TABLE "properties" ADD COLUMN "external_id" varchar(100);--> statement-breakpoint
CREATE UNIQUE INDEX "properties_tenant_external_id_key" ON "properties" USING btree ("tenant_id","external_id") WHERE "properties"."external_id" is not null;--> statement-breakpoint
-- A listing's external_id is its agency's bookkeeping, not what the catalogue shows: an update
-- that changes nothing else of a published listing must not raise its city's counter (0006
-- raised it for any update of a row that is or was published). The change feed's trigger
-- (0019) already compares only the columns the catalogue shows. Rows are matched by id, which
-- never changes (an identity column).
CREATE OR REPLACE FUNCTION catalogue_versions_track_properties() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'INSERT' THEN
    PERFORM catalogue_versions_bump(array(SELECT coalesce(city_id, 0) FROM new_rows WHERE status_id = 2));
  ELSIF TG_OP = 'UPDATE' THEN
    PERFORM catalogue_versions_bump(array(
      WITH changed AS (
        SELECT o.status_id AS old_status_id, o.city_id AS old_city_id, n.status_id AS new_status_id, n.city_id AS new_city_id
          FROM old_rows o JOIN new_rows n ON n.id = o.id
         WHERE (o.status_id = 2 OR n.status_id = 2)
           AND (to_jsonb(o) - 'external_id') IS DISTINCT FROM (to_jsonb(n) - 'external_id'))
      SELECT coalesce(old_city_id, 0) FROM changed WHERE old_status_id = 2
      UNION SELECT coalesce(new_city_id, 0) FROM changed WHERE new_status_id = 2));
  ELSIF TG_OP = 'DELETE' THEN
    PERFORM catalogue_versions_bump(array(SELECT coalesce(city_id, 0) FROM old_rows WHERE status_id = 2));
  ELSE -- TRUNCATE
    PERFORM catalogue_versions_bump(array(SELECT id FROM cities UNION SELECT city_id FROM catalogue_versions UNION SELECT 0));
  END IF;
  RETURN NULL;
END
$$;
