#!/usr/bin/env bash
# Installs the peer engines that `shoal bench --engine ...` and `shoal bench compare` run
# Shoal against (issue 8), from the package registries only: Debian packages for
# PostgreSQL, MariaDB and Berkeley DB's headers, Maven Central for Apache Derby.
#
# Usage: peers/install.sh [postgres] [mariadb] [bdb] [derby]   (no argument: all four)
# Needs root (apt-get). Idempotent: what is already installed is left as it is.
# Each peer's own steps are in peers/<peer>/install.sh; Derby's harness is built with Maven
# into peers/derby/target/shoal-derby-peer.jar.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")"

peers=("$@")
if [ ${#peers[@]} -eq 0 ]; then
    peers=(postgres mariadb bdb derby)
fi

failed=()
for peer in "${peers[@]}"; do
    case "$peer" in
        postgres | mariadb | bdb | derby) ;;
        *)
            echo "peers/install.sh: unknown peer '$peer' (choose from postgres, mariadb, bdb, derby)" >&2
            exit 2
            ;;
    esac
    echo "==> installing $peer"
    if [ -x "$peer/install.sh" ] || [ -f "$peer/install.sh" ]; then
        if ! bash "$peer/install.sh"; then
            echo "peers/install.sh: installing $peer failed" >&2
            failed+=("$peer")
        fi
    else
        echo "peers/install.sh: $peer/install.sh is missing" >&2
        failed+=("$peer")
    fi
done

if [ ${#failed[@]} -gt 0 ]; then
    echo "peers/install.sh: failed: ${failed[*]}" >&2
    exit 1
fi
echo "peers/install.sh: installed ${peers[*]}"
