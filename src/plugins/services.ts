import type { FastifyInstance } from 'fastify'
import fp from 'fastify-plugin'
import type { DatabaseHandle } from '../db/client.js'
import { createServices, type Services } from '../services.js'

declare module 'fastify' {
  interface FastifyInstance {
    /** The process's services: the only thing routes call. */
    services: Services
  }
}

export interface ServicesPluginOptions {
  database: DatabaseHandle
  /** Services the process built and shares with its worker; without them the app builds its own. */
  services?: Services | undefined
}

/**
 * Hands the services to the routes. Services the app built itself are closed with it; services
 * given to it belong to the process, which closes them once the API and the worker have stopped.
 */
export default fp(
  async function servicesPlugin(app: FastifyInstance, options: ServicesPluginOptions) {
    if (options.services) {
      app.decorate('services', options.services)
      return
    }
    const services = createServices({ config: app.config, database: options.database })
    app.decorate('services', services)
    app.addHook('onClose', () => services.close())
  },
  { name: 'services', decorators: { fastify: ['config'] } },
)
