import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { cities, districts, residentialComplexes } from '../../src/db/schema.js'
import { buildTestApp, type TestApp } from '../helpers/app.js'
import { adminHeaders, createTenant, registrationBody } from '../helpers/factories.js'
import type { ApiKeyPage, ValidationErrorBody } from '../helpers/responses.js'

/**
 * Names that break a line or hide on the page: the Unicode line and paragraph separators, NEL
 * and the other C1 control characters (U+0080 to U+009F), alone or inside a name.
 */
const NOT_ONE_LINE = ['CRM\u2028export', 'CRM\u2029export', 'CRM\u0085export', '\u0085', '\u0090\u009f']
/** The name with its invisible characters as escapes, so a failure shows which one passed. */
const spelled = (text: string) =>
  [...text].map((c) => (/[\u0020-\u007e\u0400-\u04ff]/u.test(c) ? c : `\\u${c.codePointAt(0)!.toString(16).padStart(4, '0')}`)).join('')

describe('names on one line, everywhere a name is given', () => {
  let t: TestApp
  before(async () => {
    t = await buildTestApp()
  })
  after(() => t.close())

  it('refuses an API key name that is not one line, from the agency and from an operator, creating no key', async () => {
    const agency = await createTenant(t.app)
    const accepted: string[] = []
    for (const name of NOT_ONE_LINE) {
      const answers = [
        ['agency', await t.app.inject({ method: 'POST', url: '/tenants/me/api-keys', headers: agency.headers, payload: { name } })],
        ['operator', await t.app.inject({ method: 'POST', url: `/admin/tenants/${agency.tenantId}/api-keys`, headers: adminHeaders, payload: { name } })],
      ] as const
      for (const [who, response] of answers) {
        if (response.statusCode !== 422) accepted.push(`${who} "${spelled(name)}": ${response.statusCode}`)
        else
          assert.deepEqual(response.json<ValidationErrorBody>().errors[0], {
            loc: ['body', 'name'],
            msg: 'must be one line of text, without tabs or other control characters',
          })
      }
    }
    assert.deepEqual(accepted, [])
    const keys = await t.app.inject({ url: `/admin/tenants/${agency.tenantId}/api-keys`, headers: adminHeaders })
    assert.equal(keys.json<ApiKeyPage>().total, 1, 'only the key issued on approval')
  })

  it('refuses a registration whose company or contact name is not one line', async () => {
    const accepted: string[] = []
    for (const value of NOT_ONE_LINE) {
      for (const field of ['company_name', 'contact_name'] as const) {
        const response = await t.app.inject({ method: 'POST', url: '/tenants/register', payload: registrationBody({ [field]: value }) })
        if (response.statusCode !== 422) accepted.push(`${field} "${spelled(value)}": ${response.statusCode}`)
        else assert.deepEqual(response.json<ValidationErrorBody>().errors[0]?.loc, ['body', field])
      }
    }
    assert.deepEqual(accepted, [])
  })

  it('refuses a place name or region that is not one line, storing nothing', async () => {
    const counts = async () => [await t.db.$count(cities), await t.db.$count(districts), await t.db.$count(residentialComplexes)]
    const before = await counts()
    const cases: [string, object, string[]][] = [
      ['/admin/cities', { name: 'Тверь\u0085Центр', country: 'RU' }, ['body', 'name']],
      ['/admin/cities', { name: 'Тверь\u2028Центр', country: 'RU' }, ['body', 'name']],
      ['/admin/cities', { name: 'Ишим', country: 'RU', region: 'Тюменская\u2028область' }, ['body', 'region']],
      ['/admin/cities', { name: 'Ишим\u009bX', country: 'RU' }, ['body', 'name']],
      ['/admin/districts', { city_id: 1, name: 'Новый\u2028округ' }, ['body', 'name']],
      ['/admin/residential-complexes', { city_id: 1, name: 'Новый\u2029ЖК' }, ['body', 'name']],
    ]
    for (const [url, payload, loc] of cases) {
      const response = await t.app.inject({ method: 'POST', url, headers: adminHeaders, payload })
      assert.equal(response.statusCode, 422, `${url} ${spelled(JSON.stringify(payload))}: ${response.statusCode} ${response.body}`)
      assert.deepEqual(response.json<ValidationErrorBody>().errors[0]?.loc, loc)
    }
    assert.deepEqual(await counts(), before)
  })
})
