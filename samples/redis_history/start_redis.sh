#!/usr/bin/env bash
# Start a local Redis for the sample: Debian's redis-server on loopback, its data in a fresh temporary folder.
#
#   ./start_redis.sh [PORT]        (default 6379)
#
# Installs redis-server with apt when it is missing (needs root), starts it in the background and prints
# the REDIS_URL to use plus the command that stops it.
set -euo pipefail

port="${1:-6379}"
if ! [[ "$port" =~ ^[0-9]+$ ]] || ((port < 1 || port > 65535)); then
    echo "usage: $0 [PORT]  (PORT is a number from 1 to 65535, default 6379)" >&2
    exit 2
fi

if ! command -v redis-server >/dev/null 2>&1; then
    if [ "$(id -u)" -ne 0 ]; then
        echo "redis-server is not installed; run: sudo apt-get update && sudo apt-get install -y redis-server" >&2
        exit 1
    fi
    echo "Installing redis-server with apt ..." >&2
    apt-get update -qq >/dev/null
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq redis-server >/dev/null
fi

data_dir="$(mktemp -d -t agent-host-redis.XXXXXX)"
redis-server \
    --bind 127.0.0.1 \
    --port "$port" \
    --dir "$data_dir" \
    --daemonize yes \
    --pidfile "$data_dir/redis.pid" \
    --logfile "$data_dir/redis.log" \
    --appendonly yes

# Wait until it answers (or say why it did not start).
for _ in $(seq 1 50); do
    if redis-cli -h 127.0.0.1 -p "$port" ping 2>/dev/null | grep -q PONG; then
        echo "REDIS_URL=redis://127.0.0.1:$port/0"
        echo "data: $data_dir   stop: kill \$(cat $data_dir/redis.pid)" >&2
        exit 0
    fi
    sleep 0.1
done
echo "redis-server did not answer on 127.0.0.1:$port; its log:" >&2
cat "$data_dir/redis.log" >&2 || true
exit 1
