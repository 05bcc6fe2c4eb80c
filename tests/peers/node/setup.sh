#!/usr/bin/env bash
# Installs the project-local Node tools of tests/peers/node (server-everything, the MCP
# conformance suite and a Node 22 binary) from the committed lockfile.
# Idempotent: runs `npm ci` only when node_modules is missing or older than package-lock.json.
# Needs npm (any Node >= 18 to run npm itself); the installed tools run on node_modules/.bin/node.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cd "$here"
exec 9<"$here/setup.sh"
flock 9  # concurrent callers (pytest-xdist workers) install once
stamp=node_modules/.hub-installed
if [[ -f $stamp && ! package-lock.json -nt $stamp && -x node_modules/.bin/node ]]; then
  exit 0
fi
npm ci --no-audit --no-fund --loglevel=error
node_modules/.bin/node --version >/dev/null
touch "$stamp"
