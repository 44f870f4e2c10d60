import type { Job } from '../../worker/job.js'

/**
 * Removes photo files no row names once older than ORPHAN_FILE_MIN_AGE (a crash between a
 * file and its row leaves one), and warns of rows whose file is missing. A whole sweep lists
 * the storage once, so it runs hourly, not again at once.
 */
export const orphanFilesJob: Job = {
  name: 'orphan-files',
  idleDelayMs: 60 * 60_000,
  runOnce: async ({ services, config, log, signal }) => {
    const sweep = await services.images.sweepOrphanFiles(new Date(Date.now() - config.retention.orphanFileMinAgeMs), signal)
    if (sweep.filesRemoved > 0) log.info({ filesListed: sweep.filesListed, filesRemoved: sweep.filesRemoved }, 'removed photo files no row names')
    if (sweep.missingFileCount > 0) {
      log.warn(
        {
          imageIds: [...new Set(sweep.missingFiles.map((row) => row.imageId))],
          keys: sweep.missingFiles.map((row) => row.key),
          missingFiles: sweep.missingFileCount,
        },
        'photo rows whose file is missing from storage; restore the files from a backup, or delete the photos',
      )
    }
    return 0
  },
}
