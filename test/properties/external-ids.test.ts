import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { asc, eq, sql } from 'drizzle-orm'
import { queryRows } from '../../src/db/client.js'
import { catalogueChanges, events } from '../../src/db/schema.js'
import { ApiError, INVALID_API_KEY } from '../../src/lib/errors.js'
import type { ChangesPage } from '../../src/modules/catalogue/catalogue-changes.schemas.js'
import type { Property, PropertySubmission } from '../../src/modules/properties/properties.schemas.js'
import type { AuthenticatedTenant } from '../../src/modules/tenants/tenants.service.js'
import { buildTestApp, type TestApp } from '../helpers/app.js'
import { adminHeaders, createTenant, propertyBody, submitProperty, type Tenant } from '../helpers/factories.js'
import { runInternalCheck } from '../helpers/moderation.js'
import type { ErrorBody, ListingUnderReviewPage, PropertyPage, ValidationErrorBody } from '../helpers/responses.js'

describe('the agency’s own ids: external_id, and PUT/GET/DELETE /properties/by-external-id/{external_id}', () => {
  let t: TestApp
  let agency: Tenant
  let other: Tenant
  let serial = 0

  before(async () => {
    t = await buildTestApp()
    agency = await createTenant(t.app, { email: 'external-ids@agency.example' })
    other = await createTenant(t.app, { email: 'external-ids-other@agency.example' })
  })
  after(() => t.close())

  /** A new id for each use: tests share one agency. */
  const newId = (prefix = 'CRM') => `${prefix}-${++serial}`
  const byExternalId = (externalId: string) => `/properties/by-external-id/${encodeURIComponent(externalId)}`
  const call = (method: 'GET' | 'PATCH' | 'PUT' | 'POST' | 'DELETE', url: string, payload?: object, tenant: Tenant | null = agency) =>
    t.app.inject({ method, url, headers: tenant?.headers ?? {}, ...(payload ? { payload } : {}) })
  const put = (externalId: string, body: object, tenant: Tenant = agency) => call('PUT', byExternalId(externalId), body, tenant)
  const publish = async (overrides: Partial<PropertySubmission> & { external_id?: string } = {}) => {
    const created = await call('POST', '/properties', propertyBody(overrides))
    assert.equal(created.statusCode, 201, created.body)
    await runInternalCheck(t.app)
    const published = (await call('GET', `/properties/${created.json<Property>().id}`)).json<Property>()
    assert.equal(published.status_id, 2, JSON.stringify(published.moderation))
    return published
  }
  const catalogueVersionSum = async () =>
    Number((await queryRows<{ sum: string | null }>(t.db, sql`select sum(version)::text as sum from catalogue_versions`))[0]?.sum ?? 0)
  const feedPosition = async (id: number) =>
    (await t.db.select({ position: catalogueChanges.position }).from(catalogueChanges).where(eq(catalogueChanges.listingId, id)))[0]?.position
  const eventsAbout = (id: number) =>
    t.db
      .select({ type: events.type, data: events.data })
      .from(events)
      .where(sql`coalesce(${events.data} ->> 'id', ${events.data} ->> 'property_id')::int = ${id}`)
      .orderBy(asc(events.id))

  describe('POST and PATCH', () => {
    it('stores an external_id given on POST and shows it in the agency’s views: the listing, the list, GET by external id', async () => {
      const externalId = newId()
      const created = await call('POST', '/properties', { ...propertyBody(), external_id: externalId })
      assert.equal(created.statusCode, 201, created.body)
      const property = created.json<Property>()
      assert.equal(property.external_id, externalId)
      assert.equal(property.status_id, 1)

      assert.equal((await call('GET', `/properties/${property.id}`)).json<Property>().external_id, externalId)
      const item = (await call('GET', '/properties?limit=100')).json<PropertyPage>().items.find((candidate) => candidate.id === property.id)
      assert.equal(item?.external_id, externalId)
      const found = await call('GET', byExternalId(externalId))
      assert.equal(found.statusCode, 200, found.body)
      assert.deepEqual(found.json(), (await call('GET', `/properties/${property.id}`)).json())

      const withoutId = await submitProperty(t.app, agency)
      assert.equal(withoutId.external_id, null)
    })

    it('refuses an external_id another listing of the agency has (409 naming it), and lets another agency use the same one', async () => {
      const externalId = newId()
      const first = await call('POST', '/properties', { ...propertyBody(), external_id: externalId })
      assert.equal(first.statusCode, 201, first.body)

      const duplicate = await call('POST', '/properties', { ...propertyBody(), external_id: externalId })
      assert.equal(duplicate.statusCode, 409, duplicate.body)
      assert.ok(duplicate.json<ErrorBody>().detail.includes(`"${externalId}"`), duplicate.body)

      const elsewhere = await call('POST', '/properties', { ...propertyBody(), external_id: externalId }, other)
      assert.equal(elsewhere.statusCode, 201, elsewhere.body)
      assert.equal((await call('GET', byExternalId(externalId))).json<Property>().id, first.json<Property>().id)
      assert.equal((await call('GET', byExternalId(externalId), undefined, other)).json<Property>().id, elsewhere.json<Property>().id)
    })

    it('sets, changes and clears an external_id by PATCH; another listing’s id is a 409 that changes nothing', async () => {
      const [a, b] = [await submitProperty(t.app, agency), await submitProperty(t.app, agency)]
      const [idA, idB] = [newId(), newId()]
      const set = await call('PATCH', `/properties/${a.id}`, { external_id: idA })
      assert.equal(set.statusCode, 200, set.body)
      assert.equal(set.json<Property>().external_id, idA)
      assert.equal((await call('PATCH', `/properties/${b.id}`, { external_id: idB })).statusCode, 200)

      const taken = await call('PATCH', `/properties/${b.id}`, { external_id: idA, price: 1 })
      assert.equal(taken.statusCode, 409, taken.body)
      assert.ok(taken.json<ErrorBody>().detail.includes(`"${idA}"`), taken.body)
      const unchanged = (await call('GET', `/properties/${b.id}`)).json<Property>()
      assert.equal(unchanged.external_id, idB)
      assert.equal(unchanged.price, b.price, 'nothing of the refused PATCH was stored')

      const cleared = await call('PATCH', `/properties/${a.id}`, { external_id: null })
      assert.equal(cleared.statusCode, 200, cleared.body)
      assert.equal(cleared.json<Property>().external_id, null)
      assert.equal((await call('GET', byExternalId(idA))).statusCode, 404)
      // Freed, the id can go to another listing.
      assert.equal((await call('PATCH', `/properties/${b.id}`, { external_id: idA })).json<Property>().external_id, idA)
    })

    it('refuses external ids that are too long, empty, blank at either end, with control characters, or . and .. (which no URL path can name), with 422 naming the field', async () => {
      const listing = await submitProperty(t.app, agency)
      // An id with an invisible character at an end would look exactly like the id without it.
      for (const bad of [
        'x'.repeat(101),
        '',
        ' ',
        ' CRM-1',
        'CRM-1 ',
        '\u200bCRM-1',
        'CRM-1\u200b',
        'CRM-1\u00ad',
        'CRM\n1',
        'CRM\u00001',
        'CRM\u00851',
        '.',
        '..',
      ]) {
        for (const response of [
          await call('POST', '/properties', { ...propertyBody(), external_id: bad }),
          await call('PATCH', `/properties/${listing.id}`, { external_id: bad }),
        ]) {
          assert.equal(response.statusCode, 422, `${JSON.stringify(bad)}: ${response.body}`)
          assert.deepEqual(
            response.json<ValidationErrorBody>().errors.map((error) => error.loc.join('.')),
            ['body.external_id'],
            JSON.stringify(bad),
          )
          // Its rule in words, never the regular expression that checks it.
          if (bad.length > 0 && bad.length <= 100) {
            assert.equal(
              response.json<ValidationErrorBody>().errors[0]?.msg,
              'must be 1 to 100 characters, without control characters, must not begin or end with a space or an invisible character, and must not be . or ..',
              JSON.stringify(bad),
            )
          }
        }
      }
      // 100 characters of any script, spaces inside, slashes: all fine.
      const longest = 'Ж'.repeat(98) + '/1'
      assert.equal((await call('PATCH', `/properties/${listing.id}`, { external_id: longest })).json<Property>().external_id, longest)
    })
  })

  describe('PUT by external id', () => {
    it('creates the listing (201, status 1, Location), then replaces the whole of it (200): fields not sent become null or empty', async () => {
      const externalId = newId()
      const created = await put(externalId, propertyBody({ attributes: { area: '54.5', rooms: '2', furniture: 'Полная' } }))
      assert.equal(created.statusCode, 201, created.body)
      const property = created.json<Property>()
      assert.equal(created.headers.location, `/properties/${property.id}`)
      assert.equal(property.status_id, 1)
      assert.equal(property.external_id, externalId)
      assert.ok(property.owner && property.description && property.location)

      const replaced = await put(externalId, { property_type: 'Квартира', deal_type: 'Долгосрочная аренда', attributes: { area: '40' } })
      assert.equal(replaced.statusCode, 200, replaced.body)
      const after = replaced.json<Property>()
      assert.equal(after.id, property.id)
      assert.equal(after.external_id, externalId)
      assert.equal(after.deal_type, 'Долгосрочная аренда')
      assert.equal(after.price, null)
      assert.equal(after.description, null)
      assert.equal(after.owner, null)
      assert.equal(after.location, null)
      assert.deepEqual(after.attributes, { area: 40 }, 'attributes replaced, not merged')
      assert.deepEqual((await call('GET', `/properties/${property.id}`)).json(), after)
    })

    it('validates as POST does, and refuses an external_id in the body (the path gives it)', async () => {
      const externalId = newId()
      const invalid = await put(externalId, propertyBody({ location: { city_id: 1, district_id: 999_999 }, attributes: { floor: 'high' } }))
      assert.equal(invalid.statusCode, 422, invalid.body)
      assert.deepEqual(
        invalid
          .json<ValidationErrorBody>()
          .errors.map((error) => error.loc.join('.'))
          .sort(),
        ['body.attributes.floor', 'body.location.district_id'],
      )
      const inBody = await put(externalId, { ...propertyBody(), external_id: externalId })
      assert.equal(inBody.statusCode, 422, inBody.body)
      assert.equal((await call('GET', byExternalId(externalId))).statusCode, 404, 'nothing was created')
    })

    it('takes any id percent-encoded in the path: slashes, spaces inside, Cyrillic, 100 characters', async () => {
      for (const externalId of ['объект 12/А', 'a/b/c', '100%', '?#&', 'Ё'.repeat(100)]) {
        const created = await put(externalId, propertyBody())
        assert.equal(created.statusCode, 201, `${externalId}: ${created.body}`)
        assert.equal(created.json<Property>().external_id, externalId)
        assert.equal((await call('GET', byExternalId(externalId))).json<Property>().id, created.json<Property>().id)
      }
      for (const bad of ['x'.repeat(101), ' lead', 'trail ', 'tab\there']) {
        const refused = await put(bad, propertyBody())
        assert.equal(refused.statusCode, 422, `${JSON.stringify(bad)}: ${refused.body}`)
        assert.deepEqual(
          refused.json<ValidationErrorBody>().errors.map((error) => error.loc.join('.')),
          ['path.external_id'],
        )
      }
    })

    it('sends a changed published listing to the check as its revision; the catalogue keeps the approved version', async () => {
      const externalId = newId()
      const body = propertyBody()
      assert.equal((await put(externalId, body)).statusCode, 201)
      await runInternalCheck(t.app)
      const published = (await call('GET', byExternalId(externalId))).json<Property>()
      assert.equal(published.status_id, 2)

      const changed = await put(externalId, { ...body, price: 9_100_000 })
      assert.equal(changed.statusCode, 200, changed.body)
      const revised = changed.json<Property>()
      assert.equal(revised.status_id, 2)
      assert.equal(revised.price, 9_100_000)
      assert.equal(revised.revision?.status, 'pending_review')
      assert.equal((await t.app.inject(`/mls/properties/${published.id}`)).json<{ price: number }>().price, body.price)

      await runInternalCheck(t.app)
      assert.equal((await t.app.inject(`/mls/properties/${published.id}`)).json<{ price: number }>().price, 9_100_000)
    })

    it('changes nothing with an identical PUT: same updated_at, no revision, no check, no catalogue change', async () => {
      const externalId = newId()
      const body = propertyBody({ owner: { name: 'Анна Смирнова', phone: '+7 912 000-11-22' } })
      assert.equal((await put(externalId, body)).statusCode, 201)
      await runInternalCheck(t.app)
      const published = (await call('GET', byExternalId(externalId))).json<Property>()
      const [versions, position, eventCount] = [await catalogueVersionSum(), await feedPosition(published.id), (await eventsAbout(published.id)).length]

      const again = await put(externalId, body)
      assert.equal(again.statusCode, 200, again.body)
      assert.deepEqual(again.json(), published)
      assert.equal(await catalogueVersionSum(), versions)
      assert.equal(await feedPosition(published.id), position)
      assert.equal((await eventsAbout(published.id)).length, eventCount)

      // Through the service, as the feed import calls it: nothing new was stored.
      const tenant: AuthenticatedTenant = { id: agency.tenantId, companyName: 'Агентство', country: 'RU' }
      const result = await t.app.services.properties.putByExternalId(tenant, externalId, body)
      assert.deepEqual(result, { created: false, changed: false, property: published })
      const changed = await t.app.services.properties.putByExternalId(tenant, externalId, { ...body, description: 'Другое описание.' })
      assert.equal(changed.created, false)
      assert.equal(changed.changed, true)
      assert.equal(changed.property.revision?.status, 'pending_review')
    })

    it('refuses to change a closed listing (409), yet answers an identical PUT of it', async () => {
      const externalId = newId()
      const body = propertyBody()
      const { id } = (await put(externalId, body)).json<Property>()
      await runInternalCheck(t.app)
      assert.equal((await call('POST', `/properties/${id}/status`, { status_id: 5 })).statusCode, 200)
      const changed = await put(externalId, { ...body, price: 1 })
      assert.equal(changed.statusCode, 409, changed.body)
      assert.equal((await put(externalId, body)).statusCode, 200)
    })

    it('lets exactly one of two concurrent PUTs of a new id create the listing; the other replaces it', async () => {
      const externalId = newId()
      const answers = await Promise.all([put(externalId, propertyBody({ price: 1_000_000 })), put(externalId, propertyBody({ price: 2_000_000 }))])
      assert.deepEqual(answers.map((answer) => answer.statusCode).sort(), [200, 201], answers.map((answer) => answer.body).join('\n'))
      const ids = new Set(answers.map((answer) => answer.json<Property>().id))
      assert.equal(ids.size, 1)
      const stored = await queryRows<{ count: number }>(
        t.db,
        sql`select count(*)::int as count from properties where tenant_id = ${agency.tenantId} and external_id = ${externalId}`,
      )
      assert.equal(stored[0]?.count, 1)
      const replacer = answers.find((answer) => answer.statusCode === 200)!.json<Property>()
      assert.deepEqual((await call('GET', byExternalId(externalId))).json<Property>().price, replacer.price)
    })

    it('creates in the caller’s agency only: another agency’s listing with the same id is never seen nor touched', async () => {
      const externalId = newId()
      const theirs = (await put(externalId, propertyBody({ price: 3_000_000 }), other)).json<Property>()
      const ours = await put(externalId, propertyBody({ price: 4_000_000 }))
      assert.equal(ours.statusCode, 201, 'a listing of our own, not a replacement of theirs')
      assert.notEqual(ours.json<Property>().id, theirs.id)
      assert.equal((await call('GET', `/properties/${theirs.id}`, undefined, other)).json<Property>().price, 3_000_000)
    })
  })

  describe('GET and DELETE by external id', () => {
    it('deletes the listing with its id (204), then answers 404; another agency’s id answers 404 exactly like a missing one', async () => {
      const externalId = newId()
      const { id } = (await put(externalId, propertyBody())).json<Property>()

      const missing = await call('DELETE', byExternalId('no-such-id'))
      for (const [method, response] of [
        ['GET', await call('GET', byExternalId(externalId), undefined, other)],
        ['DELETE', await call('DELETE', byExternalId(externalId), undefined, other)],
      ] as const) {
        assert.equal(response.statusCode, 404, `${method}: ${response.body}`)
        assert.equal(response.body, missing.body)
      }
      assert.equal((await call('GET', byExternalId(externalId))).statusCode, 200, 'still there after the other agency tried')

      const deleted = await call('DELETE', byExternalId(externalId))
      assert.equal(deleted.statusCode, 204, deleted.body)
      assert.equal((await call('GET', `/properties/${id}`)).statusCode, 404)
      const gone = await call('GET', byExternalId(externalId))
      assert.equal(gone.statusCode, 404)
      assert.equal(gone.json<ErrorBody>().detail, 'Your agency has no listing with this external_id.')
    })

    it('refuses every route without a key or with a wrong one (401)', async () => {
      const wrong = { ...agency, headers: { 'x-api-key': `${agency.apiKey.slice(0, -4)}0000` } }
      for (const tenant of [null, wrong]) {
        for (const method of ['GET', 'PUT', 'DELETE'] as const) {
          const response = await call(method, byExternalId('CRM-1'), method === 'PUT' ? propertyBody() : undefined, tenant)
          assert.equal(response.statusCode, 401, `${method}: ${response.body}`)
          assert.deepEqual(response.json(), { detail: INVALID_API_KEY })
        }
      }
    })

    it('answers an empty id in the path as one breaking the rule, on every method (422 naming path.external_id)', async () => {
      for (const method of ['GET', 'PUT', 'DELETE'] as const) {
        const response = await call(method, byExternalId(''), method === 'PUT' ? propertyBody() : undefined)
        assert.equal(response.statusCode, 422, `${method}: ${response.body}`)
        assert.deepEqual(
          response.json<ValidationErrorBody>().errors.map((error) => error.loc),
          [['path', 'external_id']],
        )
        const anonymous = await call(method, byExternalId(''), method === 'PUT' ? propertyBody() : undefined, null)
        assert.equal(anonymous.statusCode, 401, `${method} without a key: ${anonymous.body}`)
      }
    })

    it('answers a service caller with an invalid id as the route would', async () => {
      const tenant: AuthenticatedTenant = { id: agency.tenantId, companyName: 'Агентство', country: 'RU' }
      await assert.rejects(
        t.app.services.properties.putByExternalId(tenant, ' padded ', propertyBody()),
        (error) => error instanceof ApiError && error.statusCode === 422,
      )
      await assert.rejects(
        t.app.services.properties.getByExternalId(agency.tenantId, 'no-such-id'),
        (error) => error instanceof ApiError && error.statusCode === 404,
      )
      await assert.rejects(
        t.app.services.properties.removeByExternalId(agency.tenantId, 'no-such-id'),
        (error) => error instanceof ApiError && error.statusCode === 404,
      )
    })
  })

  describe('bookkeeping, not listing content', () => {
    it('setting or changing the external id of a published listing sends nothing to the check and leaves the catalogue, its versions and the change feed as they were', async () => {
      const published = await publish()
      const [versions, position, eventCount] = [await catalogueVersionSum(), await feedPosition(published.id), (await eventsAbout(published.id)).length]
      assert.notEqual(position, undefined)

      for (const externalId of [newId(), newId(), null]) {
        const set = await call('PATCH', `/properties/${published.id}`, { external_id: externalId })
        assert.equal(set.statusCode, 200, set.body)
        const after = set.json<Property>()
        assert.equal(after.external_id, externalId)
        assert.deepEqual({ ...after, external_id: null }, { ...published, external_id: null }, 'status, revision and updated_at unchanged')
      }
      await runInternalCheck(t.app)
      assert.equal(await catalogueVersionSum(), versions, 'no catalogue version moved')
      assert.equal(await feedPosition(published.id), position, 'no new change in the feed')
      assert.equal((await eventsAbout(published.id)).length, eventCount, 'no event')

      // The same checks catch a change of content: the description is in the catalogue.
      await call('PATCH', `/properties/${published.id}`, { description: 'Новое описание квартиры.' })
      await runInternalCheck(t.app)
      assert.ok((await catalogueVersionSum()) > versions)
      assert.ok((await feedPosition(published.id))! > position!)
    })

    it('never shows the external id in the public catalogue, the change feed or mls.* events; shows it in property.* events and to operators', async () => {
      const externalId = newId('SECRET-CRM-ID')
      const cursor = (await t.app.inject('/mls/changes/snapshot')).json<{ cursor: string }>().cursor
      const published = await publish({ external_id: externalId })

      const catalogueAnswers = [
        await t.app.inject(`/mls/properties/${published.id}`),
        await t.app.inject('/mls/properties?limit=100'),
        await t.app.inject(`/mls/changes?after=${cursor}&limit=100`),
      ]
      for (const answer of catalogueAnswers) {
        assert.equal(answer.statusCode, 200, answer.body)
        assert.ok(!answer.body.includes('SECRET-CRM-ID') && !answer.body.includes('external_id'), answer.body)
      }
      assert.ok((await t.app.inject(`/mls/changes?after=${cursor}&limit=100`)).json<ChangesPage>().items.some((item) => item.id === published.id))

      const sent = await eventsAbout(published.id)
      const mls = sent.filter((event) => event.type.startsWith('mls.'))
      assert.ok(mls.length > 0)
      for (const event of mls) assert.ok(!JSON.stringify(event.data).includes('SECRET-CRM-ID'), event.type)
      const agencyEvent = sent.find((event) => event.type === 'property.published')
      assert.equal((agencyEvent?.data as { external_id?: unknown } | undefined)?.external_id, externalId)

      const operators = await t.app.inject({ url: '/admin/properties?status_id=2&limit=100', headers: adminHeaders })
      assert.equal(operators.statusCode, 200, operators.body)
      assert.equal(operators.json<ListingUnderReviewPage>().items.find((item) => item.id === published.id)?.external_id, externalId)
    })
  })
})
