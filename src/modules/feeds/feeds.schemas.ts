import { Type, type Static } from 'typebox'
import { feedRunStatuses, feedRunTriggers } from '../../db/schema.js'
import { GivenUrl, ShownGivenUrl, Id, Int32, Nullable, Page, PageQuery, StringEnum, Timestamp, asStoredText, PathId } from '../../lib/schemas.js'
import { FEED_NOT_FOUND, FEED_RUN_NOT_FOUND } from '../../lib/errors.js'

/** Minutes between scheduled runs: at least every quarter of an hour, at most a week apart. */
export const MIN_SCHEDULE_MINUTES = 15
/** A run report's problem: its offer's `internal-id` and its message at most this long (longer ones are cut). */
export const MAX_PROBLEM_INTERNAL_ID = 1000
export const MAX_PROBLEM_MESSAGE = 2000
export const MAX_SCHEDULE_MINUTES = 10_080
export const DEFAULT_SCHEDULE_MINUTES = 60

const FeedFormat = StringEnum('FeedFormat', ['yandex_realty'], 'The file’s format: `yandex_realty`, the Yandex.Realty XML feed (`<realty-feed>`).')
const FeedRunStatus = StringEnum(
  'FeedRunStatus',
  [...feedRunStatuses],
  '`running` until it ends; `succeeded`: every offer was taken; `partially_succeeded`: some offers were refused or had a problem (see `problems`); `failed`: the run stopped (see `detail` and `failure_code`; only `internal_error` and `agency_suspended` may have applied some offers); `unchanged`: the file had not changed since the last import, nothing was touched.',
)

const scheduleField = Int32({
  minimum: MIN_SCHEDULE_MINUTES,
  maximum: MAX_SCHEDULE_MINUTES,
  description: `Minutes between scheduled runs, ${MIN_SCHEDULE_MINUTES} to ${MAX_SCHEDULE_MINUTES}; ${DEFAULT_SCHEDULE_MINUTES} by default.`,
})
const massWithdrawalField = Type.Boolean({
  description:
    'Whether a run may withdraw more than half of the feed’s listings at once. Off by default: a run that would stops with `failure_code` `mass_withdrawal_refused`, changing nothing.',
})

export const FeedCreate = Type.Object(
  {
    url: GivenUrl('Where the file is downloaded from: `https` (plain `http` only with ALLOW_PRIVATE_NETWORK), no credentials, a public host.'),
    format: FeedFormat,
    schedule: Type.Optional(scheduleField),
    allow_mass_withdrawal: Type.Optional(massWithdrawalField),
  },
  {
    title: 'FeedCreate',
    additionalProperties: false,
    examples: [{ url: 'https://crm.example.com/export/yandex.xml', format: 'yandex_realty', schedule: 60 }],
  },
)
export type FeedCreate = Static<typeof FeedCreate>

/** PATCH /feeds/{id}: the fields to change, at least one. */
export const FeedUpdate = Type.Object(
  {
    url: Type.Optional(FeedCreate.properties.url),
    format: Type.Optional(FeedFormat),
    schedule: Type.Optional(scheduleField),
    allow_mass_withdrawal: Type.Optional(massWithdrawalField),
  },
  { title: 'FeedUpdate', additionalProperties: false, minProperties: 1, examples: [{ schedule: 30 }, { allow_mass_withdrawal: true }] },
)
export type FeedUpdate = Static<typeof FeedUpdate>

const count = (description: string) => Int32({ minimum: 0, description })

export const FeedRunCounts = Type.Object(
  {
    offers: count('Offers in the file.'),
    created: count('Listings created.'),
    updated: count('Listings changed (and sent through the internal check again as a PATCH would), or resubmitted after they came back.'),
    unchanged: count('Offers that said what they said last time: their listings were not touched.'),
    withdrawn: count('Listings withdrawn because their offers left the file.'),
    rejected: count('Offers refused (see `problems`): nothing of theirs was stored.'),
    errors: count('Problems that did not refuse an offer (a photo that could not be downloaded, a value dropped).'),
  },
  { title: 'FeedRunCounts' },
)
export type FeedRunCounts = Static<typeof FeedRunCounts>

export const FeedRunSummary = Type.Object(
  {
    id: Id,
    feed_id: Id,
    status: asStoredText(FeedRunStatus),
    trigger: asStoredText(StringEnum('FeedRunTrigger', [...feedRunTriggers], '`manual`: `POST /feeds/{id}/runs`; `schedule`: the feed’s schedule.')),
    started_at: Timestamp,
    finished_at: Nullable(Timestamp),
    detail: Nullable(Type.String({ maxLength: 2000, description: 'Why the run failed or stopped; null otherwise.' })),
    failure_code: Nullable(
      Type.String({
        maxLength: 100,
        description:
          'Why a failed run failed, stable for programs: `download_failed`, `http_status`, `too_large`, `not_xml`, `wrong_root`, `truncated`, `offer_too_large`, `mass_withdrawal_refused`, `agency_suspended`, `internal_error`.',
      }),
    ),
    counts: FeedRunCounts,
  },
  { title: 'FeedRun' },
)
export type FeedRunSummary = Static<typeof FeedRunSummary>

export const FeedRunProblem = Type.Object(
  {
    internal_id: Type.String({ maxLength: MAX_PROBLEM_INTERNAL_ID, description: 'The offer’s `internal-id`; empty when it had none.' }),
    code: Type.String({ maxLength: 100, description: 'Stable: see docs/feeds.md for every code, the internal check’s included.' }),
    field: Nullable(Type.String({ maxLength: 200, description: 'The element or listing field concerned, or null.' })),
    message: Type.String({ maxLength: MAX_PROBLEM_MESSAGE, description: 'In Russian, in plain words.' }),
  },
  { title: 'FeedRunProblem' },
)
export type FeedRunProblem = Static<typeof FeedRunProblem>

export const FeedRunReport = Type.Object(
  {
    ...FeedRunSummary.properties,
    problems: Page(FeedRunProblem, 'FeedRunProblemPage'),
  },
  { title: 'FeedRunReport', description: 'A run with its problems, offer by offer, a page at a time (`limit`, `offset`).' },
)
export type FeedRunReport = Static<typeof FeedRunReport>

export const Feed = Type.Object(
  {
    id: Id,
    url: ShownGivenUrl('Where the file is downloaded from.'),
    format: asStoredText(FeedFormat),
    schedule: scheduleField,
    allow_mass_withdrawal: massWithdrawalField,
    next_run_at: Timestamp,
    created_at: Timestamp,
    updated_at: Timestamp,
    last_run: Nullable(FeedRunSummary),
  },
  { title: 'Feed' },
)
export type Feed = Static<typeof Feed>

export const FeedPage = Page(Feed, 'FeedPage')
export const FeedRunPage = Page(FeedRunSummary, 'FeedRunPage')
export const FeedIdParams = Type.Object({ id: PathId(FEED_NOT_FOUND) })
// A run is looked up by both ids at once: either missing, the run is not found.
export const FeedRunParams = Type.Object({ id: PathId(FEED_RUN_NOT_FOUND), run_id: PathId(FEED_RUN_NOT_FOUND) })
export const FeedPageQuery = Type.Object(PageQuery)
