/**
 * The ceilings (a) and (a1): a bare Fastify with the same type provider and the SAME response
 * schemas as the catalogue, answering fixed data taken from the real catalogue (so the same
 * Cyrillic names and sizes) with no database, no hooks and no logging. What the service gets
 * of this is what its own work costs.
 */
import { readFileSync } from 'node:fs'
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import Fastify from 'fastify'
import { CatalogueDetail, CataloguePage } from '../src/modules/catalogue/catalogue.schemas.js'
import { announce, closeWithParent } from './announce.js'
import type { CeilingFixtures } from './fixtures.js'

const file = process.env.BENCH_FIXTURES
if (!file) throw new Error('BENCH_FIXTURES must name the JSON file with the fixed page and item')
const fixtures = JSON.parse(readFileSync(file, 'utf8')) as CeilingFixtures

const app = Fastify({ logger: false }).withTypeProvider<TypeBoxTypeProvider>()
app.get('/page', { schema: { response: { 200: CataloguePage } } }, async () => fixtures.page)
app.get('/item', { schema: { response: { 200: CatalogueDetail } } }, async () => fixtures.item)
await app.listen({ port: 0, host: '127.0.0.1' })

closeWithParent(() => app.close())

const address = app.server.address()
announce(typeof address === 'object' && address ? address.port : 0)
