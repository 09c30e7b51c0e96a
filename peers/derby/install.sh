#!/usr/bin/env bash
# Apache Derby for `shoal bench --engine derby-embedded,derby-network`: a JDK (17 or later)
# and Maven from Debian's packages if missing, then the Java harness in this directory,
# built against Derby from Maven Central into target/shoal-derby-peer.jar.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")"

missing=()
command -v java >/dev/null 2>&1 || missing+=(default-jdk-headless)
command -v mvn >/dev/null 2>&1 || missing+=(maven)
if [ ${#missing[@]} -gt 0 ]; then
    echo "installing ${missing[*]}"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}"
fi

if [ ! -f pom.xml ]; then
    echo "peers/derby/install.sh: no pom.xml here: the Derby harness is missing" >&2
    exit 1
fi
echo "building the Derby harness (mvn package)"
mvn -q -B -Dstyle.color=never -DskipTests package
test -f target/shoal-derby-peer.jar
echo "built $(pwd)/target/shoal-derby-peer.jar"
