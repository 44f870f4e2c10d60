import { and, asc, count, desc, eq, getTableColumns, inArray, sql } from 'drizzle-orm'
import { queryRows, type Database } from '../../db/client.js'
import { cut, MAX_TEXT_LENGTH } from '../../lib/errors.js'
import { ListingStatus } from '../properties/listing-status.js'
import { rowsWithTotal } from '../../db/paging.js'
import { feedOffers, feedRunProblems, feedRuns, feeds, properties, tenants } from '../../db/schema.js'

/**
 * The PostgreSQL channel announcing runs that wait for a worker (a run started by hand, or by
 * the schedule), so one takes it at once instead of at its next poll. It carries nothing.
 */
export const FEED_RUNS_CHANNEL = 'mls_feed_runs'

export type FeedRow = typeof feeds.$inferSelect
export type NewFeed = typeof feeds.$inferInsert
export type RunRow = typeof feedRuns.$inferSelect
/** What the feed remembers of an offer, with its listing's status now and when it was created (a deleted listing takes its row with it). */
export type FeedOfferRow = typeof feedOffers.$inferSelect & { listingStatusId: number; listingCreatedAt: Date }
export type ProblemRow = typeof feedRunProblems.$inferSelect

/** Counts the tenant's feeds holding the tenant's row until the transaction ends, so concurrent creations count one after the other. */
export async function countFeedsLocked(tx: Database, tenantId: number): Promise<number> {
  await tx.select({ id: tenants.id }).from(tenants).where(eq(tenants.id, tenantId)).for('update')
  const [row] = await tx.select({ feeds: count() }).from(feeds).where(eq(feeds.tenantId, tenantId))
  return row?.feeds ?? 0
}

export async function insertFeed(db: Database, values: NewFeed): Promise<FeedRow> {
  const [row] = await db.insert(feeds).values(values).returning()
  return row!
}

export async function findFeed(db: Database, tenantId: number, id: number): Promise<FeedRow | undefined> {
  const [row] = await db
    .select()
    .from(feeds)
    .where(and(eq(feeds.tenantId, tenantId), eq(feeds.id, id)))
  return row
}

/** A feed by id alone, for the worker that runs it. */
export async function findFeedById(db: Database, id: number): Promise<FeedRow | undefined> {
  const [row] = await db.select().from(feeds).where(eq(feeds.id, id))
  return row
}

export function pageOfFeeds(db: Database, tenantId: number, page: { limit: number; offset: number }): Promise<{ rows: FeedRow[]; total: number }> {
  const where = eq(feeds.tenantId, tenantId)
  const rows = db.select().from(feeds).where(where).orderBy(asc(feeds.id)).limit(page.limit).offset(page.offset)
  return rowsWithTotal(db, rows, feeds, where)
}

/** The newest run of each feed given. */
export async function lastRuns(db: Database, feedIds: number[]): Promise<Map<number, RunRow>> {
  if (feedIds.length === 0) return new Map()
  const rows = await db.selectDistinctOn([feedRuns.feedId]).from(feedRuns).where(inArray(feedRuns.feedId, feedIds)).orderBy(feedRuns.feedId, desc(feedRuns.id))
  return new Map(rows.map((row) => [row.feedId, row]))
}

export async function updateFeed(
  db: Database,
  tenantId: number,
  id: number,
  values: Partial<Pick<NewFeed, 'url' | 'format' | 'scheduleMinutes' | 'allowMassWithdrawal' | 'nextRunAt' | 'etag' | 'lastModified' | 'contentDigest'>>,
): Promise<FeedRow | undefined> {
  const [row] = await db
    .update(feeds)
    .set({ ...values, updatedAt: new Date() })
    .where(and(eq(feeds.tenantId, tenantId), eq(feeds.id, id)))
    .returning()
  return row
}

/** Deletes the feed with its runs and its memory of offers (cascade); false if it is not the tenant's. */
export async function deleteFeed(db: Database, tenantId: number, id: number): Promise<boolean> {
  const rows = await db
    .delete(feeds)
    .where(and(eq(feeds.tenantId, tenantId), eq(feeds.id, id)))
    .returning({ id: feeds.id })
  return rows.length > 0
}

/** A new `running` run with its lease free; undefined when the feed has a run under way already (the partial unique index). */
export async function insertRun(db: Database, values: { feedId: number; tenantId: number; trigger: 'manual' | 'schedule' }): Promise<RunRow | undefined> {
  const [row] = await queryRows<{ id: number }>(
    db,
    sql`insert into feed_runs (feed_id, tenant_id, trigger) values (${values.feedId}::int, ${values.tenantId}::int, ${values.trigger})
        on conflict (feed_id) where status = 'running' do nothing returning id`,
  )
  if (!row) return undefined
  await announceRuns(db)
  return findRun(db, values.tenantId, values.feedId, row.id)
}

/**
 * Starts a run of every due feed (up to `limit`) whose agency is not suspended and which has
 * none under way, and moves each due feed's next run a schedule ahead, in one statement; how
 * many runs it started. Feeds another worker is scheduling are skipped (SKIP LOCKED).
 */
export async function scheduleDueRuns(db: Database, limit: number): Promise<number> {
  const rows = await queryRows<{ id: number }>(
    db,
    sql`with due as (
          select id from feeds where next_run_at <= now() order by next_run_at limit ${limit}::int for update skip locked
        ), advanced as (
          update feeds f set next_run_at = now() + make_interval(mins => f.schedule_minutes)
          from due where f.id = due.id
          returning f.id, f.tenant_id
        )
        insert into feed_runs (feed_id, tenant_id, trigger)
        select advanced.id, advanced.tenant_id, 'schedule' from advanced
        join tenants t on t.id = advanced.tenant_id and t.suspended_at is null
        on conflict (feed_id) where status = 'running' do nothing
        returning id`,
  )
  if (rows.length > 0) await announceRuns(db)
  return rows.length
}

async function announceRuns(db: Database): Promise<void> {
  await db.execute(sql`select pg_notify(${FEED_RUNS_CHANNEL}, '')`)
}

/** The advisory lock claims of runs take in turn (claimRun). */
const RUN_CLAIM_LOCK_ID = 0x6d6c7372 // "mlsr"

/**
 * Takes one running run whose lease is free or has lapsed (its worker died or lost the
 * database), for `owner` until `leaseMs` from now; SKIP LOCKED: two workers never take the same.
 * Not a run of an agency whose other feed is being imported under a live lease: an agency's
 * feeds are imported one after the other, so that of two feeds exporting one internal id the
 * one that applied it last keeps it (applyOffer), never both. Claims take an advisory lock in
 * turn, so each sees the lease the one before it took.
 */
export async function claimRun(db: Database, owner: string, leaseMs: number): Promise<RunRow | undefined> {
  const row = await db.transaction(async (tx) => {
    await tx.execute(sql`select pg_advisory_xact_lock(${RUN_CLAIM_LOCK_ID})`)
    const [claimed] = await queryRows<{ id: number; tenant_id: number; feed_id: number }>(
      tx,
      sql`update feed_runs set lease_owner = ${owner}, lease_expires_at = now() + make_interval(secs => ${leaseMs / 1000}::float8), claims = claims + 1
          where id = (
            select id from feed_runs run
            where status = 'running' and (lease_expires_at is null or lease_expires_at < now())
              and not exists (
                select 1 from feed_runs other
                where other.tenant_id = run.tenant_id and other.status = 'running' and other.lease_expires_at >= now()
              )
            order by id limit 1 for update skip locked
          ) and status = 'running'
          returning id, tenant_id, feed_id`,
    )
    return claimed
  })
  return row ? findRun(db, row.tenant_id, row.feed_id, row.id) : undefined
}

/** Extends the lease while `owner` still holds it; false once it was lost (taken over, or the run is gone). */
export async function renewLease(db: Database, runId: number, owner: string, leaseMs: number): Promise<boolean> {
  const rows = await queryRows<{ id: number }>(
    db,
    sql`update feed_runs set lease_expires_at = now() + make_interval(secs => ${leaseMs / 1000}::float8)
        where id = ${runId}::int and lease_owner = ${owner} and status = 'running' returning id`,
  )
  return rows.length > 0
}

/** Lets go of a run unfinished (the worker is stopping), so another worker takes it at once. */
export async function releaseLease(db: Database, runId: number, owner: string): Promise<void> {
  await db.execute(
    sql`update feed_runs set lease_owner = null, lease_expires_at = null where id = ${runId}::int and lease_owner = ${owner} and status = 'running'`,
  )
}

export interface RunOutcome {
  status: 'succeeded' | 'partially_succeeded' | 'failed' | 'unchanged'
  detail: string | null
  failureCode: string | null
  counts: Pick<RunRow, 'offers' | 'created' | 'updated' | 'unchanged' | 'withdrawn' | 'rejected' | 'errors'>
}

/** Ends the run held by `owner`; undefined when the lease was lost meanwhile (nothing written). */
export async function finishRun(tx: Database, runId: number, owner: string, outcome: RunOutcome): Promise<RunRow | undefined> {
  const [row] = await tx
    .update(feedRuns)
    .set({
      status: outcome.status,
      // A reason may quote the file or a server (a name, a header) at any length.
      detail: outcome.detail === null ? null : cut(outcome.detail, MAX_TEXT_LENGTH),
      failureCode: outcome.failureCode,
      ...outcome.counts,
      finishedAt: new Date(),
      leaseOwner: null,
      leaseExpiresAt: null,
    })
    .where(and(eq(feedRuns.id, runId), eq(feedRuns.leaseOwner, owner), eq(feedRuns.status, 'running')))
    .returning()
  return row
}

/**
 * Keeps what tells the file read from `url` unchanged next time (its validators and digest: a
 * 304, or the same bytes, is `unchanged`), or forgets them (null) so that the next run reads the
 * file again whatever it holds. Only while the feed still reads `url`: a new address, set while
 * the run went on, is downloaded whole at the next run.
 */
export async function rememberImportedFile(
  tx: Database,
  feedId: number,
  url: string,
  file: { etag: string | null; lastModified: string | null; digest: string } | null,
): Promise<void> {
  await tx
    .update(feeds)
    .set({ etag: file?.etag ?? null, lastModified: file?.lastModified ?? null, contentDigest: file?.digest ?? null })
    .where(and(eq(feeds.id, feedId), eq(feeds.url, url)))
}

/** Forgets the file a feed imported last, so that its next download is imported whatever it holds. */
export async function forgetImportedFile(db: Database, feedId: number): Promise<void> {
  await db.update(feeds).set({ etag: null, lastModified: null, contentDigest: null }).where(eq(feeds.id, feedId))
}

export async function findRun(db: Database, tenantId: number, feedId: number, runId: number): Promise<RunRow | undefined> {
  const [row] = await db
    .select()
    .from(feedRuns)
    .where(and(eq(feedRuns.tenantId, tenantId), eq(feedRuns.feedId, feedId), eq(feedRuns.id, runId)))
  return row
}

export function pageOfRuns(
  db: Database,
  tenantId: number,
  feedId: number,
  page: { limit: number; offset: number },
): Promise<{ rows: RunRow[]; total: number }> {
  const where = and(eq(feedRuns.tenantId, tenantId), eq(feedRuns.feedId, feedId))
  const rows = db.select().from(feedRuns).where(where).orderBy(desc(feedRuns.id)).limit(page.limit).offset(page.offset)
  return rowsWithTotal(db, rows, feedRuns, where)
}

export type ReportedProblem = Pick<ProblemRow, 'internalId' | 'code' | 'field' | 'message'>

/**
 * A run's problems: those the run found, in the order found, then the internal check's
 * findings on the listings the run submitted (created or changed) that the check or an
 * operator has since rejected, a new listing or its revision. Those are read with the report,
 * since the check decides after the run; a later run that changes the offer reports them instead.
 */
export async function pageOfProblems(
  db: Database,
  runId: number,
  page: { limit: number; offset: number },
): Promise<{ rows: ReportedProblem[]; total: number }> {
  const problems = sql`
    select 0 as part, seq as position, 0::bigint as reason, internal_id, code, field, message
      from feed_run_problems where run_id = ${runId}::int
    union all
    select 1, o.property_id, finding.n, o.internal_id, finding.reason->>'code', finding.reason->>'field', finding.reason->>'message'
      from feed_offers o
      join properties p on p.id = o.property_id
      left join property_revisions r on r.property_id = o.property_id and r.status = 'rejected'
      cross join lateral jsonb_array_elements(case when p.status_id = ${ListingStatus.Rejected}::int then p.moderation->'reasons' else r.moderation->'reasons' end)
        with ordinality as finding(reason, n)
      where o.last_run_id = ${runId}::int and (p.status_id = ${ListingStatus.Rejected}::int or r.property_id is not null)`
  const [rows, [counted]] = await Promise.all([
    queryRows<{ internal_id: string; code: string; field: string | null; message: string }>(
      db,
      sql`select internal_id, code, field, message from (${problems}) as problems order by part, position, reason limit ${page.limit}::int offset ${page.offset}::bigint`,
    ),
    queryRows<{ total: number }>(db, sql`select count(*)::int as total from (${problems}) as problems`),
  ])
  return { rows: rows.map((row) => ({ internalId: row.internal_id, code: row.code, field: row.field, message: row.message })), total: counted!.total }
}

/**
 * Adds to a run's report. A worker that lost the run's lease may still be writing its last
 * batch while the new holder writes its own under the same numbers: the first row of a number
 * stays, rather than the new holder's run failing on it.
 */
export async function insertProblems(db: Database, problems: (typeof feedRunProblems.$inferInsert)[]): Promise<void> {
  if (problems.length > 0) await db.insert(feedRunProblems).values(problems).onConflictDoNothing()
}

/** Drops what an earlier holder of the run's lease wrote before it died: the new holder starts the run over. */
export async function forgetProblems(db: Database, runId: number): Promise<void> {
  await db.delete(feedRunProblems).where(eq(feedRunProblems.runId, runId))
}

/** The feed's memory of its offers, by internal id. */
export async function feedOffersOf(db: Database, feedId: number): Promise<Map<string, FeedOfferRow>> {
  const rows = await db
    .select({ ...getTableColumns(feedOffers), listingStatusId: properties.statusId, listingCreatedAt: properties.createdAt })
    .from(feedOffers)
    .innerJoin(properties, eq(properties.id, feedOffers.propertyId))
    .where(eq(feedOffers.feedId, feedId))
  return new Map(rows.map((row) => [row.internalId, row]))
}

/** The internal ids the agency's other feeds import, each with its feed. */
export async function offersOfOtherFeeds(db: Database, tenantId: number, feedId: number): Promise<Map<string, number>> {
  const rows = await db
    .select({ internalId: feedOffers.internalId, feedId: feedOffers.feedId })
    .from(feedOffers)
    .innerJoin(feeds, eq(feeds.id, feedOffers.feedId))
    .where(and(eq(feeds.tenantId, tenantId), sql`${feedOffers.feedId} <> ${feedId}::int`))
  return new Map(rows.map((row) => [row.internalId, row.feedId]))
}

/** A feed lets go of an offer (another feed of the agency imports its listing now). */
export async function forgetFeedOffer(db: Database, feedId: number, internalId: string): Promise<void> {
  await db.delete(feedOffers).where(and(eq(feedOffers.feedId, feedId), eq(feedOffers.internalId, internalId)))
}

/**
 * Remembers what offers became (their listing, digest and run), many rows per statement. A
 * listing the agency deleted since its offer made it is forgotten by the feed, as a deletion
 * before the run is: when the rows' foreign key finds one gone, the rows of the listings left
 * are written again. Checked only then, so that the common batch costs one statement.
 */
export async function saveFeedOffers(db: Database, rows: (typeof feedOffers.$inferInsert)[]): Promise<void> {
  for (let remembered = rows; remembered.length > 0;) {
    try {
      await insertFeedOffers(db, remembered)
      return
    } catch (error) {
      if (!isListingGone(error)) throw error
      const ids = [...new Set(remembered.map((row) => row.propertyId))]
      const live = new Set((await db.select({ id: properties.id }).from(properties).where(inArray(properties.id, ids))).map((row) => row.id))
      remembered = remembered.filter((row) => live.has(row.propertyId))
    }
  }
}

/** The foreign key from feed_offers to properties refused a row: its listing is deleted. Drizzle wraps the driver's error. */
function isListingGone(error: unknown): boolean {
  const cause = ((error as { cause?: unknown } | null)?.cause ?? error) as { code?: unknown; constraint?: unknown } | null
  return cause?.code === '23503' && cause.constraint === 'feed_offers_property_id_properties_id_fk'
}

/**
 * The rows travel as one JSON text, read back by json_to_recordset: a batch is one parameter
 * whatever its size, not six a row, each bound and typed in turn.
 */
async function insertFeedOffers(db: Database, rows: (typeof feedOffers.$inferInsert)[]): Promise<void> {
  const records = rows.map((row) => ({
    feed_id: row.feedId,
    internal_id: row.internalId,
    property_id: row.propertyId,
    content_digest: row.contentDigest,
    last_run_id: row.lastRunId,
    withdrawn_by_feed: row.withdrawnByFeed ?? false,
  }))
  await db.execute(sql`insert into feed_offers (feed_id, internal_id, property_id, content_digest, last_run_id, withdrawn_by_feed)
    select feed_id, internal_id, property_id, content_digest, last_run_id, withdrawn_by_feed
    from json_to_recordset(${JSON.stringify(records)}::json)
      as offer(feed_id int, internal_id text, property_id int, content_digest text, last_run_id int, withdrawn_by_feed boolean)
    on conflict (feed_id, internal_id) do update set
      property_id = excluded.property_id,
      content_digest = excluded.content_digest,
      last_run_id = excluded.last_run_id,
      withdrawn_by_feed = excluded.withdrawn_by_feed`)
}

export async function markWithdrawnByFeed(db: Database, feedId: number, internalId: string, runId: number): Promise<void> {
  await db
    .update(feedOffers)
    .set({ withdrawnByFeed: true, lastRunId: runId })
    .where(and(eq(feedOffers.feedId, feedId), eq(feedOffers.internalId, internalId)))
}

/**
 * Deletes up to `limit` runs that finished more than `days` ago, with their problems (cascade),
 * keeping each feed's newest run (its `last_run`); how many. Other workers' batches are skipped.
 */
export async function deleteOldRuns(db: Database, days: number, limit: number): Promise<number> {
  const rows = await queryRows<{ id: number }>(
    db,
    sql`delete from feed_runs where id in (
          select r.id from feed_runs r
          where ${isOldRun(days)} and not exists (select from feed_run_problems p where p.run_id = r.id)
          order by r.id limit ${limit}::int for update skip locked
        ) returning id`,
  )
  return rows.length
}

/**
 * Deletes up to `limit` problems of runs past retention (deleteOldRuns), the oldest runs' first:
 * a run of a large feed can hold a problem per offer, which the run's delete would otherwise
 * take with it, all in one statement.
 */
export async function deleteOldRunsProblems(db: Database, days: number, limit: number): Promise<number> {
  const rows = await queryRows<{ run_id: number }>(
    db,
    sql`delete from feed_run_problems where (run_id, seq) in (
          select p.run_id, p.seq from feed_run_problems p join feed_runs r on r.id = p.run_id
          where ${isOldRun(days)}
          order by p.run_id, p.seq limit ${limit}::int for update of p skip locked
        ) returning run_id`,
  )
  return rows.length
}

/** A run (`r`) past retention: finished more than `days` ago, and not its feed's newest. */
const isOldRun = (days: number) =>
  sql`r.status <> 'running' and r.finished_at < now() - make_interval(days => ${days}::int)
      and r.id <> (select max(newest.id) from feed_runs newest where newest.feed_id = r.feed_id)`
