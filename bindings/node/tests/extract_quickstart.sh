#!/usr/bin/env bash
# Prints the first ```js block after the "## Quickstart" heading of a README, so the
# packaging test runs exactly what users read.
set -euo pipefail
awk '/^## Quickstart/{q=1} q&&/^```js/{p=1;next} p&&/^```/{exit} p{print}' "${1:?usage: extract_quickstart.sh README.md}"
