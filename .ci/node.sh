#!/usr/bin/env bash
# Node.js and npm for the simulator's TypeScript MCP SDK test (services/spacemolt-sim/internal/mcpserver,
# TestV2StarterLoopTypeScriptSDK), which runs `npm ci` itself into the user cache directory. Installs them from the
# distribution when missing (Debian 12 ships Node 18, enough for @modelcontextprotocol/sdk).
set -euo pipefail
if command -v node >/dev/null && command -v npm >/dev/null; then
	echo "node $(node --version), npm $(npm --version)"
	exit 0
fi
if command -v apt-get >/dev/null; then
	SUDO=""
	[ "$(id -u)" = 0 ] || SUDO=sudo
	. "$(dirname "$0")/apt.sh"
	apt_get update -qq
	apt_get install -y -qq nodejs npm
	echo "installed node $(node --version), npm $(npm --version)"
	exit 0
fi
echo "node and npm are missing and there is no apt-get: install Node.js 18 or later with npm" >&2
exit 1
