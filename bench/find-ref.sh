#!/usr/bin/env bash
# `find` over one tree, cold and twice again: native, the reference C FUSE server (libfuse's passthrough_hp,
# kept outside the repository) and homefs builds with a records budget below the tree's size, by hand:
#
#   REF=<fuse-reference dir> SRC=<tree on ext4> [WORK=/var/tmp/find-ref] [MAX_RECORDS=2048] [ROUNDS=2] \
#     bench/find-ref.sh <checkout with a built bin/homefs> ...
#
# The reference keeps an fd per inode it was told of: the tree must hold fewer entries than `ulimit -n`.
# The tree is pushed once to a file:// store under WORK; the page cache is dropped before each cold find;
# each homefs mount starts from new state and cache directories. Prints seconds and entries listed.
set -eu
REF=${REF:?the fuse-reference directory}; SRC=${SRC:?a tree on ext4}
WORK=${WORK:-/var/tmp/find-ref}; MAX=${MAX_RECORDS:-2048}
M=$WORK/mnt; mkdir -p $M
t() { local s; s=$(date +%s.%N); local n; n=$(find "$1" | wc -l); echo "$(echo "$(date +%s.%N)-$s" | bc) s ($n)"; }
cold() { sync; echo 3 > /proc/sys/vm/drop_caches; }
first=$1
[ -d $WORK/store ] || "$first/bin/homefs" push "$SRC" acme/findref --store file://$WORK/store > /dev/null 2>&1
for r in $(seq ${ROUNDS:-2}); do
  cold; echo "round $r native: cold $(t "$SRC"), again $(t "$SRC"), $(t "$SRC")"
  LD_LIBRARY_PATH=$REF/lib $REF/passthrough_hp --foreground "$SRC" $M > $WORK/ref.log 2>&1 &
  ref=$!
  for _ in $(seq 50); do mountpoint -q $M && break; sleep 0.1; done
  cold; echo "round $r reference: cold $(t $M), again $(t $M), $(t $M)"
  fusermount3 -u $M; wait $ref || true
  for b in "$@"; do
    rm -rf $WORK/state $WORK/cache; cold
    "$b/bin/homefs" mount acme/findref $M --store file://$WORK/store --state-dir $WORK/state --cache-dir $WORK/cache --max-records $MAX > /dev/null
    c=$(t $M); sleep 3 # the trim brings the records under the budget
    echo "round $r homefs $b: cold $c, again $(t $M), $(t $M)"
    "$b/bin/homefs" sleep $M > /dev/null
  done
done
