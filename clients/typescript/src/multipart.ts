type FieldValue = string | number | boolean | Blob

/**
 * Sends a request body as multipart/form-data, for the upload route: pass it as the call's
 * `bodySerializer`. Blobs and Files become file parts, numbers and booleans text fields, and
 * fields left undefined or null are not sent. The runtime's fetch writes the boundary.
 */
export function multipartBody(body: { [field: string]: FieldValue | null | undefined }): FormData {
  const form = new FormData()
  for (const [name, value] of Object.entries(body)) {
    if (value === undefined || value === null) continue
    form.append(name, value instanceof Blob ? value : String(value))
  }
  return form
}
