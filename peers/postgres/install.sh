#!/usr/bin/env bash
# Installs PostgreSQL for the `postgres` peer of `shoal bench` (issue 8): the server
# programs (initdb, postgres, pg_ctl), pgbench (postgresql-contrib on older Debian, part
# of the server package on newer) and pg_config. Idempotent: does nothing when initdb and
# pgbench are already there. Needs root (or sudo) for apt-get; the harness starts its own
# private server, so the Debian cluster the package may create is not used (and is
# stopped if the package started it).
set -euo pipefail

have_postgres() {
    local bindir
    for bindir in $(pg_config --bindir 2>/dev/null) /usr/lib/postgresql/*/bin; do
        if [ -x "$bindir/initdb" ] && [ -x "$bindir/postgres" ] && [ -x "$bindir/pgbench" ]; then
            echo "$bindir"
            return 0
        fi
    done
    return 1
}

if bindir=$(have_postgres); then
    echo "postgres: already installed ($bindir)"
    exit 0
fi

SUDO=""
if [ "$(id -u)" -ne 0 ]; then
    SUDO="sudo"
fi

echo "postgres: installing postgresql and postgresql-contrib with apt-get"
export DEBIAN_FRONTEND=noninteractive
if ! apt-cache show postgresql >/dev/null 2>&1; then
    $SUDO apt-get update
fi
$SUDO apt-get install -y --no-install-recommends postgresql postgresql-contrib

# The package's own cluster is not ours: stop it if the package started one.
if command -v pg_ctlcluster >/dev/null 2>&1; then
    pg_lsclusters --no-header 2>/dev/null | while read -r ver name _port status _rest; do
        if [ "$status" = "online" ]; then
            echo "postgres: stopping the package's cluster $ver/$name (the harness starts its own)"
            $SUDO pg_ctlcluster "$ver" "$name" stop || true
        fi
    done
fi

if bindir=$(have_postgres); then
    echo "postgres: installed ($bindir)"
else
    echo "postgres: installation finished but initdb/postgres/pgbench were not found" >&2
    exit 1
fi
