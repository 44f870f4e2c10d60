-- The numbers of a subscription's `bbox` and `near` filter are read as every query number is:
-- no plus sign, no blanks, digits on both sides of a point. Filters stored while they were read
-- more loosely ("+37, 55,38.,.56") are rewritten to the same numbers written that way, so the
-- fan-out, which reads them again, keeps matching them.
UPDATE "webhook_subscriptions"
SET "filter" = "filter" || jsonb_build_object('bbox', regexp_replace(regexp_replace(regexp_replace(regexp_replace(
  "filter"->>'bbox', '\s+', '', 'g'), '(^|,)\+', '\1', 'g'), '(^|,|-)\.', '\10.', 'g'), '\.(,|$|[eE])', '\1', 'g'))
WHERE "filter" ? 'bbox';--> statement-breakpoint
UPDATE "webhook_subscriptions"
SET "filter" = "filter" || jsonb_build_object('near', regexp_replace(regexp_replace(regexp_replace(regexp_replace(
  "filter"->>'near', '\s+', '', 'g'), '(^|,)\+', '\1', 'g'), '(^|,|-)\.', '\10.', 'g'), '\.(,|$|[eE])', '\1', 'g'))
WHERE "filter" ? 'near';
