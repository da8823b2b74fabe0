#!/usr/bin/env bash
# The OpenID provider of Rill's OIDC tests (provider.mjs: npm oidc-provider, unmodified),
# installed with npm into $RILL_OIDC_DIR (default target/oidc-provider).
#
#   tests/clients/oidc-provider/run.sh keys OUT.json KID        writes a new RS256 key
#   tests/clients/oidc-provider/run.sh provider PORT KEYS.json...  runs the provider
#
# The provider runs in the foreground (this script becomes node) and prints
# `issuer http://127.0.0.1:PORT` once it listens.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../../.." && pwd)"
. "$here/../lib.sh"
work="${RILL_OIDC_DIR:-$root/target/oidc-provider}"
command="${1:?usage: run.sh keys|provider ARGS...}"
shift
case "$command" in
  keys | provider) ;;
  *) echo "unknown command $command (keys or provider)" >&2; exit 2 ;;
esac

# Tests start providers in parallel: one installs, the others wait for it. The
# version is pinned, so an install with the same package.json is kept.
mkdir -p "$work"
exec 9>"$work/.install.lock"
flock 9
if ! cmp -s "$here/package.json" "$work/package.json" || [ ! -d "$work/node_modules/oidc-provider" ]; then
  npm_install "$work" "$here/package.json"
fi
# Renamed into place: another provider may be reading the scripts as they are copied.
for script in provider.mjs keys.mjs; do
  cp "$here/$script" "$work/$script.$$"
  mv -f "$work/$script.$$" "$work/$script"
done
exec 9>&-

exec node "$work/$command.mjs" "$@"
