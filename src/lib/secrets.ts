import { createCipheriv, createDecipheriv, createHash, hkdfSync, randomBytes, timingSafeEqual } from 'node:crypto'

/** Every tenant API key starts with this, so a leaked key is recognisable in logs and scanners. */
export const API_KEY_PREFIX = 'mls_live_'

/** A new API key: the prefix and 32 random bytes (256 bits). */
export function generateApiKey(): string {
  return API_KEY_PREFIX + randomBytes(32).toString('base64url')
}

/** A registration request code: 144 random bits, URL-safe. */
export function generateRequestCode(): string {
  return 'reg_' + randomBytes(18).toString('base64url')
}

/** SHA-256 hex digest: keys are looked up by it and never stored in plain text. */
export function digestSecret(secret: string): string {
  return createHash('sha256').update(secret).digest('hex')
}

/** Compares two secrets in time independent of where they differ. */
export function secretsEqual(given: string, expected: string): boolean {
  const a = createHash('sha256').update(given).digest()
  const b = createHash('sha256').update(expected).digest()
  return timingSafeEqual(a, b)
}

/**
 * Authenticated encryption of small secrets at rest (AES-256-GCM), with a key derived from
 * SECRET_KEY for this one purpose. The output `v1.<iv>.<tag>.<ciphertext>` names its scheme so
 * the format can change without guessing.
 */
export class SecretBox {
  private readonly key: Buffer

  constructor(secretKey: string) {
    this.key = Buffer.from(hkdfSync('sha256', secretKey, 'open-mls', 'secrets-at-rest v1', 32))
  }

  seal(plaintext: string): string {
    const iv = randomBytes(12)
    const cipher = createCipheriv('aes-256-gcm', this.key, iv)
    const ciphertext = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()])
    return ['v1', iv, cipher.getAuthTag(), ciphertext].map((part) => (typeof part === 'string' ? part : part.toString('base64url'))).join('.')
  }

  /** The secret, or undefined when it was sealed with another key (or is not a sealed secret). */
  tryOpen(sealed: string): string | undefined {
    try {
      return this.open(sealed)
    } catch {
      return undefined
    }
  }

  open(sealed: string): string {
    const [version, iv, tag, ciphertext] = sealed.split('.')
    if (version !== 'v1' || !iv || !tag || ciphertext === undefined) throw new Error('Unknown secret format')
    const decipher = createDecipheriv('aes-256-gcm', this.key, Buffer.from(iv, 'base64url'))
    decipher.setAuthTag(Buffer.from(tag, 'base64url'))
    return Buffer.concat([decipher.update(Buffer.from(ciphertext, 'base64url')), decipher.final()]).toString('utf8')
  }
}
