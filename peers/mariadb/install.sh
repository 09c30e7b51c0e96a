#!/usr/bin/env bash
# Installs MariaDB (mariadbd, mariadb-install-db) from Debian's packages for the `mariadb`
# peer of `shoal bench` (issue 8). Idempotent: does nothing when both programs are found.
# Starts no service: the benchmark runs its own private servers, so any service the
# package starts is stopped and disabled again.
set -euo pipefail

have() { command -v "$1" >/dev/null 2>&1 || [ -x "/usr/sbin/$1" ] || [ -x "/usr/bin/$1" ]; }

if have mariadbd && have mariadb-install-db; then
    echo "mariadb: already installed ($(mariadbd --version 2>/dev/null || /usr/sbin/mariadbd --version))"
    exit 0
fi

export DEBIAN_FRONTEND=noninteractive
# No service starts during the install (policy-rc.d answers 101: "action forbidden").
policy=/usr/sbin/policy-rc.d
made_policy=0
if [ ! -e "$policy" ]; then
    printf '#!/bin/sh\nexit 101\n' >"$policy"
    chmod +x "$policy"
    made_policy=1
fi
cleanup() { if [ "$made_policy" = 1 ]; then rm -f "$policy"; fi; }
trap cleanup EXIT

apt-get -o DPkg::Lock::Timeout=600 update
apt-get -o DPkg::Lock::Timeout=600 install -y --no-install-recommends mariadb-server

# Should a service have started anyway (systemd, sysvinit), stop and disable it.
if command -v systemctl >/dev/null 2>&1 && [ -d /run/systemd/system ]; then
    systemctl stop mariadb.service >/dev/null 2>&1 || true
    systemctl disable mariadb.service >/dev/null 2>&1 || true
elif [ -x /etc/init.d/mariadb ]; then
    /etc/init.d/mariadb stop >/dev/null 2>&1 || true
fi
if command -v update-rc.d >/dev/null 2>&1; then
    update-rc.d mariadb disable >/dev/null 2>&1 || true
fi

echo "mariadb: installed ($(/usr/sbin/mariadbd --version))"
