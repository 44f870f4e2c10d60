/**
 * Two transactions that could not both commit as they ran: PostgreSQL broke a deadlock
 * between them (40P01) or found them not serializable (40001), and rolled this one back, so
 * nothing of it was written. Running it again is the remedy the PostgreSQL manual gives.
 */
export function isTransactionConflict(error: unknown): boolean {
  // Drizzle wraps driver errors; the SQLSTATE is on the cause.
  const failure = (error as { cause?: unknown } | null)?.cause ?? error
  const code = (failure as { code?: unknown } | null)?.code
  return code === '40P01' || code === '40001'
}

/**
 * Runs a transaction again while it loses to a concurrent one (isTransactionConflict), up to
 * `attempts` runs in all; the last conflict is thrown (the API answers it with a 409). For
 * transactions that change many listings at once, whose triggers take the catalogue's count
 * rows in the order of the listings: two such can meet in a deadlock that no order of
 * statements in either prevents.
 */
export async function retryingConflicts<T>(transaction: () => Promise<T>, attempts = 3): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await transaction()
    } catch (error) {
      if (attempt >= attempts || !isTransactionConflict(error)) throw error
    }
  }
}
