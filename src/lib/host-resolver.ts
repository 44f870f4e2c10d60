import { promises as dns, type LookupAddress } from 'node:dns'

/** How long a query first waits for a name server (c-ares doubles it at each try), and the tries. */
const QUERY_TIMEOUT_MS = 2_000
const QUERY_TRIES = 2

/** c-ares' codes for name servers that did not answer, or a query given up on close. */
const NO_ANSWER = new Set(['ETIMEOUT', 'ECANCELLED', 'EDESTRUCTION'])

/**
 * The addresses of the hosts tenants name (webhook receivers, photo and feed URLs), resolved
 * without holding a thread of libuv's pool. The system's resolver (`dns.lookup`) runs on one of
 * its four threads until the name servers answer or it gives up, tens of seconds for servers
 * that do not answer; the same threads decode photos and write files, so a few URLs on such a
 * host would stall every upload of the process. c-ares (`dns.Resolver`) asks the name servers
 * from the event loop, within its own time. A name they do not know (one only in the
 * hosts file) is then looked up by the system, which reads the hosts file first and answers at
 * once; a name whose servers did not answer is not.
 */
export class HostResolver {
  private readonly resolver = new dns.Resolver({ timeout: QUERY_TIMEOUT_MS, tries: QUERY_TRIES })

  /** `nameServers`: the servers to ask (`127.0.0.1:5353`), the system's unless a test names its own. */
  constructor(nameServers?: string[]) {
    if (nameServers) this.resolver.setServers(nameServers)
  }

  /** Every address of `hostname` of the family asked for (0: both). */
  async resolve(hostname: string, family: 0 | 4 | 6 = 0): Promise<LookupAddress[]> {
    // Names DNS is never asked about (RFC 6761 §6.3): the hosts file's, whatever the network.
    if (/(^|\.)localhost\.?$/i.test(hostname)) return dns.lookup(hostname, { all: true, family })
    const answers = await Promise.allSettled([
      family === 6 ? [] : this.resolver.resolve4(hostname).then((addresses) => addresses.map((address) => ({ address, family: 4 }))),
      family === 4 ? [] : this.resolver.resolve6(hostname).then((addresses) => addresses.map((address) => ({ address, family: 6 }))),
    ])
    const addresses = answers.flatMap((answer) => (answer.status === 'fulfilled' ? answer.value : []))
    if (addresses.length > 0) return addresses
    if (answers.some((answer) => answer.status === 'rejected' && NO_ANSWER.has((answer.reason as NodeJS.ErrnoException).code ?? ''))) {
      throw Object.assign(new Error(`The name servers did not answer for ${hostname}.`), { code: 'EAI_AGAIN' })
    }
    return dns.lookup(hostname, { all: true, family })
  }

  /** Gives up the queries under way: they fail as unanswered. */
  close(): void {
    this.resolver.cancel()
  }
}
