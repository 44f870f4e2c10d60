import { DrizzleQueryError } from 'drizzle-orm'
import pino, { type DestinationStream, type Logger, type LoggerOptions, type SerializedError } from 'pino'

/**
 * How every logger of the service writes an error. Drizzle's error for a failed statement
 * names the statement's values in its message, and so in its stack: an owner's phone, an
 * e-mail address, the digest of an API key being checked. The log keeps the statement and the
 * database's own error, which say what failed, and leaves the values out.
 */
export const logSerializers = { err: serializeError }

/** A process's logger (JSON lines on stdout unless another destination is given). */
export function createLogger(options: LoggerOptions, destination?: DestinationStream): Logger {
  const settings = { ...options, serializers: { ...options.serializers, ...logSerializers } }
  return destination ? pino(settings, destination) : pino(settings)
}

function serializeError(error: Error): SerializedError {
  const serialized = pino.stdSerializers.err(error)
  for (let link: unknown = error; link instanceof Error; link = link.cause) {
    if (!(link instanceof DrizzleQueryError)) continue
    // Exactly as Drizzle writes them after the statement, in its message and in every copy of it.
    const values = `\nparams: ${String(link.params)}`
    serialized.message = serialized.message.replaceAll(values, '')
    serialized.stack = serialized.stack.replaceAll(values, '')
  }
  delete serialized.params
  return serialized
}
