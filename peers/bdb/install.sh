#!/usr/bin/env bash
# Installs what the Berkeley DB peer (`shoal bench --engine bdb`) needs to build: the
# headers of Debian's libdb 5.3 (the runtime library libdb5.3 comes with the base system;
# the package libdb5.3-dev adds /usr/include/db.h and the link name libdb.so).
# Idempotent: does nothing when the header is already there. Run as root (or with sudo).
# After it, the next `cargo build` of shoal-bench notices the header and builds the peer.
set -euo pipefail

header=/usr/include/db.h
if [ -f "$header" ]; then
    echo "bdb: $header present; nothing to install"
    exit 0
fi
sudo=""
if [ "$(id -u)" -ne 0 ]; then
    sudo="sudo"
fi
$sudo apt-get -o DPkg::Lock::Timeout=600 update
DEBIAN_FRONTEND=noninteractive $sudo apt-get -o DPkg::Lock::Timeout=600 install -y libdb5.3-dev
test -f "$header" || { echo "bdb: libdb5.3-dev installed but $header is missing" >&2; exit 1; }
echo "bdb: installed libdb5.3-dev ($header)"
