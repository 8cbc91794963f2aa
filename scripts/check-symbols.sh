#!/usr/bin/env bash
# STYLE.md rule 1: every external symbol of the library starts with omnic_ (API) or
# omnic__ (internal). Prints offenders and fails when there are any.
set -euo pipefail
lib=${1:-build/release/libomnic.a}
bad=$(nm -g --defined-only "$lib" 2>/dev/null | awk 'NF==3 {print $3}' | grep -Ev '^omnic_' | sort -u || true)
if [ -n "$bad" ]; then
  echo "symbols without the omnic_ prefix in $lib:"
  echo "$bad"
  exit 1
fi
echo "all $(nm -g --defined-only "$lib" | awk 'NF==3' | wc -l) exported symbols start with omnic_"
