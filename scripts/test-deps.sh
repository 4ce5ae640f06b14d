#!/usr/bin/env bash
# System packages the test suite runs for real: a Prometheus server (telemetry tests) and headless
# Chromium (the simulator report's browser test). Installs only what is missing; needs root (or sudo)
# on Debian/Ubuntu.
set -euo pipefail
need=()
command -v prometheus >/dev/null 2>&1 || need+=(prometheus)
command -v chromium >/dev/null 2>&1 || need+=(chromium)
[ ${#need[@]} -eq 0 ] && exit 0
SUDO=""
[ "$(id -u)" -ne 0 ] && SUDO="sudo"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
