import swaggerUi from '@fastify/swagger-ui'
import type { FastifyInstance } from 'fastify'
import fp from 'fastify-plugin'
import { SERVICE_NAME, SERVICE_VERSION } from '../lib/service-info.js'
import { registerOpenApiDocument } from '../openapi/document.js'
import { webhooksSection } from '../openapi/webhooks.js'
import { ADMIN_KEY_HEADER, API_KEY_HEADER, adminKeySecurity } from './auth.js'

declare module 'fastify' {
  interface FastifyInstance {
    /** The operators' OpenAPI document, decorated in the admin scope only. */
    adminSwagger?: () => unknown
  }
}

const description = `
Open multiple listing service (MLS) for real-estate agencies.

**Getting a key.** Register with \`POST /tenants/register\`, keep the \`request_code\`, and read the
request's status with \`GET /tenants/register/{request_code}?email=\`. Once an operator approves it,
that response carries your \`api_key\`; send it as the \`X-API-Key\` header.

**Conventions.** Errors are always JSON \`{"detail": "..."}\`; validation errors (422) add
\`errors: [{loc, msg}]\`. A resource of another agency answers 404, exactly like one that does not exist.
Lists take \`limit\` (1–100, default 50) and \`offset\`; values outside are a 422, never clamped.
Property timestamps carry a numeric offset (\`+00:00\`), image timestamps end in \`Z\`.
Rate limits answer 429 with \`Retry-After\` and \`RateLimit-*\` headers. An address with too many failed
key checks or unknown routes in a minute gets 429 with \`Retry-After\` on the routes behind a key.

**Events.** Subscriptions (\`POST /webhooks\`) receive the events of the \`webhooks\` section, signed
as Standard Webhooks describes.
`.trim()

/** The interactive reference's policy; every other answer gets `default-src 'none'` (browser-policy.ts). */
const DOCS_CSP =
  "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; font-src 'self' data:; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

const info = { title: 'Open MLS API', version: SERVICE_VERSION, contact: { name: SERVICE_NAME } }
const ADMIN_PREFIX = '/admin/'
const isAdminRoute = (url: string) => url.startsWith(ADMIN_PREFIX)

const server = (app: FastifyInstance, audience: string, internal: boolean) => ({
  url: app.config.publicBaseUrl,
  description: `This deployment (PUBLIC_BASE_URL; http://localhost:3000 when run locally), for ${audience}.`,
  'x-internal': internal,
})

/**
 * `/openapi.json` (OpenAPI 3.1, generated from the route schemas) and `/docs` (interactive
 * reference): the public and tenant API. The admin routes have a document of their own.
 */
export default fp(
  async function docsPlugin(app: FastifyInstance) {
    await registerOpenApiDocument(app, {
      decorator: 'swagger',
      info: { ...info, description },
      servers: [server(app, 'agencies and the public', false)],
      securitySchemes: {
        ApiKey: { type: 'apiKey', in: 'header', name: API_KEY_HEADER, description: 'The tenant’s API key (`mls_live_…`).' },
      },
      tags: [
        { name: 'Registration', description: 'Becoming a tenant and getting an API key.' },
        { name: 'API keys', description: 'An agency’s own API keys: list, create (rotation without downtime), revoke.' },
        { name: 'Properties', description: 'An agency’s own listings: submit, change, withdraw.' },
        { name: 'Images', description: 'Photos of an agency’s properties: upload, add by URL, order, delete.' },
        { name: 'Feeds', description: 'An agency’s CRM export (Yandex.Realty XML), imported on a schedule, with a report per run.' },
        { name: 'Webhooks', description: 'Event subscriptions, signed deliveries (Standard Webhooks), test events, delivery logs.' },
        { name: 'Catalogue', description: 'The public MLS catalogue: published listings, no key needed, never owner data.' },
        { name: 'Reference', description: 'Public dictionaries: types, statuses, places, the attribute catalogue.' },
        { name: 'Operations', description: 'The front door, health and readiness.' },
      ],
      describes: (url) => !isAdminRoute(url),
      webhooks: webhooksSection,
    })
    await app.register(swaggerUi, {
      routePrefix: '/docs',
      // The page's own scripts, styles and images (swagger-ui's CSS draws with data: URLs); its
      // calls go to this origin only.
      staticCSP: DOCS_CSP,
      // "Try it out" calls the origin the page was opened at (localhost or 127.0.0.1, a proxy's
      // name or the process's), never an absolute URL that may not be that origin.
      transformSpecification: (document: Record<string, unknown>) => ({ ...document, servers: [{ url: '/', description: 'This service.' }] }),
    })
    app.get('/openapi.json', { schema: { hide: true } }, async () => app.swagger())
  },
  { name: 'docs', decorators: { fastify: ['config'] } },
)

/**
 * `GET /admin/openapi.json`: the operators' routes in a document of their own. Registered
 * first in the admin scope, so it collects that scope's routes and sits behind its key check.
 */
export const adminDocsPlugin = fp(
  async function adminDocsPlugin(app: FastifyInstance) {
    await registerOpenApiDocument(app, {
      decorator: 'adminSwagger',
      info: { ...info, title: 'Open MLS admin API', description: `Operator routes of Open MLS, behind the \`X-Admin-Key\` header (ADMIN_API_KEY).` },
      servers: [server(app, 'operators', true)],
      securitySchemes: {
        AdminKey: { type: 'apiKey', in: 'header', name: ADMIN_KEY_HEADER, description: 'The operators’ key, ADMIN_API_KEY.' },
      },
      tags: [{ name: 'Admin', description: 'Registration requests, agencies (suspension, API keys), places and listings under review.' }],
      describes: isAdminRoute,
    })
    app.get(`${ADMIN_PREFIX}openapi.json`, { schema: { hide: true, security: adminKeySecurity } }, async () => app.adminSwagger!())
  },
  { name: 'admin-docs', decorators: { fastify: ['config'] } },
)
