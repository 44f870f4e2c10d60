/**
 * Scenario (e): photo uploads, and what they do to everyone else. The service processes photos
 * on libuv's thread pool with a bounded concurrency (IMAGE_PROCESSING_CONCURRENCY), so that an
 * upload burst leaves the catalogue its latency; the catalogue reads are measured alone (e1),
 * then again while the uploads run (e2), to show it. The service's memory is read from /proc
 * meanwhile: a 12-megapixel photo decodes to 36 MB of pixels, whatever its file weighs.
 */
import type { Child } from './children.js'
import { benchApiKey } from './data.js'
import { measure, warmUp, type Scenario, type ScenarioResult } from './load.js'
import { readMemory, sampleRss, type MemoryReading } from './memory.js'
import { makeCameraPhoto, PHOTO_NOISE_SIGMA, PHOTO_QUALITY } from './photo.js'
import { catalogueDetail, photoUploads } from './requests.js'
import { UPLOAD_TENANT, type PreparedDatabase } from './seed.js'

/** Uploads are heavy and few at a time: an agency's import, not a crowd. */
export const UPLOAD_CONNECTIONS = 4
/** Visitors reading listing pages meanwhile; the same number alone and during the uploads. */
export const CATALOGUE_CONNECTIONS = 10
const MEMORY_SAMPLE_MS = 200

export interface UploadFigures {
  fixture: { bytes: number; width: number; height: number; jpeg_quality: number; noise_sigma: number }
  tenant: number
  properties: number
  processing_concurrency: number
  /** 2xx answers per second measured: each is a photo checked, re-encoded, thumbnailed and stored. */
  photos_per_second: number
  photos_total: number
  /** null where /proc cannot be read (not Linux). */
  service_memory: ServiceMemory | null
}

/** MiB, over the upload window: the first photo, the warm-up and the measured seconds. */
export interface ServiceMemory {
  rss_before_mib: number
  rss_after_mib: number
  /** Highest VmRSS of the samples taken every sample_interval_ms. */
  rss_peak_sampled_mib: number
  sample_interval_ms: number
  samples: number
  /** VmHWM, the process's lifetime peak, before and after the window. */
  hwm_before_mib: number
  hwm_after_mib: number
  /**
   * The peak of the window: VmHWM if it rose during the window (then the window set it, and
   * it is exact), the sampled maximum otherwise (an earlier scenario set VmHWM).
   */
  rss_peak_mib: number
  rss_peak_source: 'VmHWM' | 'sampled'
}

export interface UploadRun {
  results: Record<'e' | 'e1' | 'e2', ScenarioResult>
  figures: UploadFigures
}

export async function runUploads(
  service: Child,
  prepared: PreparedDatabase,
  load: { duration: number; warmup: number },
  processingConcurrency: number,
): Promise<UploadRun> {
  if (prepared.uploadPropertyIds.length === 0) throw new Error(`Bench tenant ${UPLOAD_TENANT} has no properties to upload photos to: seed more listings.`)
  if (service.pid === undefined) throw new Error('The service has no pid; its memory cannot be read.')
  const pid = service.pid

  const photo = await makeCameraPhoto()
  const megabytes = (photo.bytes.length / 1e6).toFixed(1)
  console.error(`(e) photo: ${photo.width}×${photo.height} JPEG, quality ${PHOTO_QUALITY}, ${photo.bytes.length} bytes.`)

  const uploads: Scenario = {
    id: 'e',
    title: `POST /property-images/upload, ${megabytes} MB ${photo.width}×${photo.height} JPEG`,
    baseUrl: service.url,
    next: photoUploads(photo.bytes, benchApiKey(UPLOAD_TENANT), prepared.uploadPropertyIds),
  }
  const reads = (id: 'e1' | 'e2', when: string): Scenario => ({
    id,
    title: `GET /mls/properties/{id}, ${when}`,
    baseUrl: service.url,
    next: () => catalogueDetail(prepared.publishedIds),
  })
  const alone = reads('e1', 'alone')
  const during = reads('e2', 'during (e)')

  process.stderr.write(`(e1) ${alone.title}: warm-up ${load.warmup} s, then ${load.duration} s… `)
  await warmUp(alone, CATALOGUE_CONNECTIONS, load.warmup)
  const e1 = await measure(alone, CATALOGUE_CONNECTIONS, load.duration)
  process.stderr.write('done\n')

  process.stderr.write(`(e) uploads with (e2) catalogue reads alongside: warm-up ${load.warmup} s, then ${load.duration} s… `)
  const before = readMemory(pid)
  const sampler = sampleRss(pid, MEMORY_SAMPLE_MS)
  await uploadOnce(service, uploads)
  // Both together from the warm-up on, so the measured seconds start with the queue already full.
  await Promise.all([warmUp(uploads, UPLOAD_CONNECTIONS, load.warmup), warmUp(during, CATALOGUE_CONNECTIONS, load.warmup)])
  const [e, e2] = await Promise.all([measure(uploads, UPLOAD_CONNECTIONS, load.duration), measure(during, CATALOGUE_CONNECTIONS, load.duration)])
  const sampled = sampler.stop()
  const after = readMemory(pid)
  process.stderr.write('done\n')

  const photos = Object.entries(e.status_codes).reduce((sum, [code, count]) => (code.startsWith('2') ? sum + count : sum), 0)
  return {
    results: { e, e1, e2 },
    figures: {
      fixture: { bytes: photo.bytes.length, width: photo.width, height: photo.height, jpeg_quality: PHOTO_QUALITY, noise_sigma: PHOTO_NOISE_SIGMA },
      tenant: UPLOAD_TENANT,
      properties: prepared.uploadPropertyIds.length,
      processing_concurrency: processingConcurrency,
      photos_per_second: round(photos / load.duration),
      photos_total: photos,
      service_memory: memoryFigures(before, after, sampled),
    },
  }
}

/**
 * One upload before the load, one at a time, as smokeTest does for the other scenarios: a
 * form the service refuses shows up here with its answer, not as a bare count of 4xx.
 */
async function uploadOnce(service: Child, uploads: Scenario): Promise<void> {
  const request = uploads.next()
  const response = await fetch(service.url + request.path, { method: request.method, headers: request.headers, body: request.body })
  const body = await response.text()
  if (!response.ok) console.error(`\nSmoke test (e): ${request.method} ${request.path} answered ${response.status}: ${body.slice(0, 500)}`)
}

function memoryFigures(
  before: MemoryReading | undefined,
  after: MemoryReading | undefined,
  sampled: { maxKiB: number; samples: number } | undefined,
): ServiceMemory | null {
  if (before === undefined || after === undefined || sampled === undefined) return null
  const hwmRose = after.hwmKiB > before.hwmKiB
  return {
    rss_before_mib: mib(before.rssKiB),
    rss_after_mib: mib(after.rssKiB),
    rss_peak_sampled_mib: mib(sampled.maxKiB),
    sample_interval_ms: MEMORY_SAMPLE_MS,
    samples: sampled.samples,
    hwm_before_mib: mib(before.hwmKiB),
    hwm_after_mib: mib(after.hwmKiB),
    rss_peak_mib: mib(hwmRose ? after.hwmKiB : sampled.maxKiB),
    rss_peak_source: hwmRose ? 'VmHWM' : 'sampled',
  }
}

const mib = (kib: number) => round(kib / 1024)
const round = (value: number) => Math.round(value * 100) / 100
