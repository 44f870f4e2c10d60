/**
 * How a user of the TypeScript client reads the extra fields of an error body, with no cast:
 * told apart with `in`, a 422's `errors` and a refused status move's `allowed_moves` are typed.
 * Compiled by `npm run typecheck` (CI), never run: if the generated types lose the fields, the
 * type check fails. The answers themselves are tested in client-flow.test.ts and the API's tests.
 */
import { createMlsClient } from '@open-mls/client'

export async function readTypedErrors(): Promise<{ where?: (string | number)[]; what?: string; allowed?: number[] }> {
  const read: { where?: (string | number)[]; what?: string; allowed?: number[] } = {}
  const agency = createMlsClient({ baseUrl: 'https://mls.example.com', apiKey: 'mls_live_example' })

  const submitted = await agency.POST('/properties', { body: { property_type: 'Квартира', deal_type: 'Продажа' } })
  if (submitted.error && 'errors' in submitted.error) {
    read.where = submitted.error.errors[0]?.loc
    read.what = submitted.error.errors[0]?.msg
  }

  const moved = await agency.POST('/properties/{id}/status', { params: { path: { id: 1 } }, body: { status_id: 4 } })
  if (moved.error && 'allowed_moves' in moved.error) {
    read.allowed = moved.error.allowed_moves
  }
  return read
}
