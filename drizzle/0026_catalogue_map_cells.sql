-- Hand-written: the map's counts, and an index that reads a box rather than its band of latitudes.
--
-- The map's grid at zoom 11 (geo.ts cellDegrees(11): 360 / 2^11 / 8 = 0.02197265625 degrees, a
-- binary fraction, so every cell of a coarser zoom is an exact union of these cells). A cell is
-- (floor(latitude / size), floor(longitude / size)), computed on the coordinates as float8, as
-- the clusters' statement computes it.
--
-- catalogue_counts_by_cell keeps, per cell, type, deal and rooms, the published listings with
-- coordinates: their number, the sums of their coordinates in millionths of a degree (exact, as
-- numeric(9,6) stores them) and the box that holds them. A map's total and clusters are then a
-- sum over the cells wholly inside its box plus a count of the listings in the cells on its
-- edge, where Moscow's whole box counted 200,000 listings for each.
CREATE TABLE "catalogue_counts_by_cell" (
	"cell_row" integer NOT NULL,
	"cell_column" integer NOT NULL,
	"property_type_id" smallint NOT NULL,
	"deal_type_id" smallint NOT NULL,
	"rooms" integer NOT NULL,
	"listings" integer NOT NULL,
	"latitude_sum" bigint NOT NULL,
	"longitude_sum" bigint NOT NULL,
	"south" double precision NOT NULL,
	"north" double precision NOT NULL,
	"west" double precision NOT NULL,
	"east" double precision NOT NULL,
	-- Covering: a box's cells are read from the key alone (index-only), by row, then column.
	CONSTRAINT "catalogue_counts_by_cell_pk" PRIMARY KEY ("cell_row", "cell_column", "property_type_id", "deal_type_id", "rooms")
	  INCLUDE ("listings", "latitude_sum", "longitude_sum", "south", "north", "west", "east")
);
--> statement-breakpoint
-- A search with a type and deal (most of them) reads only its own cells.
CREATE INDEX "catalogue_counts_by_cell_type_deal_idx" ON "catalogue_counts_by_cell" ("property_type_id", "deal_type_id", "cell_row", "cell_column")
  INCLUDE ("rooms", "listings", "latitude_sum", "longitude_sum", "south", "north", "west", "east");
--> statement-breakpoint
-- Replaces migration 0021's index, keyed by latitude then longitude, which read a box's whole band
-- of latitudes (Moscow's band holds Kazan's listings too, and a narrow box in it read them all).
-- Keyed by the grid's row first, a box is read as `row = ANY(its rows)` with the longitudes as a
-- range in each row: only the box, and the rows' slivers above and below it. Covering as before.
DROP INDEX "catalogue_geo_idx";
--> statement-breakpoint
CREATE INDEX "catalogue_geo_idx" ON "properties" ((floor("latitude"::float8 / 0.02197265625)::int), ("longitude"::float8), ("latitude"::float8))
  INCLUDE ("latitude", "longitude", "created_at", "id", "price", "city_id", "property_type_id", "deal_type_id", "district_id", "residential_complex_id", "tenant_id", "area", "rooms", "floor", "total_floors")
  WHERE "status_id" = 2;
--> statement-breakpoint
-- The box of a cell's listings of one type, deal and rooms, read again when a listing on its edge
-- leaves it (a minimum or maximum cannot be taken back by arithmetic): a few listings, on the index above.
CREATE FUNCTION catalogue_cell_extent(cell_row integer, cell_column integer, type_id smallint, deal_id smallint, room_count integer)
RETURNS TABLE (south double precision, north double precision, west double precision, east double precision)
LANGUAGE sql STABLE AS $$
  SELECT min(latitude::float8), max(latitude::float8), min(longitude::float8), max(longitude::float8)
    FROM properties
   WHERE status_id = 2
     AND floor(latitude::float8 / 0.02197265625)::int = cell_row
     -- The column's range with a margin (the division rounds), then the column itself.
     AND longitude::float8 BETWEEN cell_column * 0.02197265625 - 1e-9 AND (cell_column + 1) * 0.02197265625 + 1e-9
     AND floor(longitude::float8 / 0.02197265625)::int = cell_column
     AND property_type_id = type_id AND deal_type_id = deal_id AND coalesce(rooms, -1) = room_count
$$;
--> statement-breakpoint
CREATE FUNCTION catalogue_cells_track() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  size CONSTANT float8 := 0.02197265625;
  counted_before boolean := TG_OP <> 'INSERT' AND OLD.status_id = 2 AND OLD.latitude IS NOT NULL AND OLD.longitude IS NOT NULL;
  counted_after boolean := TG_OP <> 'DELETE' AND NEW.status_id = 2 AND NEW.latitude IS NOT NULL AND NEW.longitude IS NOT NULL;
  cell catalogue_counts_by_cell;
BEGIN
  IF counted_before AND counted_after AND OLD.latitude = NEW.latitude AND OLD.longitude = NEW.longitude AND OLD.property_type_id = NEW.property_type_id
     AND OLD.deal_type_id = NEW.deal_type_id AND OLD.rooms IS NOT DISTINCT FROM NEW.rooms THEN
    RETURN NULL;
  END IF;
  IF counted_before THEN
    UPDATE catalogue_counts_by_cell
       SET listings = listings - 1,
           latitude_sum = latitude_sum - (OLD.latitude * 1000000)::bigint,
           longitude_sum = longitude_sum - (OLD.longitude * 1000000)::bigint
     WHERE cell_row = floor(OLD.latitude::float8 / size)::int AND cell_column = floor(OLD.longitude::float8 / size)::int
       AND property_type_id = OLD.property_type_id AND deal_type_id = OLD.deal_type_id AND rooms = coalesce(OLD.rooms, -1)
    RETURNING * INTO cell;
    IF cell.listings = 0 THEN
      DELETE FROM catalogue_counts_by_cell
       WHERE cell_row = cell.cell_row AND cell_column = cell.cell_column AND property_type_id = cell.property_type_id
         AND deal_type_id = cell.deal_type_id AND rooms = cell.rooms;
    ELSIF OLD.latitude::float8 IN (cell.south, cell.north) OR OLD.longitude::float8 IN (cell.west, cell.east) THEN
      UPDATE catalogue_counts_by_cell c
         SET (south, north, west, east) = (SELECT * FROM catalogue_cell_extent(c.cell_row, c.cell_column, c.property_type_id, c.deal_type_id, c.rooms))
       WHERE c.cell_row = cell.cell_row AND c.cell_column = cell.cell_column AND c.property_type_id = cell.property_type_id
         AND c.deal_type_id = cell.deal_type_id AND c.rooms = cell.rooms;
    END IF;
  END IF;
  IF counted_after THEN
    INSERT INTO catalogue_counts_by_cell AS c
      (cell_row, cell_column, property_type_id, deal_type_id, rooms, listings, latitude_sum, longitude_sum, south, north, west, east)
    VALUES (floor(NEW.latitude::float8 / size)::int, floor(NEW.longitude::float8 / size)::int, NEW.property_type_id, NEW.deal_type_id,
            coalesce(NEW.rooms, -1), 1, (NEW.latitude * 1000000)::bigint, (NEW.longitude * 1000000)::bigint,
            NEW.latitude::float8, NEW.latitude::float8, NEW.longitude::float8, NEW.longitude::float8)
    ON CONFLICT (cell_row, cell_column, property_type_id, deal_type_id, rooms) DO UPDATE
      SET listings = c.listings + 1,
          latitude_sum = c.latitude_sum + excluded.latitude_sum,
          longitude_sum = c.longitude_sum + excluded.longitude_sum,
          south = least(c.south, excluded.south),
          north = greatest(c.north, excluded.north),
          west = least(c.west, excluded.west),
          east = greatest(c.east, excluded.east);
  END IF;
  RETURN NULL;
END
$$;
--> statement-breakpoint
CREATE TRIGGER properties_catalogue_cells
  AFTER INSERT OR DELETE OR UPDATE OF status_id, property_type_id, deal_type_id, attributes, latitude, longitude ON properties
  FOR EACH ROW EXECUTE FUNCTION catalogue_cells_track();
--> statement-breakpoint
CREATE FUNCTION catalogue_cells_rebuild() RETURNS void LANGUAGE sql AS $$
  DELETE FROM catalogue_counts_by_cell;
  INSERT INTO catalogue_counts_by_cell
    (cell_row, cell_column, property_type_id, deal_type_id, rooms, listings, latitude_sum, longitude_sum, south, north, west, east)
  SELECT floor(latitude::float8 / 0.02197265625)::int, floor(longitude::float8 / 0.02197265625)::int, property_type_id, deal_type_id,
         coalesce(rooms, -1), count(*), sum((latitude * 1000000)::bigint), sum((longitude * 1000000)::bigint),
         min(latitude::float8), max(latitude::float8), min(longitude::float8), max(longitude::float8)
    FROM properties
   WHERE status_id = 2 AND latitude IS NOT NULL AND longitude IS NOT NULL
   GROUP BY 1, 2, 3, 4, 5;
$$;
--> statement-breakpoint
SELECT catalogue_cells_rebuild();
