import assert from 'node:assert/strict'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { after, before, describe, it } from 'node:test'
import S3rver from 's3rver'
import { LocalStorage, S3Storage, type Storage, type StoredFile } from '../../src/modules/images/storage.js'

async function pagesOf(storage: Storage, prefix: string, pageSize: number): Promise<StoredFile[][]> {
  const pages: StoredFile[][] = []
  for await (const page of storage.list(prefix, pageSize)) pages.push(page)
  return pages
}

/** Keys put in an order of their own, so the listing's order is the driver's. */
const KEYS = ['photos/b.jpg', 'photos/a.jpg', 'other/c.jpg', 'photos/a-400.jpg', 'photos/a.jpg.partial']

function listsInByteOrder(open: () => Storage, nested: boolean) {
  it('lists the keys under a prefix in pages, in byte order, with their modification time', async () => {
    const storage = open()
    const keys = nested ? [...KEYS, 'photos/a/inside.jpg'] : KEYS
    const started = Date.now() - 60_000
    for (const key of keys) await storage.put(key, Buffer.from(key), 'image/jpeg')

    const pages = await pagesOf(storage, 'photos/', 2)
    assert.ok(pages.every((page) => page.length <= 2))
    // '-' < '.' < '/' in bytes: a folder's keys fall after its name's siblings with those characters.
    const expected = ['photos/a-400.jpg', 'photos/a.jpg', 'photos/a.jpg.partial', ...(nested ? ['photos/a/inside.jpg'] : []), 'photos/b.jpg']
    assert.deepEqual(
      pages.flat().map((file) => file.key),
      expected,
    )
    for (const file of pages.flat()) assert.ok(file.modifiedAt instanceof Date && file.modifiedAt.getTime() > started, file.key)
    assert.deepEqual(await pagesOf(storage, 'nothing/', 2), [])
  })
}

describe('listing stored files', () => {
  describe('local storage', () => {
    let root: string
    before(() => (root = mkdtempSync(path.join(tmpdir(), 'mls-media-'))))
    after(() => rmSync(root, { recursive: true, force: true }))
    listsInByteOrder(() => new LocalStorage(root), true)
  })

  describe('S3-compatible storage', () => {
    let s3: S3rver
    let directory: string
    let storage: S3Storage | undefined
    const bucket = 'mls-photos'
    before(async () => {
      directory = mkdtempSync(path.join(tmpdir(), 'mls-s3-'))
      s3 = new S3rver({ address: '127.0.0.1', port: 0, silent: true, directory, configureBuckets: [{ name: bucket, configs: [] }] })
      const { port } = await s3.run()
      storage = new S3Storage({
        bucket,
        endpoint: `http://127.0.0.1:${port}`,
        region: 'us-east-1',
        accessKeyId: 'S3RVER',
        secretAccessKey: 'S3RVER',
        publicUrl: `http://127.0.0.1:${port}/${bucket}`,
      })
    })
    after(async () => {
      storage?.destroy()
      await s3.close()
      rmSync(directory, { recursive: true, force: true })
    })
    // s3rver lists a key inside a folder-like prefix out of S3's order; the service's keys have none.
    listsInByteOrder(() => storage!, false)
  })
})
