#!/usr/bin/env bash
# Every code of the publisher measured, one state at a time (docs/statutes.md, "Every code the publisher
# publishes": the one table). Per state, the two newest releases present in DATA_DIR:
#   1. scripts/heldout_statutes.sh DATA_DIR ST OLD NEW OUT/ho-ST   (checks 1-6, 4b: the questions as plain text)
#   2. scripts/audit_statutes.py, the independent reader, on each release's collection -> OUT/reports/ST-REL.json
#   3. scripts/citation_groundtruth.py codes --states ST -> OUT/cites/ST.json (precision and recall of citations)
# each command and its output in OUT/logs/ST.txt (the tree's commit first). Then
#   python scripts/statutes_table.py OUT        prints the table.
#
#   PATH=.venv/bin:$PATH scripts/measure_statutes.sh DATA_DIR OUT ST [ST ...]    e.g. /data /tmp/m vt wy
set -uo pipefail
if [ $# -lt 3 ]; then
  echo "usage: scripts/measure_statutes.sh DATA_DIR OUT ST [ST ...]" >&2
  exit 2
fi
DATA=$1 M=$2; shift 2
HERE=$(cd "$(dirname "$0")" && pwd)
PY=${PYTHON:-python}
mkdir -p "$M/logs" "$M/reports" "$M/links" "$M/cites"
for s in "$@"; do
  rels=$(ls "$DATA/cic-code-$s/transforms/$s/oc$s/" | sed 's/^r//' | sort -n | tail -2)
  old=$(echo "$rels" | head -1); new=$(echo "$rels" | tail -1)
  {
    echo "# $(date -u +%FT%TZ) tree $HERE/.. at $(git -C "$HERE" rev-parse --short HEAD)$(git -C "$HERE" diff --quiet || echo ' (+uncommitted)')"
    echo "\$ scripts/heldout_statutes.sh $DATA $s $old $new $M/ho-$s"
    start=$SECONDS
    "$HERE/heldout_statutes.sh" "$DATA" "$s" "$old" "$new" "$M/ho-$s"
    echo "# heldout rc=$? $(( SECONDS - start ))s"
    for r in $(echo "$rels" | sort -u); do
      echo "\$ python scripts/audit_statutes.py --data-dir $DATA --state $s --release $r --collection $M/ho-$s/$s$r --json $M/reports/$s-$r.json --links-tsv $M/links/links-$s-$r.tsv"
      start=$SECONDS
      $PY "$HERE/audit_statutes.py" --data-dir "$DATA" --state "$s" --release "$r" --collection "$M/ho-$s/$s$r" \
        --json "$M/reports/$s-$r.json" --links-tsv "$M/links/links-$s-$r.tsv" 2>&1 | tail -5
      echo "# audit rc=$? $(( SECONDS - start ))s"
    done
    echo "\$ python scripts/citation_groundtruth.py codes --data-dir $DATA --states $s --releases 2 --json $M/cites/$s.json"
    start=$SECONDS
    $PY "$HERE/citation_groundtruth.py" codes --data-dir "$DATA" --states "$s" --releases 2 --jobs 1 \
      --json "$M/cites/$s.json" 2>&1 | tail -8
    echo "# cites rc=$? $(( SECONDS - start ))s"
  } > "$M/logs/$s.txt" 2>&1
  echo "$s done $(date -u +%T)"
done
