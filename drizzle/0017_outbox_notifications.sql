-- Wakes the webhook fan-out of every worker when events that await it commit, whoever wrote
-- them (src/modules/events/event-types.ts, EVENTS_CHANNEL). Once per statement, and a NOTIFY
-- goes out at commit, once per transaction and channel: a publication of many events sends one.
CREATE FUNCTION "notify_outbox_events"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF EXISTS (SELECT 1 FROM "inserted" WHERE "dispatched_at" IS NULL) THEN
    PERFORM pg_notify('mls_outbox_events', '');
  END IF;
  RETURN NULL;
END
$$;--> statement-breakpoint
CREATE TRIGGER "events_notify_outbox" AFTER INSERT ON "events" REFERENCING NEW TABLE AS "inserted" FOR EACH STATEMENT EXECUTE FUNCTION "notify_outbox_events"();
