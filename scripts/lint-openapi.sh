#!/usr/bin/env bash
# Exports both OpenAPI documents to a temporary folder and lints them with Spectral
# (.spectral.mjs: spectral:oas and the OWASP API security rules). Fails on any error.
set -euo pipefail
cd "$(dirname "$0")/.."
dir="$(mktemp -d)"
trap 'rm -rf "$dir"' EXIT
tsx scripts/export-openapi.ts "$dir"
spectral lint --ruleset .spectral.mjs "$dir/openapi.json" "$dir/admin-openapi.json"
