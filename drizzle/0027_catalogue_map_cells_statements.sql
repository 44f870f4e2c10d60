-- Hand-written: migration 0026's trigger on catalogue_counts_by_cell, for statements that change
-- many listings and for transactions that cross.
--
-- A row trigger runs after its whole statement has changed the table. When one statement takes
-- every listing of a cell (an agency suspended, its listings withdrawn in one UPDATE), the first
-- listing's trigger read the cell's box again from a table where none was left: NULL, against
-- the NOT NULL columns, and the statement failed. The box read then is kept as it was: the
-- listings still counted are leaving too, and the last one deletes the row.
--
-- A listing moving from one cell to another took the old cell's row, then the new one's; two
-- listings crossing in opposite directions at once could deadlock. The rows are now taken in
-- the order of their keys, by two functions, one per step.
-- PL/pgSQL keeps each statement's plan for the session; a SQL function called from a trigger
-- plans its statement at every call, which cost a publication 0.7 ms on the bench's machine.
CREATE OR REPLACE FUNCTION catalogue_cell_extent(cell_row integer, cell_column integer, type_id smallint, deal_id smallint, room_count integer)
RETURNS TABLE (south double precision, north double precision, west double precision, east double precision)
LANGUAGE plpgsql STABLE AS $$
BEGIN
  RETURN QUERY
  SELECT min(p.latitude::float8), max(p.latitude::float8), min(p.longitude::float8), max(p.longitude::float8)
    FROM properties p
   WHERE p.status_id = 2
     AND floor(p.latitude::float8 / 0.02197265625)::int = cell_row
     -- The column's range with a margin (the division rounds), then the column itself.
     AND p.longitude::float8 BETWEEN cell_column * 0.02197265625 - 1e-9 AND (cell_column + 1) * 0.02197265625 + 1e-9
     AND floor(p.longitude::float8 / 0.02197265625)::int = cell_column
     AND p.property_type_id = type_id AND p.deal_type_id = deal_id AND coalesce(p.rooms, -1) = room_count;
END
$$;
--> statement-breakpoint
CREATE FUNCTION catalogue_cell_remove(latitude numeric, longitude numeric, type_id smallint, deal_id smallint, room_count integer)
RETURNS void LANGUAGE plpgsql AS $$
DECLARE
  size CONSTANT float8 := 0.02197265625;
  cell catalogue_counts_by_cell;
BEGIN
  UPDATE catalogue_counts_by_cell
     SET listings = listings - 1,
         latitude_sum = latitude_sum - (latitude * 1000000)::bigint,
         longitude_sum = longitude_sum - (longitude * 1000000)::bigint
   WHERE cell_row = floor(latitude::float8 / size)::int AND cell_column = floor(longitude::float8 / size)::int
     AND property_type_id = type_id AND deal_type_id = deal_id AND rooms = coalesce(room_count, -1)
  RETURNING * INTO cell;
  IF cell.listings = 0 THEN
    DELETE FROM catalogue_counts_by_cell
     WHERE cell_row = cell.cell_row AND cell_column = cell.cell_column AND property_type_id = cell.property_type_id
       AND deal_type_id = cell.deal_type_id AND rooms = cell.rooms;
  ELSIF latitude::float8 IN (cell.south, cell.north) OR longitude::float8 IN (cell.west, cell.east) THEN
    UPDATE catalogue_counts_by_cell c
       SET (south, north, west, east) = (
         SELECT coalesce(e.south, c.south), coalesce(e.north, c.north), coalesce(e.west, c.west), coalesce(e.east, c.east)
           FROM catalogue_cell_extent(c.cell_row, c.cell_column, c.property_type_id, c.deal_type_id, c.rooms) AS e)
     WHERE c.cell_row = cell.cell_row AND c.cell_column = cell.cell_column AND c.property_type_id = cell.property_type_id
       AND c.deal_type_id = cell.deal_type_id AND c.rooms = cell.rooms;
  END IF;
END
$$;
--> statement-breakpoint
CREATE FUNCTION catalogue_cell_add(latitude numeric, longitude numeric, type_id smallint, deal_id smallint, room_count integer)
RETURNS void LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO catalogue_counts_by_cell AS c
    (cell_row, cell_column, property_type_id, deal_type_id, rooms, listings, latitude_sum, longitude_sum, south, north, west, east)
  VALUES (floor(latitude::float8 / 0.02197265625)::int, floor(longitude::float8 / 0.02197265625)::int, type_id, deal_id,
          coalesce(room_count, -1), 1, (latitude * 1000000)::bigint, (longitude * 1000000)::bigint,
          latitude::float8, latitude::float8, longitude::float8, longitude::float8)
  ON CONFLICT (cell_row, cell_column, property_type_id, deal_type_id, rooms) DO UPDATE
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
CREATE OR REPLACE FUNCTION catalogue_cells_track() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  size CONSTANT float8 := 0.02197265625;
  counted_before boolean := TG_OP <> 'INSERT' AND OLD.status_id = 2 AND OLD.latitude IS NOT NULL AND OLD.longitude IS NOT NULL;
  counted_after boolean := TG_OP <> 'DELETE' AND NEW.status_id = 2 AND NEW.latitude IS NOT NULL AND NEW.longitude IS NOT NULL;
BEGIN
  IF counted_before AND counted_after AND OLD.latitude = NEW.latitude AND OLD.longitude = NEW.longitude AND OLD.property_type_id = NEW.property_type_id
     AND OLD.deal_type_id = NEW.deal_type_id AND OLD.rooms IS NOT DISTINCT FROM NEW.rooms THEN
    RETURN NULL;
  END IF;
  -- The new cell's row first only where its key comes first.
  IF counted_before AND counted_after
     AND (floor(NEW.latitude::float8 / size)::int, floor(NEW.longitude::float8 / size)::int, NEW.property_type_id, NEW.deal_type_id, coalesce(NEW.rooms, -1))
       < (floor(OLD.latitude::float8 / size)::int, floor(OLD.longitude::float8 / size)::int, OLD.property_type_id, OLD.deal_type_id, coalesce(OLD.rooms, -1)) THEN
    PERFORM catalogue_cell_add(NEW.latitude, NEW.longitude, NEW.property_type_id, NEW.deal_type_id, NEW.rooms);
    PERFORM catalogue_cell_remove(OLD.latitude, OLD.longitude, OLD.property_type_id, OLD.deal_type_id, OLD.rooms);
    RETURN NULL;
  END IF;
  IF counted_before THEN
    PERFORM catalogue_cell_remove(OLD.latitude, OLD.longitude, OLD.property_type_id, OLD.deal_type_id, OLD.rooms);
  END IF;
  IF counted_after THEN
    PERFORM catalogue_cell_add(NEW.latitude, NEW.longitude, NEW.property_type_id, NEW.deal_type_id, NEW.rooms);
  END IF;
  RETURN NULL;
END
$$;
