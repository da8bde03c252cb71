#!/usr/bin/env bash
# The Linux binaries load on glibc 2.28 and later with no libstdc++ of the system: for each .node
# given (any architecture; readelf reads them all), the highest GLIBC symbol version it needs is at
# most 2.28, it needs no GLIBCXX or CXXABI version, and no __wrap_ symbol is left undefined (a
# --wrap=X in the link whose wrapper is missing). Prints each binary's highest version.
set -euo pipefail
max_allowed=2.28
status=0
for binary in "$@"; do
  needed=$(readelf --dyn-syms -W "$binary" | awk '$7 == "UND"')
  versions=$(grep -o '@GLIBC_[0-9.]*' <<<"$needed" | sed 's/@GLIBC_//' | sort -uV)
  highest=$(tail -1 <<<"$versions")
  echo "$binary: needs GLIBC ${highest:-none} ($(tr '\n' ' ' <<<"$versions"| sed 's/ $//'))"
  if [ -n "$highest" ] && [ "$(printf '%s\n%s\n' "$highest" "$max_allowed" | sort -V | tail -1)" != "$max_allowed" ]; then
    echo "  FAIL: GLIBC_$highest is newer than $max_allowed:" >&2
    grep "@GLIBC_$highest" <<<"$needed" | awk '{print "    " $8}' >&2
    status=1
  fi
  if grep -q '@\(GLIBCXX\|CXXABI\)_' <<<"$needed"; then
    echo "  FAIL: needs the system's libstdc++:" >&2
    grep '@\(GLIBCXX\|CXXABI\)_' <<<"$needed" | awk '{print "    " $8}' | head -5 >&2
    status=1
  fi
  if grep -q '__wrap_' <<<"$needed"; then
    echo "  FAIL: undefined wrapper (a --wrap without its __wrap_ function):" >&2
    grep '__wrap_' <<<"$needed" | awk '{print "    " $8}' >&2
    status=1
  fi
done
exit $status
