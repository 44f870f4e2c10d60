import { Ajv, type ErrorObject, type Options } from 'ajv'
import addFormatsModule from 'ajv-formats'
import type { FastifyInstance, FastifyRequest, FastifySchemaValidationError } from 'fastify'
import { describeFieldErrors, type FieldError } from '../lib/errors.js'

// ajv-formats is CommonJS with a default export.
const addFormats = addFormatsModule as unknown as typeof addFormatsModule.default

const commonOptions: Options = {
  allErrors: true, // a client fixing a form wants every problem at once
  useDefaults: true,
  removeAdditional: false, // unknown fields are rejected (D2), never silently dropped
  strict: true,
  strictRequired: false,
  verbose: true, // findings carry their schema, for `x-message`
}

/** A schema may say in `x-message` how to describe its failure better than ajv would. */
function withMessages(ajv: Ajv): Ajv {
  ajv.addVocabulary(['x-message'])
  return ajv
}

/**
 * Request validation with two compilers: bodies are taken as typed (a `"5"` is not a number
 * unless the schema says so), while path and query strings, which are text by nature,
 * are coerced to the schema's types.
 */
export function installValidators(app: FastifyInstance): void {
  const bodyAjv = withMessages(addFormats(new Ajv({ ...commonOptions, coerceTypes: false })))
  const textAjv = withMessages(addFormats(new Ajv({ ...commonOptions, coerceTypes: 'array' })))
  app.setValidatorCompiler(({ schema, httpPart }) => (httpPart === 'body' ? bodyAjv : textAjv).compile(schema))
}

/** preValidation hook for routes whose body is all optional: a bare POST counts as `{}`. */
export async function allowEmptyBody(request: FastifyRequest): Promise<void> {
  request.body ??= {}
}

const locationOfPart: Record<string, string> = {
  body: 'body',
  querystring: 'query',
  params: 'path',
  headers: 'header',
}

/** Turns ajv's findings into the `errors` list and `detail` sentence of a 422 (D2). */
export function describeValidationFailure(
  validation: FastifySchemaValidationError[],
  context: string | undefined,
): { detail: string; errors: FieldError[] } {
  const part = locationOfPart[context ?? 'body'] ?? 'body'
  const byLocation = new Map<string, { loc: (string | number)[]; findings: ErrorObject[] }>()
  for (const finding of validation as ErrorObject[]) {
    const loc = [part, ...pathSegments(finding)]
    const key = JSON.stringify(loc)
    const entry = byLocation.get(key) ?? { loc, findings: [] }
    entry.findings.push(finding)
    byLocation.set(key, entry)
  }
  const groups = [...byLocation.values()]
  // A union (`owner: object | null`) fails as a whole when something inside it fails; the
  // finding inside says what is wrong, so the union's own complaint is dropped.
  const explained = groups.filter(
    (group) =>
      !group.findings.some((finding) => finding.keyword === 'anyOf') ||
      !groups.some((other) => other !== group && other.loc.length > group.loc.length && group.loc.every((part, i) => other.loc[i] === part)),
  )
  const errors = explained.map(({ loc, findings }) => ({ loc, msg: messageFor(findings) }))
  return { detail: describeFieldErrors(errors), errors }
}

function pathSegments(finding: ErrorObject): (string | number)[] {
  const segments: (string | number)[] = finding.instancePath
    .split('/')
    .slice(1)
    .map((segment) => segment.replace(/~1/g, '/').replace(/~0/g, '~'))
    .map((segment) => (/^\d+$/.test(segment) ? Number(segment) : segment))
  const params = finding.params as Record<string, unknown>
  if (finding.keyword === 'required') segments.push(String(params.missingProperty))
  if (finding.keyword === 'additionalProperties') segments.push(String(params.additionalProperty))
  return segments
}

function messageFor(findings: ErrorObject[]): string {
  const first = findings[0]!
  if (first.keyword === 'required') return 'is required'
  if (first.keyword === 'additionalProperties') return 'is not an allowed field'
  if (first.keyword === 'enum') {
    const allowed = (first.params as { allowedValues: unknown[] }).allowedValues
    return `must be one of: ${allowed.map((value) => JSON.stringify(value)).join(', ')}`
  }
  // A union (anyOf) reports each branch separately; say once what would have been accepted.
  const union = findings.find((finding) => finding.keyword === 'anyOf')
  if (union) {
    const custom: unknown = (union.parentSchema)?.['x-message']
    if (typeof custom === 'string') return custom
    const alternatives = findings.flatMap((finding) => {
      const params = finding.params as Record<string, unknown>
      if (finding.keyword === 'type') return [String(params.type)]
      if (finding.keyword === 'const') return [JSON.stringify(params.allowedValue)]
      return []
    })
    return alternatives.length > 0 ? `must be ${[...new Set(alternatives)].join(' or ')}` : 'has an invalid value'
  }
  return first.message ?? 'is invalid'
}
