/**
 * The lifecycle of a listing: its five statuses and every move between them, for the agency's
 * own moves and for the internal check and operators alike. The names and codes of the statuses
 * are reference data (property_statuses); their ids are part of the public contract.
 * See docs/api.md#listing-statuses.
 */
export const ListingStatus = {
  PendingReview: 1,
  Published: 2,
  Rejected: 3,
  Withdrawn: 4,
  Closed: 5,
} as const

export type ListingStatusId = (typeof ListingStatus)[keyof typeof ListingStatus]

/** The moves an agency makes with POST /properties/{id}/status: withdraw, close, resubmit. */
const agencyMoves: Record<ListingStatusId, readonly ListingStatusId[]> = {
  [ListingStatus.PendingReview]: [],
  [ListingStatus.Published]: [ListingStatus.Withdrawn, ListingStatus.Closed],
  [ListingStatus.Rejected]: [ListingStatus.PendingReview],
  [ListingStatus.Withdrawn]: [ListingStatus.PendingReview],
  [ListingStatus.Closed]: [],
}

/** Where the agency may move a listing from `status`; anything else is a conflict naming these. */
export function agencyMovesFrom(status: number): readonly ListingStatusId[] {
  return agencyMoves[status as ListingStatusId] ?? []
}

/**
 * Where a feed's run moves a listing whose offer left the file: withdrawn, from any status but
 * closed. A listing waiting for the check or rejected leaves the check's queue too, so it is
 * never published after its offer is gone (the agency itself withdraws published ones only).
 */
export function feedMovesFrom(status: number): readonly ListingStatusId[] {
  return status === ListingStatus.Withdrawn || status === ListingStatus.Closed ? [] : [ListingStatus.Withdrawn]
}

/** A closed deal is final; any other listing may be edited. */
export function canBeEdited(status: number): boolean {
  return status !== ListingStatus.Closed
}

/** An edit that changes something sends a listing that is not published back through the internal check (a published one keeps its status: revisions.ts). */
export const STATUS_AFTER_EDIT = ListingStatus.PendingReview

/** Only a listing waiting for review is decided, by the internal check or an operator: published (2) or rejected (3). */
export function canBeDecided(status: number): boolean {
  return status === ListingStatus.PendingReview
}

/** Moves that send a listing to the internal check (it waits for it from then on). */
export function awaitsCheck(status: number): boolean {
  return status === ListingStatus.PendingReview
}

/** A published listing, or one a suspension holds as published (it comes back as it was): the listings that may have a revision. */
export function isPublishedOrHeld(listing: { statusId: number; heldStatusId: number | null }): boolean {
  return listing.statusId === ListingStatus.Published || listing.heldStatusId === ListingStatus.Published
}
