import type { Config } from './config.js'
import type { DatabaseHandle } from './db/client.js'
import { OutboundClient } from './lib/outbound-http.js'
import { SecretBox } from './lib/secrets.js'
import { CatalogueAnnouncements } from './modules/catalogue/catalogue-announcements.js'
import { CatalogueChangesService } from './modules/catalogue/catalogue-changes.service.js'
import { CatalogueService } from './modules/catalogue/catalogue.service.js'
import { EventsService } from './modules/events/events.service.js'
import { FeedsService } from './modules/feeds/feeds.service.js'
import { ImageProcessor } from './modules/images/image-processing.js'
import { ImagesService } from './modules/images/images.service.js'
import { createStorage, mediaBaseUrl, S3Storage } from './modules/images/storage.js'
import { ModerationService } from './modules/moderation/moderation.service.js'
import { OperationsService } from './modules/operations/operations.service.js'
import { PropertiesService } from './modules/properties/properties.service.js'
import { ReferenceNames } from './modules/reference/reference-names.js'
import { ReferenceService } from './modules/reference/reference.service.js'
import { TenantsService } from './modules/tenants/tenants.service.js'
import { WebhookSender } from './modules/webhooks/webhook-sender.js'
import { WebhooksService } from './modules/webhooks/webhooks.service.js'

/** Every service of a process: what routes and worker jobs call, and nothing else. */
export interface Services {
  tenants: TenantsService
  reference: ReferenceService
  properties: PropertiesService
  catalogue: CatalogueService
  /** The catalogue's change feed. */
  changes: CatalogueChangesService
  images: ImagesService
  moderation: ModerationService
  webhooks: WebhooksService
  /** The outbox; routes reach it through the modules that record events, jobs for its retention. */
  events: EventsService
  operations: OperationsService
  feeds: FeedsService
  /** Lets go of what the services opened (connection pools to receivers and object storage); the database is the caller's. */
  close(): Promise<void>
}

export interface ServicesOptions {
  config: Config
  database: DatabaseHandle
}

/**
 * The composition root: builds each service once for the process, with what it depends on
 * (the outbound client, storage, secrets, the reference names cache). The API gets them through
 * the services plugin, the worker through its jobs' context; API and worker in one process share them.
 */
export function createServices({ config, database }: ServicesOptions): Services {
  const { db } = database
  const secrets = new SecretBox(config.secretKey)
  const outbound = new OutboundClient({ allowPrivateNetwork: config.allowPrivateNetwork })
  const storage = createStorage(config)
  const mediaBase = mediaBaseUrl(config)
  // Names are loaded as they are met, by statements that stand alone: pipelined on PostgreSQL.
  const names = new ReferenceNames(database.pipelined)
  const events = new EventsService(db)

  const reference = new ReferenceService(db, names)
  // Every statement of the catalogue stands alone: pipelined, on PostgreSQL (db/pipelines.ts).
  const catalogue = new CatalogueService(database.pipelined, names, mediaBase, config.catalogueCacheBytes, db)
  const announcements = new CatalogueAnnouncements(catalogue, events)
  const images = new ImagesService(db, storage, new ImageProcessor(config.images), config, mediaBase, outbound, announcements)
  const properties = new PropertiesService(db, database.pipelined, images, names, announcements)
  const webhooks = new WebhooksService(db, events, secrets, outbound, new WebhookSender(outbound, secrets, config.webhookTimeoutMs), {
    allowPrivateNetwork: config.allowPrivateNetwork,
    retryPolicy: { scheduleMs: config.webhookRetryScheduleMs },
    timeoutMs: config.webhookTimeoutMs,
  })
  // A suspension reaches the listings and the deliveries through the modules that own them.
  const tenants = new TenantsService(db, secrets, {
    async suspended(tx, tenantId) {
      await properties.holdPublishedListings(tx, tenantId)
      // Last: it waits for running fan-outs and holds new ones until the suspension commits.
      await webhooks.giveUpDeliveriesOfTenant(tx, tenantId)
    },
    async unsuspended(tx, tenantId, suspendedAt) {
      await properties.releaseHeldListings(tx, tenantId)
      await webhooks.resumeAfterSuspension(tx, tenantId, suspendedAt)
    },
  })
  const moderation = new ModerationService(db, config.moderationMode, properties, catalogue, events, names, tenants)

  // A feed's run changes listings and photos only through their services, as the agency's requests would.
  const feeds = new FeedsService(db, outbound, events, tenants, properties, images, reference, {
    allowPrivateNetwork: config.allowPrivateNetwork,
    feeds: config.feeds,
    photosPerListing: config.images.perProperty,
  })

  return {
    tenants,
    reference,
    properties,
    catalogue,
    changes: new CatalogueChangesService(database.pipelined, names, mediaBase, db),
    images,
    moderation,
    webhooks,
    events,
    operations: new OperationsService(database.pipelined, database.availability),
    feeds,
    async close() {
      await outbound.close()
      if (storage instanceof S3Storage) storage.destroy()
    },
  }
}
