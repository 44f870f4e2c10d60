-- Hand-written: the map's counts by price band, so that a box with a price range is summed over
-- its cells rather than counted listing by listing.
--
-- catalogue_counts_by_cell (migration 0026) keeps no prices: a city's box with a price range was
-- counted, and clustered, on every listing in the box (Moscow's, 203,000 index entries, ~45 ms).
-- catalogue_counts_by_cell_price keeps, per type, deal, cell of the same grid and price band (two
-- significant digits, catalogue_price_band of migration 0008), the published listings with
-- coordinates and a price: their number, the sums of their coordinates in millionths of a degree
-- and the box that holds them, as migration 0026's table does. A box with a price range is then
-- the cells wholly inside it in the bands strictly inside the range (summed here), the same cells'
-- listings in the range's two end bands (counted on a price index), and the box's edge (counted
-- on catalogue_geo_idx). On the bench's million listings it holds 516,000 rows for 850,000
-- published listings, and Moscow's flats for sale between 6 and 40 M are 40,150 listings summed
-- from its rows in 2.4 ms.
CREATE TABLE "catalogue_counts_by_cell_price" (
	"property_type_id" smallint NOT NULL,
	"deal_type_id" smallint NOT NULL,
	"cell_row" integer NOT NULL,
	"cell_column" integer NOT NULL,
	"price_band" integer NOT NULL,
	"listings" integer NOT NULL,
	"latitude_sum" bigint NOT NULL,
	"longitude_sum" bigint NOT NULL,
	"south" double precision NOT NULL,
	"north" double precision NOT NULL,
	"west" double precision NOT NULL,
	"east" double precision NOT NULL,
	-- Covering: a type and deal's cells of a box, in a range of bands, are read from the key alone.
	CONSTRAINT "catalogue_counts_by_cell_price_pk" PRIMARY KEY ("property_type_id", "deal_type_id", "cell_row", "cell_column", "price_band")
	  INCLUDE ("listings", "latitude_sum", "longitude_sum", "south", "north", "west", "east")
);
--> statement-breakpoint
-- The box of a cell's listings of one type, deal and price band, read again when a listing on its
-- edge leaves it: the cell's listings on catalogue_geo_idx, as catalogue_cell_extent does. The
-- band is compared as a band, which no index holds, so no plan reads a price index instead.
CREATE FUNCTION catalogue_cell_price_extent(type_id smallint, deal_id smallint, cell_row integer, cell_column integer, band integer)
RETURNS TABLE (south double precision, north double precision, west double precision, east double precision)
LANGUAGE plpgsql STABLE AS $$
BEGIN
  RETURN QUERY
  SELECT min(p.latitude::float8), max(p.latitude::float8), min(p.longitude::float8), max(p.longitude::float8)
    FROM properties p
   WHERE p.status_id = 2
     AND floor(p.latitude::float8 / 0.02197265625)::int = cell_row
     AND p.longitude::float8 BETWEEN cell_column * 0.02197265625 - 1e-9 AND (cell_column + 1) * 0.02197265625 + 1e-9
     AND floor(p.longitude::float8 / 0.02197265625)::int = cell_column
     AND p.property_type_id = type_id AND p.deal_type_id = deal_id AND catalogue_price_band(p.price) = band;
END
$$;
--> statement-breakpoint
-- A listing leaving its row. A statement that takes every listing of the row (an agency suspended)
-- finds none left when it reads the box again: the box is kept, and the last one deletes the row
-- (as migration 0027 does for catalogue_counts_by_cell).
CREATE FUNCTION catalogue_cell_price_remove(latitude numeric, longitude numeric, type_id smallint, deal_id smallint, price numeric)
RETURNS void LANGUAGE plpgsql AS $$
DECLARE
  size CONSTANT float8 := 0.02197265625;
  cell catalogue_counts_by_cell_price;
BEGIN
  UPDATE catalogue_counts_by_cell_price
     SET listings = listings - 1,
         latitude_sum = latitude_sum - (latitude * 1000000)::bigint,
         longitude_sum = longitude_sum - (longitude * 1000000)::bigint
   WHERE property_type_id = type_id AND deal_type_id = deal_id
     AND cell_row = floor(latitude::float8 / size)::int AND cell_column = floor(longitude::float8 / size)::int
     AND price_band = catalogue_price_band(price)
  RETURNING * INTO cell;
  IF cell.listings = 0 THEN
    DELETE FROM catalogue_counts_by_cell_price
     WHERE property_type_id = cell.property_type_id AND deal_type_id = cell.deal_type_id
       AND cell_row = cell.cell_row AND cell_column = cell.cell_column AND price_band = cell.price_band;
  ELSIF latitude::float8 IN (cell.south, cell.north) OR longitude::float8 IN (cell.west, cell.east) THEN
    UPDATE catalogue_counts_by_cell_price c
       SET (south, north, west, east) = (
         SELECT coalesce(e.south, c.south), coalesce(e.north, c.north), coalesce(e.west, c.west), coalesce(e.east, c.east)
           FROM catalogue_cell_price_extent(c.property_type_id, c.deal_type_id, c.cell_row, c.cell_column, c.price_band) AS e)
     WHERE c.property_type_id = cell.property_type_id AND c.deal_type_id = cell.deal_type_id
       AND c.cell_row = cell.cell_row AND c.cell_column = cell.cell_column AND c.price_band = cell.price_band;
  END IF;
END
$$;
--> statement-breakpoint
CREATE FUNCTION catalogue_cell_price_add(latitude numeric, longitude numeric, type_id smallint, deal_id smallint, price numeric)
RETURNS void LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO catalogue_counts_by_cell_price AS c
    (property_type_id, deal_type_id, cell_row, cell_column, price_band, listings, latitude_sum, longitude_sum, south, north, west, east)
  VALUES (type_id, deal_id, floor(latitude::float8 / 0.02197265625)::int, floor(longitude::float8 / 0.02197265625)::int,
          catalogue_price_band(price), 1, (latitude * 1000000)::bigint, (longitude * 1000000)::bigint,
          latitude::float8, latitude::float8, longitude::float8, longitude::float8)
  ON CONFLICT (property_type_id, deal_type_id, cell_row, cell_column, price_band) DO UPDATE
    SET listings = c.listings + 1,
        latitude_sum = c.latitude_sum + excluded.latitude_sum,
        longitude_sum = c.longitude_sum + excluded.longitude_sum,
        south = least(c.south, excluded.south),
        north = greatest(c.north, excluded.north),
        west = least(c.west, excluded.west),
        east = greatest(c.east, excluded.east);
END
$$;
--> statement-breakpoint
-- A listing moving from one row to another takes the two rows in the order of their keys, so two
-- listings crossing in opposite directions at once cannot deadlock.
CREATE FUNCTION catalogue_cell_prices_track() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  size CONSTANT float8 := 0.02197265625;
  counted_before boolean := TG_OP <> 'INSERT' AND OLD.status_id = 2 AND OLD.latitude IS NOT NULL AND OLD.longitude IS NOT NULL AND OLD.price IS NOT NULL;
  counted_after boolean := TG_OP <> 'DELETE' AND NEW.status_id = 2 AND NEW.latitude IS NOT NULL AND NEW.longitude IS NOT NULL AND NEW.price IS NOT NULL;
BEGIN
  IF counted_before AND counted_after AND OLD.latitude = NEW.latitude AND OLD.longitude = NEW.longitude AND OLD.property_type_id = NEW.property_type_id
     AND OLD.deal_type_id = NEW.deal_type_id AND catalogue_price_band(OLD.price) = catalogue_price_band(NEW.price) THEN
    RETURN NULL;
  END IF;
  IF counted_before AND counted_after
     AND (NEW.property_type_id, NEW.deal_type_id, floor(NEW.latitude::float8 / size)::int, floor(NEW.longitude::float8 / size)::int, catalogue_price_band(NEW.price))
       < (OLD.property_type_id, OLD.deal_type_id, floor(OLD.latitude::float8 / size)::int, floor(OLD.longitude::float8 / size)::int, catalogue_price_band(OLD.price)) THEN
    PERFORM catalogue_cell_price_add(NEW.latitude, NEW.longitude, NEW.property_type_id, NEW.deal_type_id, NEW.price);
    PERFORM catalogue_cell_price_remove(OLD.latitude, OLD.longitude, OLD.property_type_id, OLD.deal_type_id, OLD.price);
    RETURN NULL;
  END IF;
  IF counted_before THEN
    PERFORM catalogue_cell_price_remove(OLD.latitude, OLD.longitude, OLD.property_type_id, OLD.deal_type_id, OLD.price);
  END IF;
  IF counted_after THEN
    PERFORM catalogue_cell_price_add(NEW.latitude, NEW.longitude, NEW.property_type_id, NEW.deal_type_id, NEW.price);
  END IF;
  RETURN NULL;
END
$$;
--> statement-breakpoint
CREATE TRIGGER properties_catalogue_cell_prices
  AFTER INSERT OR DELETE OR UPDATE OF status_id, property_type_id, deal_type_id, price, latitude, longitude ON properties
  FOR EACH ROW EXECUTE FUNCTION catalogue_cell_prices_track();
--> statement-breakpoint
CREATE FUNCTION catalogue_cell_prices_rebuild() RETURNS void LANGUAGE sql AS $$
  DELETE FROM catalogue_counts_by_cell_price;
  INSERT INTO catalogue_counts_by_cell_price
    (property_type_id, deal_type_id, cell_row, cell_column, price_band, listings, latitude_sum, longitude_sum, south, north, west, east)
  SELECT property_type_id, deal_type_id, floor(latitude::float8 / 0.02197265625)::int, floor(longitude::float8 / 0.02197265625)::int,
         catalogue_price_band(price), count(*), sum((latitude * 1000000)::bigint), sum((longitude * 1000000)::bigint),
         min(latitude::float8), max(latitude::float8), min(longitude::float8), max(longitude::float8)
    FROM properties
   WHERE status_id = 2 AND latitude IS NOT NULL AND longitude IS NOT NULL AND price IS NOT NULL
   GROUP BY 1, 2, 3, 4, 5;
$$;
--> statement-breakpoint
SELECT catalogue_cell_prices_rebuild();
