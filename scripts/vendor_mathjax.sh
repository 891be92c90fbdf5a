#!/usr/bin/env bash
# Vendor MathJax 3 so the book's equations typeset with no CDN (Sphinx's default mathjax_path is jsDelivr).
#
# Usage:  scripts/vendor_mathjax.sh                          (from anywhere; needs `npm`, `tar`, `sha256sum`)
#         MATHJAX_VERSION=3.2.1 scripts/vendor_mathjax.sh    (another 3.x release)
#
# What it does: `npm pack` (the registry checks the tarball's integrity) the pinned `mathjax` release and copies
#   es5/tex-chtml-full.js                     TeX input with every TeX extension bundled (ams, boldsymbol, cancel,
#                                             color, mathtools, ...: nothing under input/tex/extensions/ is fetched
#                                             at runtime), CommonHTML output, the context menu, assistive MathML
#   es5/output/chtml/fonts/woff-v2/*.woff     the TeX fonts the CommonHTML output loads at runtime (relative to
#                                             the script's own URL)
#   LICENSE                                   Apache-2.0 (the package ships no NOTICE file)
# into book/_mathjax/mathjax/, keeping the package's layout below es5/, and writes VERSIONS and SHA256SUMS.
# `tex-svg*.js` would need no font files but is one file over 2 MB (2.1-2.3 MB); chtml-full + fonts is ~1.7 MB.
# Not copied: a11y/ and sre/ (4.3 MB), which the MathJax menu loads only if a reader switches on the
# accessibility explorer or speech; offline those menu items do nothing.
# After a refresh: rebuild the book and screenshot a page with equations (book/_mathjax/README.md).
set -euo pipefail

MATHJAX_VERSION="${MATHJAX_VERSION:-3.2.2}"
COMPONENT="tex-chtml-full.js"   # keep in sync with `mathjax_path` in _config.yml

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
dest="$root/book/_mathjax/mathjax"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

cd "$work"
npm pack --silent "mathjax@${MATHJAX_VERSION}" >/dev/null
mkdir mj
tar xzf "mathjax-${MATHJAX_VERSION}.tgz" -C mj
src="mj/package"

got="$(node -p "require('./$src/package.json').version" 2>/dev/null || grep -o '"version": *"[^"]*"' "$src/package.json" | cut -d'"' -f4)"
if [[ "$got" != "$MATHJAX_VERSION" ]]; then
  echo "error: npm gave mathjax $got, expected $MATHJAX_VERSION" >&2
  exit 1
fi

rm -rf "$dest"
mkdir -p "$dest/es5/output/chtml/fonts/woff-v2"
cp "$src/es5/$COMPONENT" "$dest/es5/"
cp "$src"/es5/output/chtml/fonts/woff-v2/*.woff "$dest/es5/output/chtml/fonts/woff-v2/"
cp "$src/LICENSE" "$dest/LICENSE"
cat > "$dest/VERSIONS" <<VERSIONS
mathjax ${MATHJAX_VERSION} (npm; es5/${COMPONENT}, es5/output/chtml/fonts/woff-v2/*.woff, LICENSE: Apache-2.0)
VERSIONS
(cd "$dest" && find . -type f ! -name SHA256SUMS | sed 's|^\./||' | LC_ALL=C sort | xargs sha256sum > SHA256SUMS)

echo "vendored mathjax ${MATHJAX_VERSION} into ${dest#"$root"/}:"
(cd "$dest" && find . -type f | LC_ALL=C sort | xargs ls -l | awk '{printf "  %9d  %s\n", $5, $9}')
echo "  total: $(du -sb "$dest" | cut -f1) bytes"
