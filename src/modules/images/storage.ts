/**
 * Where photo files live (`STORAGE_DRIVER`): one small interface, two drivers. Keys are
 * chosen by the service (`photos/<random>.<ext>`), never by the client. Rows keep keys, not
 * URLs, so moving the files behind a CDN (S3_PUBLIC_URL) changes no stored row.
 */
import type { Dirent } from 'node:fs'
import { mkdir, readdir, rename, rm, stat, writeFile } from 'node:fs/promises'
import path from 'node:path'
import { DeleteObjectCommand, ListObjectsCommand, PutObjectCommand, S3Client } from '@aws-sdk/client-s3'
import type { Config, S3Config } from '../../config.js'

export interface StoredFile {
  key: string
  modifiedAt: Date
}

export interface Storage {
  put(key: string, body: Buffer, contentType: string): Promise<void>
  /** Removes the files; a missing one is not an error. */
  remove(keys: readonly string[]): Promise<void>
  /**
   * The files whose keys start with `prefix`, in pages of at most `pageSize`, keys in
   * ascending byte order (as S3 lists them), so a listing can be walked beside sorted rows.
   */
  list(prefix: string, pageSize?: number, signal?: AbortSignal): AsyncIterable<StoredFile[]>
}

/** S3's largest page, and the default of both drivers. */
const LIST_PAGE_SIZE = 1000

/** Orders keys by their UTF-8 bytes, as S3 and PostgreSQL's collation "C" do. */
export function compareKeys(a: string, b: string): number {
  return Buffer.compare(Buffer.from(a), Buffer.from(b))
}

/** Files stored a year in browsers and CDNs: a key is never reused for other bytes. */
export const MEDIA_CACHE_CONTROL = 'public, max-age=31536000, immutable'

/** Files under `DATA_DIR/media`, served by the API itself at `/media/<key>`. */
export class LocalStorage implements Storage {
  constructor(readonly root: string) {}

  async put(key: string, body: Buffer, _contentType: string): Promise<void> {
    const file = this.pathOf(key)
    await mkdir(path.dirname(file), { recursive: true })
    // Written aside, then renamed: a reader never sees half a file.
    const partial = `${file}.partial`
    await writeFile(partial, body)
    await rename(partial, file)
  }

  async remove(keys: readonly string[]): Promise<void> {
    await Promise.all(keys.map((key) => rm(this.pathOf(key), { force: true })))
  }

  async *list(prefix: string, pageSize = LIST_PAGE_SIZE): AsyncIterable<StoredFile[]> {
    let page: StoredFile[] = []
    for await (const file of this.walk('', prefix)) {
      page.push(file)
      if (page.length >= pageSize) {
        yield page
        page = []
      }
    }
    if (page.length > 0) yield page
  }

  /**
   * The files under the folder of key `folder` (`''` or ending in `/`) in key order. A folder
   * sorts as its name and a slash, which is where its files' keys fall among its siblings.
   * A file that goes while it is listed is left out.
   */
  private async *walk(folder: string, prefix: string): AsyncGenerator<StoredFile> {
    let entries: Dirent[]
    try {
      entries = await readdir(this.pathOf(folder), { withFileTypes: true })
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return
      throw error
    }
    const keyed = entries
      .filter((entry) => entry.isDirectory() || entry.isFile())
      .map((entry) => ({ key: `${folder}${entry.name}${entry.isDirectory() ? '/' : ''}`, isFolder: entry.isDirectory() }))
      .sort((a, b) => compareKeys(a.key, b.key))
    for (const { key, isFolder } of keyed) {
      if (isFolder) {
        if (key.startsWith(prefix) || prefix.startsWith(key)) yield* this.walk(key, prefix)
        continue
      }
      if (!key.startsWith(prefix)) continue
      try {
        yield { key, modifiedAt: (await stat(this.pathOf(key))).mtime }
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error
      }
    }
  }

  private pathOf(key: string): string {
    return path.join(this.root, ...key.split('/'))
  }
}

/**
 * How long an S3 request may take, and how many times the SDK makes it: a store that accepts
 * requests and never answers holds an upload (and its place in the photo queue), a deletion or
 * the orphan sweep at most about twice this, never for good. A stored photo is a few MB.
 */
const S3_CONNECT_TIMEOUT_MS = 5_000
const S3_REQUEST_TIMEOUT_MS = 10_000
const S3_ATTEMPTS = 2

/** Any S3-compatible store through the AWS SDK; URLs from S3_PUBLIC_URL. */
export class S3Storage implements Storage {
  private readonly client: S3Client

  constructor(private readonly s3: S3Config) {
    this.client = new S3Client({
      region: s3.region,
      ...(s3.endpoint ? { endpoint: s3.endpoint, forcePathStyle: true } : {}),
      ...(s3.accessKeyId && s3.secretAccessKey ? { credentials: { accessKeyId: s3.accessKeyId, secretAccessKey: s3.secretAccessKey } } : {}),
      // Checksums only where S3 requires them: several S3-compatible stores reject the SDK's
      // default CRC32 headers, and the bodies here are small buffers sent whole.
      requestChecksumCalculation: 'WHEN_REQUIRED',
      responseChecksumValidation: 'WHEN_REQUIRED',
      requestHandler: { connectionTimeout: S3_CONNECT_TIMEOUT_MS, requestTimeout: S3_REQUEST_TIMEOUT_MS, throwOnRequestTimeout: true },
      maxAttempts: S3_ATTEMPTS,
    })
  }

  async put(key: string, body: Buffer, contentType: string): Promise<void> {
    await this.client.send(new PutObjectCommand({ Bucket: this.s3.bucket, Key: key, Body: body, ContentType: contentType, CacheControl: MEDIA_CACHE_CONTROL }))
  }

  async remove(keys: readonly string[]): Promise<void> {
    // One DeleteObject per key: DeleteObjects needs a checksum some stores do not accept.
    await Promise.all(keys.map((key) => this.client.send(new DeleteObjectCommand({ Bucket: this.s3.bucket, Key: key }))))
  }

  /**
   * Pages by the last key seen (ListObjects, version 1), which every S3-compatible store
   * serves; some cannot make version 2's continuation tokens (s3rver under OpenSSL 3).
   */
  async *list(prefix: string, pageSize = LIST_PAGE_SIZE, signal?: AbortSignal): AsyncIterable<StoredFile[]> {
    let marker: string | undefined
    for (;;) {
      const page = await this.client.send(new ListObjectsCommand({ Bucket: this.s3.bucket, Prefix: prefix, MaxKeys: pageSize, Marker: marker }), {
        abortSignal: signal,
      })
      const files = (page.Contents ?? []).flatMap((object) =>
        object.Key !== undefined && object.LastModified !== undefined ? [{ key: object.Key, modifiedAt: object.LastModified }] : [],
      )
      if (files.length > 0) yield files
      if (page.IsTruncated !== true || files.length === 0) return
      marker = files[files.length - 1]!.key
    }
  }

  /** Closes the SDK's connections; the storage is not used afterwards. */
  destroy(): void {
    this.client.destroy()
  }
}

export function createStorage(config: Config): Storage {
  if (config.storageDriver === 's3') return new S3Storage(config.s3!)
  return new LocalStorage(mediaRoot(config))
}

/**
 * The base of photo URLs for this configuration, for code that shows photos without writing
 * them (catalogue, events): a stored key's URL is `${base}/${key}`.
 */
export function mediaBaseUrl(config: Config): string {
  return config.storageDriver === 's3' ? config.s3!.publicUrl : `${config.publicBaseUrl}/media`
}

/** The folder of the `local` driver, served at `/media`. */
export function mediaRoot(config: Config): string {
  return path.join(config.dataDir, 'media')
}
