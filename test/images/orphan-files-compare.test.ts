import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { compareStorageWithRows, type KeyComparison, type NamedKey } from '../../src/modules/images/orphan-files.js'
import type { StoredFile } from '../../src/modules/images/storage.js'

const file = (key: string): StoredFile => ({ key, modifiedAt: new Date(0) })
const named = (key: string, imageId = 1): NamedKey => ({ key, imageId, createdAt: new Date(0) })

async function* pages<T>(...list: T[][]): AsyncGenerator<T[]> {
  for (const page of list) yield page
}

async function compare(files: StoredFile[][], rows: NamedKey[][]): Promise<{ listed: number; unnamed: string[]; missing: string[] }[]> {
  const found: KeyComparison[] = []
  for await (const comparison of compareStorageWithRows(pages(...files), pages(...rows))) found.push(comparison)
  return found.map((comparison) => ({
    listed: comparison.listed,
    unnamed: comparison.unnamed.map((item) => item.key),
    missing: comparison.missing.map((item) => item.key),
  }))
}

describe('comparing the storage with the rows', () => {
  it('finds, page by page, files no row names and keys no file has, across pages of either side', async () => {
    assert.deepEqual(
      await compare(
        [[file('a'), file('c')], [file('e')]],
        [
          [named('a'), named('b')],
          [named('d'), named('f'), named('g')],
        ],
      ),
      [
        { listed: 2, unnamed: ['c'], missing: ['b'] },
        { listed: 1, unnamed: ['e'], missing: ['d'] },
        { listed: 0, unnamed: [], missing: ['f', 'g'] },
      ],
    )
  })

  it('matches every file to its row when nothing is amiss', async () => {
    assert.deepEqual(await compare([[file('a'), file('a-400')], [file('b')]], [[named('a')], [named('a-400'), named('b')]]), [
      { listed: 2, unnamed: [], missing: [] },
      { listed: 1, unnamed: [], missing: [] },
    ])
  })

  it('reports every row of an empty storage, and every file of a table with no rows', async () => {
    assert.deepEqual(await compare([], [[named('a'), named('b')]]), [{ listed: 0, unnamed: [], missing: ['a', 'b'] }])
    assert.deepEqual(await compare([[file('a')]], []), [{ listed: 1, unnamed: ['a'], missing: [] }])
  })

  it('compares keys by their bytes, as S3 and collation "C" order them', async () => {
    // 'Z' (0x5A) sorts before 'a' (0x61) in bytes, though not in most languages' collations.
    assert.deepEqual(await compare([[file('Z'), file('a')]], [[named('Z'), named('a')]]), [{ listed: 2, unnamed: [], missing: [] }])
  })

  it('refuses a listing out of byte order, where files would look unnamed', async () => {
    await assert.rejects(compare([[file('b'), file('a')]], [[named('a'), named('b')]]), /out of byte order/)
  })
})
