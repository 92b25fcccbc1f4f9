#!/usr/bin/env bash
# A throwaway single-node Ceph cluster with an S3 gateway on 127.0.0.1, for the S3 store tests.
#
#   test/support/ceph.sh start    start (or reuse) the cluster; print ONLY `export` lines on stdout:
#                                 HOMEFS_TEST_S3_URL, AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY
#   test/support/ceph.sh stop     kill every daemon it started and remove its state directory
#   test/support/ceph.sh status   exit 0 and print the exports if the cluster answers, else exit 1
#
# Built from the Debian packages ceph-mon, ceph-osd, ceph-mgr and radosgw, without systemd: one mon, one mgr,
# one OSD on `memstore` (objects live in RAM), pool size 1, auth none, radosgw's beast frontend bound to
# 127.0.0.1 on a free port. HOMEFS_CEPH_OBJECTSTORE=bluestore puts the OSD on bluestore over a sparse file of
# HOMEFS_CEPH_BLOCK_BYTES (default 256 GiB) in the state directory instead: for benchmarks of homes larger
# than memstore can hold (it needs about 2.3x the stored bytes in RAM), such as the full-size home. All state (config, mon store, logs, pid files) lives in $HOMEFS_CEPH_DIR
# (default /tmp/homefs-ceph-$UID). Everything listens on loopback only. Diagnostics go to stderr.
#
# Holders: a process that starts the cluster for itself (test/support/s3.ts) sets HOMEFS_CEPH_HOLDER=<pid>
# on start and calls `stop --holder <pid>`; the cluster is then stopped only when no live holder remains
# and no start without a holder (test/run-all, a developer) asked for it, so concurrent test processes
# share one cluster and never pull it from under a run that started it. A plain `stop` always stops.
set -euo pipefail

DIR=${HOMEFS_CEPH_DIR:-/tmp/homefs-ceph-${UID:-$(id -u)}}
CONF=$DIR/ceph.conf
BUCKET=${HOMEFS_CEPH_BUCKET:-homefs-test}
REGION=us-east-1
START_TIMEOUT=${HOMEFS_CEPH_TIMEOUT:-240}

log() { echo "ceph.sh: $*" >&2; }
STARTING=
die() {
  log "$*"
  if [ -n "$STARTING" ]; then failed_start_cleanup; fi
  exit 1
}

# A start that fails must not leave daemons behind: show the logs' tails, keep a copy, stop everything.
failed_start_cleanup() {
  STARTING=
  local kept=${DIR}.failed-logs
  for f in "$DIR"/log/mon.a.log "$DIR"/log/osd.0.log "$DIR"/log/client.rgw.log "$DIR"/log/mkfs.log; do
    [ -s "$f" ] || continue
    echo "---- last lines of $(basename "$f") ----" >&2
    tail -n 15 "$f" >&2
  done
  rm -rf "$kept"
  cp -r "$DIR/log" "$kept" 2>/dev/null || true
  do_stop_all
  log "stopped the half-started cluster; its logs are in $kept"
}

free_port() {
  node -e "const s=require('net').createServer();s.listen(0,'127.0.0.1',()=>{console.log(s.address().port);s.close()})"
}

# ceph/radosgw-admin with our config and a bounded wait, so a dead mon never hangs the caller.
c() { timeout 30 ceph -c "$CONF" --connect-timeout 20 "$@"; }
rgwadmin() { timeout 60 radosgw-admin -c "$CONF" "$@"; }
# Starts a daemon with no fd of ours but stdio: the ceph daemons outlive this script, and an fd they inherit
# keeps whatever it holds, such as a lock the caller took around a benchmark (`flock cpu.lock bench/...`
# once left the machine's CPU lock held by the test Ceph for good), or our own ${DIR}.lock (fd 9).
daemon() {
  (
    for fd in /proc/$BASHPID/fd/*; do
      n=${fd##*/}
      if [ "$n" -gt 2 ]; then eval "exec $n>&-"; fi
    done
    exec "$@"
  )
}

pid_alive() { [ -f "$1" ] && kill -0 "$(cat "$1")" 2>/dev/null; }

s3_answers() {
  local port=$1
  curl -s -o /dev/null -m 2 -w '%{http_code}' "http://127.0.0.1:$port/" 2>/dev/null | grep -q '^200$'
}

print_env() {
  # shellcheck disable=SC1091
  . "$DIR/env"
  printf "export HOMEFS_TEST_S3_URL='s3://%s/test?endpoint=http://127.0.0.1:%s&region=%s&pathStyle=true'\n" "$BUCKET" "$RGW_PORT" "$REGION"
  printf "export AWS_ACCESS_KEY_ID='%s'\n" "$ACCESS_KEY"
  printf "export AWS_SECRET_ACCESS_KEY='%s'\n" "$SECRET_KEY"
}

running() {
  [ -f "$DIR/env" ] || return 1
  for d in mon.a mgr.x osd.0 client.rgw; do pid_alive "$DIR/run/$d.pid" || return 1; done
  # shellcheck disable=SC1091
  . "$DIR/env"
  s3_answers "$RGW_PORT"
}

# A holder's start registers its pid; any other start marks the cluster as wanted until a plain `stop`.
add_holder() {
  if [ -n "${HOMEFS_CEPH_HOLDER:-}" ]; then
    mkdir -p "$DIR/holders" && : >"$DIR/holders/$HOMEFS_CEPH_HOLDER"
  else
    : >"$DIR/unmanaged"
  fi
}

wait_for() { # <seconds> <description> <command...>
  local secs=$1 what=$2; shift 2
  local deadline=$((SECONDS + secs))
  until "$@" >/dev/null 2>&1; do
    if [ $SECONDS -ge $deadline ]; then
      log "timed out after ${secs}s waiting for $what; logs in $DIR/log"
      return 1
    fi
    sleep 0.5
  done
}

OBJECTSTORE=${HOMEFS_CEPH_OBJECTSTORE:-memstore}
case $OBJECTSTORE in memstore | bluestore) ;; *) echo "ceph.sh: HOMEFS_CEPH_OBJECTSTORE must be memstore or bluestore, not '$OBJECTSTORE'" >&2; exit 2 ;; esac

objectstore_conf() {
  if [ "$OBJECTSTORE" = bluestore ]; then
    cat <<EOF
osd objectstore = bluestore
# a sparse file in the OSD's data directory, created by --mkfs; its bytes are used as they are written
bluestore block create = true
bluestore block size = ${HOMEFS_CEPH_BLOCK_BYTES:-274877906944}
bluestore fsck on mount = false
EOF
  else
    cat <<EOF
osd objectstore = memstore
# RAM-backed and allocated lazily: room for a whole test suite (a full OSD refuses every write)
memstore device bytes = 12884901888
EOF
  fi
}

write_conf() {
  local fsid=$1 mon_port=$2 rgw_port=$3
  cat >"$CONF" <<EOF
[global]
fsid = $fsid
mon host = v2:127.0.0.1:$mon_port
mon initial members = a
public addr = 127.0.0.1
ms bind msgr1 = false
ms bind ipv6 = false
auth cluster required = none
auth service required = none
auth client required = none
keyring = $DIR/keyring
run dir = $DIR/run
admin socket = $DIR/run/\$name.asok
pid file = $DIR/run/\$name.pid
log file = $DIR/log/\$name.log
log to stderr = false
err to stderr = false
mon cluster log file = $DIR/log/cluster.log
crash dir = $DIR/crash
osd pool default size = 1
osd pool default min size = 1
osd pool default pg num = 8
osd pool default pgp num = 8
osd pool default pg autoscale mode = off
osd crush chooseleaf type = 0
mon allow pool size one = true
mon allow pool delete = true
mon max pg per osd = 1000
mon warn on pool no redundancy = false
# rgw's pools are created with a default of 8 PGs above; keep memory small
osd memory target = 939524096
$(objectstore_conf)
mon data avail warn = 2
mon data avail crit = 1
# threads: the CI machine has 2 cores
osd op num shards = 1
osd op num threads per shard = 2

[mon]
mon data = $DIR/mon/\$name

[mgr]
mgr data = $DIR/mgr/\$name
# the default module set includes the dashboard and more; none is needed here
mgr initial modules =

[osd]
osd data = $DIR/osd/\$name

[client.rgw]
# radosgw asks for a 'secure' mon connection by default, which auth none cannot provide (-13 forever)
ms mon client mode = crc
rgw frontends = beast endpoint=127.0.0.1:$rgw_port tcp_nodelay=1
rgw data = $DIR/rgw
rgw enable usage log = false
rgw thread pool size = 64
EOF
}

do_start() {
  if running; then
    log "reusing the running cluster in $DIR"
    add_holder
    print_env
    return 0
  fi
  if [ -d "$DIR" ]; then
    for d in mon.a mgr.x osd.0 client.rgw; do pid_alive "$DIR/run/$d.pid" || log "stale cluster in $DIR: $d is not running"; done
    log "stopping the stale cluster in $DIR first"
    do_stop_all
  fi
  local t0=$SECONDS
  for bin in ceph-mon ceph-osd ceph-mgr radosgw radosgw-admin monmaptool ceph curl node; do
    command -v "$bin" >/dev/null || die "missing '$bin': apt-get install ceph-mon ceph-osd ceph-mgr radosgw curl"
  done
  STARTING=1
  mkdir -p "$DIR"/{run,log,crash,mon/mon.a,mgr/mgr.x,osd/osd.0,rgw}
  local fsid mon_port rgw_port access secret
  fsid=$(cat /proc/sys/kernel/random/uuid)
  mon_port=$(free_port)
  rgw_port=$(free_port)
  while [ "$rgw_port" = "$mon_port" ]; do rgw_port=$(free_port); done
  access=HOMEFS$(head -c 8 /dev/urandom | od -An -tx1 | tr -d ' \n' | tr a-f A-F)
  secret=$(head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n')
  write_conf "$fsid" "$mon_port" "$rgw_port"
  : >"$DIR/keyring"

  monmaptool --create --clobber --fsid "$fsid" --addv a "[v2:127.0.0.1:$mon_port]" "$DIR/monmap" >/dev/null 2>&1 \
    || die "monmaptool failed"
  ceph-mon -c "$CONF" --mkfs -i a --monmap "$DIR/monmap" >>"$DIR/log/mkfs.log" 2>&1 || die "ceph-mon --mkfs failed; see ${DIR}.failed-logs/mkfs.log"
  daemon ceph-mon -c "$CONF" -i a >>"$DIR/log/daemons.log" 2>&1 || die "ceph-mon did not start; see ${DIR}.failed-logs/mon.a.log"
  wait_for 60 "the monitor" c mon stat || die "start failed"
  log "mon up after $((SECONDS - t0))s"

  daemon ceph-mgr -c "$CONF" -i x >>"$DIR/log/daemons.log" 2>&1 || die "ceph-mgr did not start; see ${DIR}.failed-logs/mgr.x.log"

  local uuid id
  uuid=$(cat /proc/sys/kernel/random/uuid)
  id=$(c osd new "$uuid") || die "ceph osd new failed"
  [ "$id" = 0 ] || die "unexpected OSD id $id"
  ceph-osd -c "$CONF" -i 0 --mkfs --osd-uuid "$uuid" >>"$DIR/log/mkfs.log" 2>&1 || die "ceph-osd --mkfs failed; see ${DIR}.failed-logs/mkfs.log"
  daemon ceph-osd -c "$CONF" -i 0 >>"$DIR/log/daemons.log" 2>&1 || die "ceph-osd did not start; see ${DIR}.failed-logs/osd.0.log"
  osd_up() { c osd dump 2>/dev/null | grep -q '^osd.0 up'; }
  wait_for 90 "the OSD to come up" osd_up || die "start failed"
  log "osd up after $((SECONDS - t0))s"

  daemon radosgw -c "$CONF" -n client.rgw >>"$DIR/log/daemons.log" 2>&1 || die "radosgw did not start; see ${DIR}.failed-logs/client.rgw.log"
  wait_for 120 "the S3 gateway on 127.0.0.1:$rgw_port" s3_answers "$rgw_port" || die "start failed"
  log "rgw answers after $((SECONDS - t0))s"

  rgwadmin user create --uid homefs-test --display-name "homefs tests" \
    --access-key "$access" --secret-key "$secret" >>"$DIR/log/admin.log" 2>&1 || die "radosgw-admin user create failed; see ${DIR}.failed-logs/admin.log"
  printf 'RGW_PORT=%s\nACCESS_KEY=%s\nSECRET_KEY=%s\n' "$rgw_port" "$access" "$secret" >"$DIR/env"

  local code
  # RGW checks x-amz-content-sha256 (here: the hash of the empty body), which curl does not send by itself
  code=$(curl -s -o "$DIR/log/bucket.out" -w '%{http_code}' -m 30 -X PUT \
    -H 'x-amz-content-sha256: e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855' \
    --aws-sigv4 "aws:amz:$REGION:s3" --user "$access:$secret" "http://127.0.0.1:$rgw_port/$BUCKET") || true
  case "$code" in
    200|409) ;;
    *) die "creating bucket $BUCKET failed with HTTP $code: $(cat "$DIR/log/bucket.out")" ;;
  esac
  STARTING=
  log "cluster ready in $((SECONDS - t0))s (S3 on 127.0.0.1:$rgw_port, bucket $BUCKET, state in $DIR)"
  add_holder
  print_env
}

kill_pidfile() { # sends TERM, waits, then KILL
  local f=$1 pid
  [ -f "$f" ] || return 0
  pid=$(cat "$f")
  kill -0 "$pid" 2>/dev/null || return 0
  kill -TERM "$pid" 2>/dev/null || true
  for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || return 0; sleep 0.1; done
  kill -KILL "$pid" 2>/dev/null || true
}

do_stop_all() {
  for d in client.rgw osd.0 mgr.x mon.a; do kill_pidfile "$DIR/run/$d.pid"; done
  rm -rf "$DIR"
}

do_stop() {
  if [ "${1:-}" = "--holder" ]; then
    [ -n "${2:-}" ] || die "usage: ceph.sh stop [--holder PID]"
    rm -f "$DIR/holders/$2"
    if [ -e "$DIR/unmanaged" ]; then
      log "cluster was also started without a holder (test/run-all or by hand); leaving it running"
      return 0
    fi
    if [ -d "$DIR/holders" ]; then
      for h in "$DIR"/holders/*; do
        [ -e "$h" ] || continue
        if kill -0 "$(basename "$h")" 2>/dev/null; then
          log "cluster still held by pid $(basename "$h"); leaving it running"
          return 0
        fi
        rm -f "$h"
      done
    fi
  fi
  [ -d "$DIR" ] || return 0
  do_stop_all
  log "stopped"
}

# Also on `set -e` failures and on being killed mid-start (a test runner's timeout).
trap 'if [ -n "$STARTING" ]; then failed_start_cleanup; fi' EXIT
trap 'exit 143' TERM INT

# Serialize start/stop so concurrent callers share one cluster instead of racing to build two. The
# daemons are started with fd 9 closed, or they would hold this lock for as long as they run.
exec 9>"${DIR}.lock"
flock -w "$((START_TIMEOUT + 30))" 9 || die "another ceph.sh holds ${DIR}.lock"

case "${1:-}" in
  start) do_start ;;
  stop) shift; do_stop "$@" ;;
  status)
    if running; then print_env; else log "not running"; exit 1; fi ;;
  *) die "usage: ceph.sh start|stop|status" ;;
esac
