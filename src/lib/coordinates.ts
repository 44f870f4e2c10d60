/**
 * The coordinate missing from a place given one alone, with what to say of it, or undefined
 * when both or neither are given: one coordinate places a listing or a city nowhere, and no box
 * or radius could ever find it.
 */
export function unpairedCoordinate(latitude: unknown, longitude: unknown, placed: 'a listing' | 'a city'): { field: string; msg: string } | undefined {
  if ((latitude == null) === (longitude == null)) return undefined
  const [given, missing] = latitude == null ? ['longitude', 'latitude'] : ['latitude', 'longitude']
  return { field: missing, msg: `must be given with ${given}: ${placed} is placed on a map by both, or by neither` }
}
