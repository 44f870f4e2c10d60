import { execFileSync } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import openapiTS, { astToString, COMMENT_HEADER, type OpenAPI3, type SchemaObject } from 'openapi-typescript'
import ts from 'typescript'

/**
 * Regenerates the types of the TypeScript client (clients/typescript/src/schema.ts) from the
 * OpenAPI document the service serves. CI runs it and fails when the committed file differs.
 * Usage: tsx scripts/generate-client.ts
 */
const root = path.resolve(import.meta.dirname, '..')
const target = path.join(root, 'clients/typescript/src/schema.ts')

const workDir = mkdtempSync(path.join(tmpdir(), 'mls-client-'))
try {
  // The document comes from the exporter in its own process, exactly as it writes it for any other tool.
  execFileSync(process.execPath, ['--import', 'tsx', path.join(root, 'scripts/export-openapi.ts'), workDir], { cwd: root, stdio: 'inherit' })
  const document = JSON.parse(readFileSync(path.join(workDir, 'openapi.json'), 'utf8')) as OpenAPI3
  // A field with a default may be left out of a request (the service fills it in), so defaults
  // do not make fields required.
  const ast = await openapiTS(document, { transform: binaryAsBlob, defaultNonNullable: false })
  const header = COMMENT_HEADER.replace(' */', ' * Regenerate it with `npm run generate:client` at the root of the repository.\n */')
  writeFileSync(target, header + astToString(ast))
  console.log(`wrote ${path.relative(root, target)}`)
} finally {
  rmSync(workDir, { recursive: true, force: true })
}

/**
 * Uploaded files (`format: binary`) are typed as Blob, so a caller passes a Blob or File
 * where openapi-typescript would otherwise ask for a string.
 */
function binaryAsBlob(schema: SchemaObject): ts.TypeNode | undefined {
  if (!('format' in schema) || schema.format !== 'binary') return undefined
  const blob = ts.factory.createTypeReferenceNode('Blob')
  const nullable = Array.isArray(schema.type) && schema.type.includes('null')
  return nullable ? ts.factory.createUnionTypeNode([blob, ts.factory.createLiteralTypeNode(ts.factory.createNull())]) : blob
}
