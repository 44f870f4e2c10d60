/**
 * Where photo files live (`STORAGE_DRIVER`): one small interface, two drivers. Keys are
 * chosen by the service (`photos/<random>.<ext>`), never by the client. Rows keep keys, not
 * URLs, so moving the files behind a CDN (S3_PUBLIC_URL) changes no stored row.
 */
import { mkdir, rename, rm, writeFile } from 'node:fs/promises'
import path from 'node:path'
import { DeleteObjectCommand, PutObjectCommand, S3Client } from '@aws-sdk/client-s3'
import type { Config, S3Config } from '../../config.js'

export interface Storage {
  put(key: string, body: Buffer, contentType: string): Promise<void>
  /** Removes the files; a missing one is not an error. */
  remove(keys: readonly string[]): Promise<void>
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

  private pathOf(key: string): string {
    return path.join(this.root, ...key.split('/'))
  }
}

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
    })
  }

  async put(key: string, body: Buffer, contentType: string): Promise<void> {
    await this.client.send(new PutObjectCommand({ Bucket: this.s3.bucket, Key: key, Body: body, ContentType: contentType, CacheControl: MEDIA_CACHE_CONTROL }))
  }

  async remove(keys: readonly string[]): Promise<void> {
    // One DeleteObject per key: DeleteObjects needs a checksum some stores do not accept.
    await Promise.all(keys.map((key) => this.client.send(new DeleteObjectCommand({ Bucket: this.s3.bucket, Key: key }))))
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
