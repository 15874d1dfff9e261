# shellcheck shell=bash
# Throwaway Redis and PostgreSQL servers on 127.0.0.1 for the store tests.
#
# Source it from the CI test script; it starts both servers at once (free ports, one
# temporary directory), exports their URLs and defines plait_services_stop:
#
#     source .ci/services.sh || exit 1
#     trap plait_services_stop EXIT
#
# Exports PLAIT_TEST_REDIS_URL and PLAIT_TEST_POSTGRES_URL (PostgreSQL superuser
# "postgres", trust auth on loopback: the tests create and drop databases).
# Needs the Debian packages redis-server and postgresql
# (apt-get update && apt-get install -y redis-server postgresql); without them it says so
# and returns 1. Running as root, the cluster belongs to the "postgres" OS user.
# Sourcing never changes the caller's shell options (no set -e here).

plait_services_stop() {
    # Safe to call twice, from a trap, or after a failed start.
    local dir="${PLAIT_SERVICES_DIR:-}"
    if [[ -n "$dir" && -f "$dir/redis/redis.pid" ]]; then
        kill "$(cat "$dir/redis/redis.pid")" 2>/dev/null || true
    fi
    if [[ -n "$dir" && -f "$dir/pg/data/postmaster.pid" && -n "${PLAIT_SERVICES_PG_CTL:-}" ]]; then
        ${PLAIT_SERVICES_AS:-} "$PLAIT_SERVICES_PG_CTL" -D "$dir/pg/data" -m fast -w stop \
            >/dev/null 2>&1 || true
    fi
    if [[ -n "$dir" && -d "$dir" ]]; then
        rm -rf "$dir"
    fi
    unset PLAIT_SERVICES_DIR PLAIT_SERVICES_PG_CTL PLAIT_SERVICES_AS
    unset PLAIT_TEST_REDIS_URL PLAIT_TEST_POSTGRES_URL
    return 0
}

_plait_services_free_port() {
    python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

_plait_services_redis_ready() {
    python3 - "$1" <<'PY'
import socket, sys, time
deadline = time.monotonic() + 15
while time.monotonic() < deadline:
    try:
        with socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=0.5) as s:
            s.sendall(b"PING\r\n")
            if s.recv(16).startswith(b"+PONG"):
                sys.exit(0)
    except OSError:
        pass
    time.sleep(0.05)
sys.exit(1)
PY
}

_plait_services_pg_bin() {
    local dir
    if [[ -n "${PLAIT_PG_BIN:-}" && -x "$PLAIT_PG_BIN/initdb" ]]; then
        echo "$PLAIT_PG_BIN"
        return 0
    fi
    for dir in $(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V -r); do
        if [[ -x "$dir/initdb" && -x "$dir/pg_ctl" ]]; then
            echo "$dir"
            return 0
        fi
    done
    if command -v initdb >/dev/null 2>&1; then
        dirname "$(command -v initdb)"
        return 0
    fi
    return 1
}

plait_services_start() {
    local redis_bin pg_bin dir redis_port pg_port
    redis_bin="$(command -v redis-server)" || {
        echo "services.sh: redis-server not found; install the Debian package redis-server" \
            "(apt-get install -y redis-server)" >&2
        return 1
    }
    pg_bin="$(_plait_services_pg_bin)" || {
        echo "services.sh: PostgreSQL binaries (initdb, pg_ctl) not found; install the Debian" \
            "package postgresql (apt-get install -y postgresql)" >&2
        return 1
    }
    dir="$(mktemp -d "${TMPDIR:-/tmp}/plait-services.XXXXXX")" || return 1
    chmod 711 "$dir"  # the postgres user must reach its data directory inside
    export PLAIT_SERVICES_DIR="$dir"
    export PLAIT_SERVICES_PG_CTL="$pg_bin/pg_ctl"
    mkdir -p "$dir/redis" "$dir/pg"
    export PLAIT_SERVICES_AS=""
    if [[ "$(id -u)" == 0 ]]; then
        if ! id postgres >/dev/null 2>&1; then
            echo "services.sh: running as root needs the 'postgres' OS user (package postgresql)" >&2
            plait_services_stop
            return 1
        fi
        local runuser
        runuser="$(command -v runuser || ls /usr/sbin/runuser /sbin/runuser 2>/dev/null | head -n 1)"
        if [[ -z "$runuser" ]]; then
            echo "services.sh: running as root needs runuser (package util-linux)" >&2
            plait_services_stop
            return 1
        fi
        chown postgres: "$dir/pg"
        PLAIT_SERVICES_AS="$runuser -u postgres --"
    fi

    redis_port="$(_plait_services_free_port)"
    "$redis_bin" --port "$redis_port" --bind 127.0.0.1 --save '' --appendonly no \
        --dir "$dir/redis" --daemonize yes --pidfile "$dir/redis/redis.pid" \
        --logfile "$dir/redis/redis.log" >/dev/null || {
        echo "services.sh: redis-server did not start" >&2
        plait_services_stop
        return 1
    }
    if ! _plait_services_redis_ready "$redis_port"; then
        echo "services.sh: redis-server on port $redis_port did not answer; its log:" >&2
        cat "$dir/redis/redis.log" >&2
        plait_services_stop
        return 1
    fi

    pg_port="$(_plait_services_free_port)"
    if ! $PLAIT_SERVICES_AS "$pg_bin/initdb" -D "$dir/pg/data" -A trust -U postgres -E UTF8 \
        --no-sync >"$dir/initdb.log" 2>&1; then
        echo "services.sh: initdb failed:" >&2
        cat "$dir/initdb.log" >&2
        plait_services_stop
        return 1
    fi
    if ! $PLAIT_SERVICES_AS "$pg_bin/pg_ctl" -D "$dir/pg/data" \
        -o "-p $pg_port -c listen_addresses=127.0.0.1 -k $dir/pg" \
        -l "$dir/pg/server.log" -w -t 60 start >/dev/null; then
        echo "services.sh: PostgreSQL did not start; its log:" >&2
        cat "$dir/pg/server.log" >&2
        plait_services_stop
        return 1
    fi

    export PLAIT_TEST_REDIS_URL="redis://127.0.0.1:$redis_port/0"
    export PLAIT_TEST_POSTGRES_URL="postgresql://postgres@127.0.0.1:$pg_port/postgres"
    echo "services.sh: Redis at $PLAIT_TEST_REDIS_URL, PostgreSQL at $PLAIT_TEST_POSTGRES_URL"
    return 0
}

plait_services_start
