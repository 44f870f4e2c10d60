import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { sql } from 'drizzle-orm'
import fc from 'fast-check'
import { queryRows } from '../../src/db/client.js'
import type { ChangesPage } from '../../src/modules/catalogue/catalogue-changes.schemas.js'
import type { PropertyImage } from '../../src/modules/images/images.schemas.js'
import type { Property } from '../../src/modules/properties/properties.schemas.js'
import { buildTestApp, type TestApp } from '../helpers/app.js'
import { adminHeaders, createTenant, propertyBody, type Tenant } from '../helpers/factories.js'
import { photo, upload } from '../helpers/photos.js'

/** What an agency may do to its listings, by index into its own listings (modulo their number). */
type Step =
  | { kind: 'submit'; price: number; rooms: number }
  | { kind: 'edit'; listing: number; price: number }
  | { kind: 'edit-with-contacts'; listing: number }
  | { kind: 'discard-revision'; listing: number }
  | { kind: 'add-photo'; listing: number }
  | { kind: 'move-photo'; listing: number; sortOrder: number }
  | { kind: 'remove-photo'; listing: number }
  | { kind: 'status'; listing: number; statusId: 1 | 4 | 5 }
  | { kind: 'delete'; listing: number }
  | { kind: 'suspend-and-back' }
  | { kind: 'check' }

const listing = fc.nat({ max: 50 })
const step: fc.Arbitrary<Step> = fc.oneof(
  {
    weight: 4,
    arbitrary: fc.record({
      kind: fc.constant('submit' as const),
      price: fc.integer({ min: 1_000_000, max: 30_000_000 }),
      rooms: fc.integer({ min: 1, max: 5 }),
    }),
  },
  { weight: 4, arbitrary: fc.record({ kind: fc.constant('edit' as const), listing, price: fc.integer({ min: 1_000_000, max: 30_000_000 }) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('edit-with-contacts' as const), listing }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('discard-revision' as const), listing }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('add-photo' as const), listing }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('move-photo' as const), listing, sortOrder: fc.integer({ min: 0, max: 9 }) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('remove-photo' as const), listing }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('status' as const), listing, statusId: fc.constantFrom(1 as const, 4 as const, 5 as const) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('delete' as const), listing }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('suspend-and-back' as const) }) },
  { weight: 3, arbitrary: fc.record({ kind: fc.constant('check' as const) }) },
)

/**
 * The change feed's contract: a mirror that applies the feed from its start, while agencies
 * submit, edit, add and move photos, withdraw, close, resubmit and delete listings, operators
 * suspend agencies and the internal check decides, equals the catalogue at the end, listing for
 * listing and field for field.
 */
describe('a mirror of the change feed', () => {
  let t: TestApp
  let agencies: Tenant[]
  let picture: Buffer

  before(async () => {
    t = await buildTestApp()
    agencies = await Promise.all([1, 2, 3].map((n) => createTenant(t.app, { email: `mirror-${n}@agency.example` })))
    picture = await photo('png', 64, 48)
  })
  after(() => t.close())

  /**
   * One batch of the internal check. On PostgreSQL a batch may meet a suspension or another
   * batch in a deadlock over the catalogue's count rows; PostgreSQL rolls one back, the service
   * runs it again (up to three times), and past that the worker runs the job again, as this does.
   */
  async function checkAsTheWorkerDoes(): Promise<number> {
    for (;;) {
      try {
        return await t.app.services.moderation.checkWaiting()
      } catch (error) {
        if ((error as { cause?: { code?: string } }).cause?.code !== '40P01') throw error
      }
    }
  }

  /** One agency's steps, in order; failures the API answers on purpose (a 404, a 409) are part of the run. */
  async function act(agency: Tenant, steps: Step[]): Promise<void> {
    const mine: number[] = []
    const photos = new Map<number, number[]>()
    const pick = (index: number) => mine[index % mine.length]
    const call = (method: 'PATCH' | 'PUT' | 'POST' | 'DELETE', url: string, payload?: object) =>
      t.app.inject({ method, url, headers: agency.headers, ...(payload ? { payload } : {}) })
    for (const current of steps) {
      if (current.kind === 'submit') {
        const body = propertyBody({ price: current.price, attributes: { area: '50', rooms: String(current.rooms), floor: '3', total_floors: '9' } })
        const created = await t.app.inject({ method: 'POST', url: '/properties', headers: agency.headers, payload: body })
        assert.equal(created.statusCode, 201, created.body)
        mine.push(created.json<Property>().id)
        continue
      }
      if (current.kind === 'check') {
        // The internal check, as a worker runs it, between this agency's steps and beside the others'.
        await checkAsTheWorkerDoes()
        continue
      }
      if (current.kind === 'suspend-and-back') {
        for (const move of ['suspend', 'unsuspend']) {
          // A 409 is a deadlock PostgreSQL broke three times running (see checkAsTheWorkerDoes): the operator tries again.
          for (;;) {
            const answer = await t.app.inject({ method: 'POST', url: `/admin/tenants/${agency.tenantId}/${move}`, headers: adminHeaders })
            if (answer.statusCode === 200) break
            assert.equal(answer.statusCode, 409, answer.body)
          }
        }
        continue
      }
      const id = pick(current.listing)
      if (id === undefined) continue
      const answer = await (async () => {
        switch (current.kind) {
          case 'edit':
            return call('PATCH', `/properties/${id}`, { price: current.price })
          case 'edit-with-contacts':
            return call('PATCH', `/properties/${id}`, { description: 'Пишите: seller@example.com' })
          case 'discard-revision':
            return call('DELETE', `/properties/${id}/revision`)
          case 'add-photo': {
            const uploaded = await upload(t.app, agency, {
              file: picture,
              filename: 'photo.png',
              contentType: 'image/png',
              fields: { property_id: String(id) },
            })
            if (uploaded.statusCode === 201) photos.set(id, [...(photos.get(id) ?? []), uploaded.json<PropertyImage>().id])
            return uploaded
          }
          case 'move-photo': {
            const image = photos.get(id)?.[0]
            return image === undefined ? undefined : call('PUT', `/property-images/${image}`, { sort_order: current.sortOrder })
          }
          case 'remove-photo': {
            const image = photos.get(id)?.pop()
            return image === undefined ? undefined : call('DELETE', `/property-images/${image}`)
          }
          case 'status':
            return call('POST', `/properties/${id}/status`, { status_id: current.statusId })
          case 'delete': {
            const deleted = await call('DELETE', `/properties/${id}`)
            if (deleted.statusCode === 204) mine.splice(mine.indexOf(id), 1)
            return deleted
          }
        }
      })()
      // Every answer is one the contract allows: never a 500.
      if (answer) assert.ok([200, 201, 204, 404, 409].includes(answer.statusCode), `${current.kind}: ${answer.statusCode} ${answer.body}`)
    }
  }

  /** Applies the feed to `mirror` from `cursor` until it has nothing more; the cursor reached. */
  async function follow(mirror: Map<number, unknown>, cursor: string | undefined): Promise<string | undefined> {
    for (;;) {
      const response = await t.app.inject(`/mls/changes?limit=13${cursor ? `&after=${cursor}` : ''}`)
      assert.equal(response.statusCode, 200, response.body)
      const page = response.json<ChangesPage>()
      for (const item of page.items) {
        if (item.op === 'upsert') mirror.set(item.id, item.property)
        else mirror.delete(item.id)
      }
      cursor = page.next_cursor
      if (!page.has_more) return cursor
    }
  }

  it('equals the catalogue after concurrent writers, the check and a reader tailing the feed', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(fc.array(step, { minLength: 5, maxLength: 25 }), { minLength: 3, maxLength: 3 }), async (plans) => {
        const mirror = new Map<number, unknown>()
        let writing = true
        const writers = Promise.all(plans.map((steps, n) => act(agencies[n]!, steps))).finally(() => (writing = false))
        // A reader tails the feed from its start while the writers and the check go on.
        let cursor: string | undefined
        while (writing) {
          cursor = await follow(mirror, cursor)
          // Lets the writers' requests in: PGlite serves one statement at a time.
          await new Promise((resolve) => setImmediate(resolve))
        }
        await writers
        while ((await checkAsTheWorkerDoes()) > 0) {
          // the queue drains
        }
        await follow(mirror, cursor)

        const published = await queryRows<{ id: number }>(t.db, sql`select id from properties where status_id = 2 order by id`)
        assert.deepEqual(
          [...mirror.keys()].sort((a, b) => a - b),
          published.map((row) => row.id),
        )
        for (const { id } of published) {
          const shown = await t.app.inject(`/mls/properties/${id}`)
          assert.deepEqual(mirror.get(id), shown.json(), `listing ${id}`)
        }
      }),
      { numRuns: 15, endOnFailure: true },
    )
  })
})
