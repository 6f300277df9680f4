#!/bin/sh
# deps.sh PKG... -- make sure these Debian packages are installed: as root, install the
# missing ones with apt-get; otherwise print the exact command and fail.
missing=""
for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
[ -z "$missing" ] && exit 0
if [ "$(id -u)" = 0 ]; then
    echo "installing:$missing"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq && apt-get install -y -qq --no-install-recommends $missing >/dev/null || {
        echo "amla-lab: error: apt-get could not install:$missing" >&2; exit 1; }
else
    echo "amla-lab: missing Debian packages; install them with:" >&2
    echo "  sudo apt-get install$missing" >&2
    exit 1
fi
