#!/usr/bin/env bash
# Vendor the JavaScript that renders embedded ipywidgets in the built book, so the pages need no CDN.
#
# Usage:  scripts/vendor_widgets_js.sh            (from the repository root; needs `npm` and `tar`)
#         HTML_MANAGER_VERSION=1.0.16 scripts/vendor_widgets_js.sh     (to refresh to another release)
#
# What it does: `npm pack` (the registry checks each tarball's integrity) the pinned releases of
#   @jupyter-widgets/html-manager  -> dist/embed.js (the standalone, non-AMD bundle: base + controls + output
#                                     widgets, jQuery UI slider, Font Awesome CSS; needs no require.js)
#                                     + dist/embed.js.LICENSE.txt (licences of what the bundle contains)
#                                     + the Font Awesome .woff2 fonts the bundle's CSS refers to (webpack names
#                                       them by hash and looks for them next to embed.js)
#   @jupyter-widgets/base          -> LICENSE (the ipywidgets BSD-3-Clause text; html-manager's tarball has none)
#   @fortawesome/fontawesome-free  -> LICENSE.txt (fonts: SIL OFL 1.1; CSS: MIT)
# and writes them to book/_widgets/jupyter-widgets/, plus SHA256SUMS. Only .woff2 fonts are kept: every
# browser that runs the bundle reads woff2 first, and the .eot/.svg/.ttf/.woff copies would add ~4 MB.
# After a refresh: rebuild the book and run scripts/screenshot_widget.py on a page with a widget.
set -euo pipefail

HTML_MANAGER_VERSION="${HTML_MANAGER_VERSION:-1.0.15}"      # ipywidgets 8.1.x <-> html-manager 1.0.x
BASE_VERSION="${BASE_VERSION:-6.0.11}"                      # only its LICENSE file is used
FONTAWESOME_VERSION="${FONTAWESOME_VERSION:-5.15.4}"        # the version bundled in embed.js (see its CSS banner)

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
dest="$root/book/_widgets/jupyter-widgets"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

cd "$work"
npm pack --silent "@jupyter-widgets/html-manager@${HTML_MANAGER_VERSION}" \
                  "@jupyter-widgets/base@${BASE_VERSION}" \
                  "@fortawesome/fontawesome-free@${FONTAWESOME_VERSION}" >/dev/null
mkdir hm base fa
tar xzf "jupyter-widgets-html-manager-${HTML_MANAGER_VERSION}.tgz" -C hm
tar xzf "jupyter-widgets-base-${BASE_VERSION}.tgz" -C base
tar xzf "fortawesome-fontawesome-free-${FONTAWESOME_VERSION}.tgz" -C fa

bundled_fa="$(grep -o 'Font Awesome Free [0-9.]*' hm/package/dist/embed.js | head -n1 | awk '{print $4}')"
if [[ "$bundled_fa" != "$FONTAWESOME_VERSION" ]]; then
  echo "note: embed.js bundles Font Awesome $bundled_fa, licence taken from $FONTAWESOME_VERSION" >&2
fi

rm -rf "$dest"
mkdir -p "$dest"
cp hm/package/dist/embed.js hm/package/dist/embed.js.LICENSE.txt "$dest/"
cp hm/package/dist/*.woff2 "$dest/"
cp base/package/LICENSE "$dest/LICENSE"
cp fa/package/LICENSE.txt "$dest/LICENSE.fontawesome.txt"
cat > "$dest/VERSIONS" <<VERSIONS
@jupyter-widgets/html-manager ${HTML_MANAGER_VERSION} (dist/embed.js, dist/*.woff2)
@jupyter-widgets/base ${BASE_VERSION} (LICENSE)
@fortawesome/fontawesome-free ${FONTAWESOME_VERSION} (LICENSE.txt; bundled in embed.js: ${bundled_fa})
VERSIONS
(cd "$dest" && sha256sum embed.js *.woff2 > SHA256SUMS)

echo "vendored into ${dest#"$root"/}:"
(cd "$dest" && ls -l | awk 'NR > 1 {printf "  %9d  %s\n", $5, $9}')
