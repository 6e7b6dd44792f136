#!/usr/bin/env bash
# Makes sure etcd (3.4 or newer) is installed for the high-availability
# tests and `nsimage bench --server --ha`: Debian's `etcd-server` package,
# installed with apt-get when `etcd` is not on PATH (as root, or through
# sudo). Safe to run from several test processes at once (one lock).
# Prints the etcd binary's path on its last line.
set -euo pipefail
if ! command -v etcd >/dev/null 2>&1; then
    exec 9>/tmp/nsimage-etcd-setup.lock
    flock 9
    if ! command -v etcd >/dev/null 2>&1; then
        sudo=""
        if [[ "$(id -u)" != 0 ]]; then sudo="sudo"; fi
        echo "installing etcd-server with apt-get" >&2
        $sudo apt-get update -qq >&2
        DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq etcd-server >&2
        # The package starts a system etcd on the default ports; the tests
        # start their own members on ports of their own, so it is stopped.
        ($sudo systemctl stop etcd || $sudo service etcd stop || true) >/dev/null 2>&1
    fi
fi
command -v etcd
