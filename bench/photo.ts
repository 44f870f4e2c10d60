/**
 * The photo scenario (e) uploads: what a phone or compact camera hands an agent, a 12-megapixel
 * JPEG of about 3 MB. Made here with sharp rather than shipped, so the repository carries no
 * binary; the same bytes every run (a seeded generator), so runs compare.
 */
import sharp from 'sharp'

export const PHOTO_WIDTH = 4000
export const PHOTO_HEIGHT = 3000
export const PHOTO_QUALITY = 90
/**
 * Standard deviation of the per-channel noise over the gradient. A smooth gradient alone
 * encodes to a few hundred kB; sensor-like noise is what makes camera JPEGs weigh megabytes.
 * 8.4 puts the file at about 3.0 MB at quality 90 (6 gave 2.2 MB, 10 gave 3.5 MB).
 */
export const PHOTO_NOISE_SIGMA = 8.4

export interface Photo {
  bytes: Buffer
  width: number
  height: number
}

/** A 4000×3000 RGB gradient with gaussian noise, encoded as JPEG. Takes a second or two. */
export async function makeCameraPhoto(): Promise<Photo> {
  const raw = Buffer.alloc(PHOTO_WIDTH * PHOTO_HEIGHT * 3)
  const gaussian = gaussianSource(0x5eed)
  let i = 0
  for (let y = 0; y < PHOTO_HEIGHT; y++) {
    for (let x = 0; x < PHOTO_WIDTH; x++) {
      // sky-ish at the top left, warmer towards the bottom right
      const u = x / PHOTO_WIDTH
      const v = y / PHOTO_HEIGHT
      raw[i++] = clampByte(40 + 180 * u + PHOTO_NOISE_SIGMA * gaussian())
      raw[i++] = clampByte(60 + 150 * v + PHOTO_NOISE_SIGMA * gaussian())
      raw[i++] = clampByte(200 - 75 * (u + v) + PHOTO_NOISE_SIGMA * gaussian())
    }
  }
  const { data, info } = await sharp(raw, { raw: { width: PHOTO_WIDTH, height: PHOTO_HEIGHT, channels: 3 } })
    .jpeg({ quality: PHOTO_QUALITY })
    .toBuffer({ resolveWithObject: true })
  return { bytes: data, width: info.width, height: info.height }
}

/** Standard normal draws (Box–Muller, both halves used) from a seeded mulberry32. */
function gaussianSource(seed: number): () => number {
  let state = seed >>> 0
  const uniform = () => {
    state = (state + 0x6d2b79f5) | 0
    let t = Math.imul(state ^ (state >>> 15), 1 | state)
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
  let spare: number | undefined
  return () => {
    if (spare !== undefined) {
      const value = spare
      spare = undefined
      return value
    }
    const radius = Math.sqrt(-2 * Math.log(1 - uniform()))
    const angle = 2 * Math.PI * uniform()
    spare = radius * Math.sin(angle)
    return radius * Math.cos(angle)
  }
}

const clampByte = (value: number) => (value <= 0 ? 0 : value >= 255 ? 255 : Math.round(value))
