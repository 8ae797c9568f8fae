#!/usr/bin/env bash
# PostgreSQL and Redis for the tests of the many-machine setup (tests/manymachines/), nginx
# in front of gunicorn, and Prometheus scraping the stack test's machines. Sourced by .ci/run: installs them with apt-get when run as root, starts
# them on loopback, creates a role that may create databases, and exports TM_TEST_DATABASE_URL
# and TM_TEST_REDIS_URL. Those tests skip only when the variables are absent, so CI always
# runs them.

TM_PG_PORT="${TM_PG_PORT:-5432}"
TM_REDIS_PORT="${TM_REDIS_PORT:-6390}"

tm_services() {
  local version
  if [ "$(id -u)" = 0 ]; then
    if ! command -v redis-server >/dev/null || ! command -v nginx >/dev/null \
        || ! command -v prometheus >/dev/null \
        || ! ls /usr/lib/postgresql/*/bin/postgres >/dev/null 2>&1; then
      apt-get update -q
      DEBIAN_FRONTEND=noninteractive apt-get install -y -q postgresql redis-server nginx \
        prometheus
    fi
  fi

  # The Python clients (psycopg, redis) are among the pinned dependencies.
  make -s .venv/.installed

  # PostgreSQL: the newest installed version's "main" cluster, on loopback.
  version="$(ls /usr/lib/postgresql | sort -V | tail -n 1)"
  if [ -n "$version" ] && [ "$(id -u)" = 0 ]; then
    pg_lsclusters -h | grep -q "^$version main" || pg_createcluster "$version" main >/dev/null
    pg_ctlcluster "$version" main status >/dev/null 2>&1 || pg_ctlcluster "$version" main start
    for _ in $(seq 1 50); do
      pg_isready -q -h 127.0.0.1 -p "$TM_PG_PORT" && break
      sleep 0.2
    done
    su postgres -c "psql -q -p $TM_PG_PORT -tAc \"SELECT 1 FROM pg_roles WHERE rolname='tmsite'\"" \
      | grep -q 1 \
      || su postgres -c "psql -q -p $TM_PG_PORT -c \"CREATE ROLE tmsite LOGIN PASSWORD 'tmsite' CREATEDB\""
    su postgres -c "psql -q -p $TM_PG_PORT -tAc \"SELECT 1 FROM pg_database WHERE datname='tmsite'\"" \
      | grep -q 1 \
      || su postgres -c "createdb -p $TM_PG_PORT -O tmsite tmsite"
    export TM_TEST_DATABASE_URL="postgres://tmsite:tmsite@127.0.0.1:$TM_PG_PORT/tmsite"
  fi

  # Redis: its own instance on a loopback port, nothing written to disk.
  if command -v redis-server >/dev/null; then
    if ! redis-cli -p "$TM_REDIS_PORT" ping >/dev/null 2>&1; then
      redis-server --bind 127.0.0.1 --port "$TM_REDIS_PORT" --save "" --appendonly no \
        --daemonize yes --logfile /tmp/tmsite-redis.log
      for _ in $(seq 1 50); do
        redis-cli -p "$TM_REDIS_PORT" ping >/dev/null 2>&1 && break
        sleep 0.1
      done
    fi
    export TM_TEST_REDIS_URL="redis://127.0.0.1:$TM_REDIS_PORT/0"
  fi
  echo "services: database ${TM_TEST_DATABASE_URL:-(none)}, cache ${TM_TEST_REDIS_URL:-(none)}"
}

tm_services
