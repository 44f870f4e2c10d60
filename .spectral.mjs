// Spectral ruleset for the two OpenAPI documents (`npm run lint:openapi`): the `spectral:oas`
// rules and the OWASP API security rules, loaded from node_modules (no network needed).
// Every rule switched off, or off for some paths, is listed below with the reason.
import { tmpdir } from 'node:os'
import { relative } from 'node:path'
import process from 'node:process'
import { oas } from '@stoplight/spectral-rulesets'
import { schema } from '@stoplight/spectral-functions'
import owasp from '@stoplight/spectral-owasp-ruleset'

/** Paths of the public document that need no key, by design: the catalogue, reference data, registration, health. */
const publicPaths = [
  '/',
  '/healthz',
  '/readyz',
  '/metrics',
  '/property-types',
  '/deal-types',
  '/property-statuses',
  '/cities',
  '/cities/{id}',
  '/districts',
  '/districts/{id}',
  '/residential-complexes',
  '/residential-complexes/{id}',
  '/attributes',
  '/tenants/register',
  '/tenants/register/{request_code}',
  '/mls/properties',
  '/mls/properties/{id}',
  '/mls/clusters',
  '/mls/changes',
  '/mls/changes/snapshot',
]

/** Public paths that are not rate limited: small, cacheable reference data and the health probes. */
const unlimitedPaths = publicPaths.filter((path) => !path.startsWith('/tenants/') && !path.startsWith('/mls/'))

/** Operations that take no input at all, so no request of theirs can be invalid (no 400 or 422). */
const inputlessOperations = [
  '/',
  '/healthz',
  '/readyz',
  '/metrics',
  '/property-types',
  '/deal-types',
  '/property-statuses',
  '/attributes',
  '/tenants/me',
  '/webhooks#get',
  '/mls/changes/snapshot',
]

/** Lists whose length is set by the data, not by the request, and which are not paged. */
const unpagedLists = ['/cities', '/districts', '/residential-complexes', '/property-images']

// Overrides find documents by their path relative to this file (the repository's root, where
// npm runs): within the repository, or under the OS temp folder, where `npm run lint:openapi`
// exports them.
const roots = ['**', `${relative(process.cwd(), tmpdir())}/**`]
/** @param {string} path */
const pointer = (path) => path.replaceAll('~', '~0').replaceAll('/', '~1').replaceAll('{', '%7B').replaceAll('}', '%7D')
/** @param {string} path @param {string} [method] */
const publicDocument = (path, method) => roots.map((root) => `${root}/openapi.json#/paths/${pointer(path)}${method ? `/${method}` : ''}`)
/** @param {string} entry a path, with `#method` for one operation of it */
const operationOf = (entry) => {
  const [path, method] = entry.split('#')
  return publicDocument(path, method)
}

export default {
  extends: [[oas, 'recommended'], owasp],
  rules: {
    // The OWASP rule asks for RateLimit-* on every 2xx and 4xx answer of every operation. Here
    // only some routes are rate limited, and an API key is checked before its request is
    // counted, so a 401 carries none. This rule asks for what is true: on an operation whose
    // 429 is a counted limit's (it declares RateLimit-Limit), every 2xx and 4xx answer but the
    // 401 declares RateLimit-Limit, RateLimit-Remaining and RateLimit-Reset. The operators'
    // routes answer 429 only to an address past its failed key checks, with Retry-After alone.
    'owasp:api4:2023-rate-limit': 'off',
    'rate-limit-headers': {
      description: 'Every answer of a rate-limited operation, once the request is counted, declares the RateLimit-* headers.',
      message: '{{error}}',
      severity: 'error',
      given:
        "$.paths[*][?(@ && @.responses && @.responses['429'] && @.responses['429'].headers && @.responses['429'].headers['RateLimit-Limit'])].responses[?(@property.match(/^(2|4)/) && @property != '401')]",
      then: {
        field: 'headers',
        function: schema,
        functionOptions: { schema: { type: 'object', required: ['RateLimit-Limit', 'RateLimit-Remaining', 'RateLimit-Reset'] } },
      },
    },
    // CORS is one policy per group of routes (public: any origin; keyed: CORS_ORIGINS), told
    // in docs/api.md; Access-Control-* on every response of the document would repeat it.
    'owasp:api8:2023-define-cors-origin': 'off',
    // Ids are integers by the interface contract. Guessing one gains nothing: every resource of
    // an agency is looked up with the caller's key, and another agency's id answers 404.
    'owasp:api1:2023-no-numeric-ids': 'off',
    // Free text (names, addresses, descriptions, messages) has no format or pattern to give;
    // every string has a maxLength instead, which `owasp:api4:2023-string-limit` checks.
    'owasp:api4:2023-string-restricted': 'off',
    // The server URL is the deployment's PUBLIC_BASE_URL: https in production. The exported
    // documents are built for a local run, http://localhost:3000.
    'owasp:api8:2023-no-server-http': 'off',
  },
  overrides: [
    {
      // Public by design: the catalogue and reference data are for anyone, registration is how
      // a key is obtained, and the health probes are for orchestrators.
      files: publicPaths.flatMap((path) => publicDocument(path)),
      rules: {
        'owasp:api2:2023-read-restricted': 'off',
        'owasp:api2:2023-write-restricted': 'off',
        'owasp:api8:2023-define-error-responses-401': 'off',
      },
    },
    {
      // Not rate limited (reference data is small and cached by clients; probes must always answer).
      files: unlimitedPaths.flatMap((path) => publicDocument(path)),
      rules: { 'owasp:api4:2023-rate-limit-responses-429': 'off' },
    },
    {
      files: inputlessOperations.flatMap(operationOf),
      rules: { 'owasp:api8:2023-define-error-validation': 'off' },
    },
    {
      // Unpaged lists: as long as the data (cities, districts, complexes, an agency's photos).
      // The 422's `errors` lists every problem of the request, one per field.
      files: [
        ...unpagedLists.flatMap((path) => publicDocument(path, 'get').map((operation) => `${operation}/responses/200/content/application~1json/schema`)),
        ...roots.map((root) => `${root}/*openapi.json#/components/schemas/ValidationError/properties/errors`),
      ],
      rules: { 'owasp:api4:2023-array-limit': 'off' },
    },
    {
      // An attribute's text value is checked against the attribute catalogue (numbers, booleans,
      // closed lists), which bounds it and says what is wrong; a maxLength would only say less.
      files: roots.map((root) => `${root}/openapi.json#/components/schemas/AttributeValue/anyOf/0`),
      rules: { 'owasp:api4:2023-string-limit': 'off' },
    },
  ],
}
