/**
 * Reads a Yandex.Realty feed (`<realty-feed>` with `<offer internal-id="…">`) as a stream:
 * the document is never held whole, only the offer being read, so a 200 MiB feed costs the
 * memory of its largest offer. Element names are matched by their local name, whatever
 * prefix or namespace a CRM gives them (the format's own is FEED_NAMESPACE).
 */
import { TextDecoder } from 'node:util'
import { SaxesParser, type SaxesTagPlain } from 'saxes'
import { cut } from '../../../lib/errors.js'

export const FEED_NAMESPACE = 'http://webmaster.yandex.ru/schemas/feed/realty/2010-06'

/** One element of an offer, with its text (CDATA included) and child elements in document order. */
export interface XmlElement {
  name: string
  attributes: Record<string, string>
  text: string
  children: XmlElement[]
}

export interface FeedOffer {
  /** The offer's `internal-id`, trimmed; '' when it has none (the mapper refuses it). */
  internalId: string
  element: XmlElement
  /** The line of the `<offer>` tag, for the report. */
  line: number
}

export type FeedFormatErrorCode = 'not_xml' | 'wrong_root' | 'truncated' | 'offer_too_large'

/** The file as a whole cannot be read: the run stops and changes nothing. */
export class FeedFormatError extends Error {
  override name = 'FeedFormatError'
  constructor(
    readonly code: FeedFormatErrorCode,
    message: string,
  ) {
    super(message)
  }
}

/**
 * An offer longer than this, markup included, is not a listing: it is a broken or hostile file.
 * So is anything else the parser must hold whole, a text or a comment, of this length.
 */
export const MAX_OFFER_CHARACTERS = 1024 * 1024

/** How deep elements may nest, the root at 1: a feed's offers nest four or five. */
export const MAX_DEPTH = 100

/**
 * The document goes to the parser in pieces of this length, and after each the lengths above
 * are checked: the parser holds a text until it ends, so a piece of the document is the most
 * it can hold past a limit before the check sees it.
 */
const PARSE_SLICE_CHARACTERS = 64 * 1024

/** MAX_OFFER_CHARACTERS as the messages say it. */
const LIMIT_IN_WORDS = `${MAX_OFFER_CHARACTERS / 1024 / 1024} MiB`

const ROOT = 'realty-feed'
const OFFER = 'offer'

function localName(name: string): string {
  const colon = name.indexOf(':')
  return colon === -1 ? name : name.slice(colon + 1)
}

/**
 * Yields the offers of the feed in document order. Throws FeedFormatError when the bytes are
 * not XML, the root is not `realty-feed`, or the document breaks or ends before its root is
 * closed; offers already yielded stay yielded, so a caller that must change nothing on a
 * broken file reads it whole first.
 */
export async function* readYandexRealtyOffers(source: AsyncIterable<Buffer | string>): AsyncGenerator<FeedOffer> {
  // Namespaces are not processed: an undeclared prefix in a CRM's extra element must not fail
  // the whole feed, and names are matched by their local part anyway.
  const parser = new SaxesParser({ xmlns: false, position: true })
  const ready: FeedOffer[] = []
  let rootSeen = false
  let rootClosed = false
  let depth = 0
  /** The elements open inside the current offer, outermost first; empty outside offers. */
  const open: XmlElement[] = []
  let offerLine = 0
  /** Where the current offer's start tag ends, in characters from the document's start. */
  let offerStart = 0
  /**
   * Where the last piece of the document the parser reported ends: it holds what follows,
   * unreported. Tags and texts are reported; comments and processing instructions count with
   * what follows them: with a handler for them, saxes reads every file several times slower.
   */
  let reported = 0
  const progress = () => {
    reported = parser.position
  }

  /** Stops a file whose current offer, or whatever the parser holds unreported, is over MAX_OFFER_CHARACTERS. */
  const checkLengths = () => {
    if (open.length > 0 && parser.position - offerStart > MAX_OFFER_CHARACTERS) {
      const id = open[0]!.attributes['internal-id']
      throw new FeedFormatError(
        'offer_too_large',
        `The offer${id ? ` with internal-id "${id}"` : ''} at line ${offerLine} is over ${LIMIT_IN_WORDS}; the file is not a feed of listings.`,
      )
    }
    if (parser.position - reported > MAX_OFFER_CHARACTERS) {
      throw new FeedFormatError(
        'offer_too_large',
        `The feed holds a text or comment of over ${LIMIT_IN_WORDS} before line ${parser.line}; the file is not a feed of listings.`,
      )
    }
  }

  parser.on('opentag', (tag: SaxesTagPlain) => {
    const name = localName(tag.name)
    depth += 1
    // The parser holds every open element, however short its tag: a few hundred bytes each.
    if (depth > MAX_DEPTH) {
      throw new FeedFormatError('offer_too_large', `The feed nests elements over ${MAX_DEPTH} deep at line ${parser.line}; the file is not a feed of listings.`)
    }
    if (!rootSeen) {
      rootSeen = true
      if (name !== ROOT)
        throw new FeedFormatError('wrong_root', `The document's root element is <${cut(tag.name, 100)}>, not <${ROOT}>: this is not a Yandex.Realty feed.`)
      return
    }
    progress()
    if (open.length === 0 && !(depth === 2 && name === OFFER)) return
    const attributes: Record<string, string> = {}
    for (const [attribute, value] of Object.entries(tag.attributes)) attributes[localName(attribute)] = value
    const element: XmlElement = { name, attributes, text: '', children: [] }
    if (open.length === 0) {
      offerLine = parser.line
      offerStart = parser.position
    } else {
      open[open.length - 1]!.children.push(element)
    }
    open.push(element)
  })

  const onText = (text: string) => {
    progress()
    const current = open[open.length - 1]
    if (current) current.text += text
  }
  parser.on('text', onText)
  parser.on('cdata', onText)

  parser.on('closetag', () => {
    progress()
    checkLengths()
    depth -= 1
    if (depth === 0) rootClosed = true
    const closed = open.pop()
    if (closed && open.length === 0) {
      ready.push({ internalId: (closed.attributes['internal-id'] ?? '').trim(), element: closed, line: offerLine })
    }
  })

  // Saxes reports "line:column: message"; say it as a sentence, with the place in words.
  parser.on('error', (error: Error) => {
    const reason = cut(error.message.replace(/^\d+:\d+: /, '').replace(/\.$/, ''), 500)
    throw new FeedFormatError('not_xml', `The feed is not well-formed XML at line ${parser.line}, column ${parser.column}: ${reason}.`)
  })

  const decoder = new StreamingDecoder()
  let sawContent = false
  const feed = (text: string) => {
    if (!text) return
    if (!sawContent && text.trim() !== '') sawContent = true
    for (let start = 0; start < text.length; start += PARSE_SLICE_CHARACTERS) {
      parser.write(text.slice(start, start + PARSE_SLICE_CHARACTERS))
      checkLengths()
    }
  }
  for await (const chunk of source) {
    feed(decoder.decode(chunk))
    while (ready.length > 0) yield ready.shift()!
  }
  feed(decoder.end())
  if (!sawContent) throw new FeedFormatError('not_xml', 'The feed is empty.')
  if (!rootSeen) throw new FeedFormatError('not_xml', 'The feed holds no XML element: it is not XML.')
  if (!rootClosed) {
    throw new FeedFormatError('truncated', `The feed ends at line ${parser.line} before its <${ROOT}> is closed: the file was cut off, so none of it is used.`)
  }
  parser.close()
  while (ready.length > 0) yield ready.shift()!
}

/**
 * Decodes the bytes in the encoding the XML declaration names (UTF-8 unless it says otherwise:
 * many CRMs still write windows-1251), keeping a character split across two chunks whole.
 */
class StreamingDecoder {
  private decoder: TextDecoder | null = null
  private head: Buffer[] = []
  private headLength = 0

  decode(chunk: Buffer | string): string {
    if (typeof chunk === 'string') return this.start('utf-8') + chunk
    if (this.decoder) return this.read(this.decoder, chunk, true)
    this.head.push(chunk)
    this.headLength += chunk.length
    // The declaration sits in the first bytes; wait for enough of them to read it.
    return this.headLength < 256 ? '' : this.start(null)
  }

  end(): string {
    const held = this.start(null)
    return held + (this.decoder ? this.read(this.decoder, undefined, false) : '')
  }

  /**
   * Bytes that are not text in the encoding (a windows-1251 file that declares none, read as
   * UTF-8) end the run: read with replacement characters, every Cyrillic id would be another
   * offer's, and the file's own offers would look gone.
   */
  private read(decoder: TextDecoder, bytes: Buffer | undefined, stream: boolean): string {
    try {
      return decoder.decode(bytes, { stream })
    } catch {
      throw new FeedFormatError(
        'not_xml',
        `The feed is not valid ${decoder.encoding} text; write it in UTF-8, or name its encoding in the XML declaration (<?xml version="1.0" encoding="windows-1251"?>).`,
      )
    }
  }

  /** Chooses the decoder once, and decodes the bytes held back until then. */
  private start(known: string | null): string {
    if (this.decoder) return ''
    const bytes = Buffer.concat(this.head)
    this.head = []
    const encoding = known ?? declaredEncoding(bytes)
    try {
      this.decoder = new TextDecoder(encoding, { fatal: true })
    } catch {
      throw new FeedFormatError('not_xml', `The feed declares the encoding "${encoding}", which cannot be read; write it in UTF-8.`)
    }
    return this.read(this.decoder, bytes, true)
  }
}

function declaredEncoding(bytes: Buffer): string {
  if (bytes[0] === 0xef && bytes[1] === 0xbb && bytes[2] === 0xbf) return 'utf-8'
  if (bytes[0] === 0xff && bytes[1] === 0xfe) return 'utf-16le'
  if (bytes[0] === 0xfe && bytes[1] === 0xff) return 'utf-16be'
  const declaration = /^\s*<\?xml[^>]*?encoding\s*=\s*["']([A-Za-z0-9._-]+)["']/.exec(bytes.subarray(0, 256).toString('latin1'))
  return declaration ? declaration[1]!.toLowerCase() : 'utf-8'
}
