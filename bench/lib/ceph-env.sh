# Sourced by the bench scripts that measure against the shared test Ceph: starts it if needed and sets
# `up` (RGW's host:port), `bucket`, and `srv`, which prints the CPU ticks RGW and the OSD have used
# (0 for a daemon that is gone: someone restarted the shared test Ceph; that step's server CPU is then wrong).
eval "$(test/support/ceph.sh status 2>/dev/null || test/support/ceph.sh start 2>/dev/null)"
up=$(echo "$HOMEFS_TEST_S3_URL" | sed -E 's#.*endpoint=http://([0-9.]+:[0-9]+).*#\1#')
bucket=$(echo "$HOMEFS_TEST_S3_URL" | sed -E 's#s3://([^/?]+).*#\1#')
cephdir=${HOMEFS_CEPH_DIR:-/tmp/homefs-ceph-$(id -u)}
rgw=$(cat "$cephdir/run/client.rgw.pid"); osd=$(cat "$cephdir/run/osd.0.pid")
srv() { echo $(( $(awk '{print $14+$15}' /proc/$rgw/stat 2>/dev/null || echo 0) + $(awk '{print $14+$15}' /proc/$osd/stat 2>/dev/null || echo 0) )); }
