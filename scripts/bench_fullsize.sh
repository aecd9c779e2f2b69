#!/usr/bin/env bash
# Full size (issue 31, item 5): every release of a state's code present in DATA_DIR, converted, indexed once
# (the oldest release) and brought forward release by release with `legalir index update --to`, then
# compared with a fresh index of the newest release (runs byte-identical) and searched (docs/statutes.md,
# "Full size: every Georgia release").
#
#   scripts/bench_fullsize.sh DATA_DIR STATE WORK      e.g. /work/scratch/full/data ga /work/scratch/full
#   RELEASES="85 86" scripts/bench_fullsize.sh ...      only these releases (default: every rNN folder of
#                                                       DATA_DIR/cic-code-STATE/transforms/STATE/*/)
#
# Every command runs under /usr/bin/time -v (wall, peak RSS) with its output in WORK/logs/<step>.log and
# .time; a step with WORK/logs/<step>.ok is done and skipped, so the script resumes where it stopped (the
# update chain in release order). Writes WORK/<state><release>/ (collections), WORK/idx/bm25 (the oldest
# release's index and its updated versions), WORK/fresh<newest>/, WORK/runs/, and prints the tables.
set -euo pipefail
DATA=$1 ST=$2 WORK=$3
L="${LEGALIR:-python -m legalir.cli}"
LOG=$WORK/logs
mkdir -p "$LOG" "$WORK/runs"
if [ -z "${RELEASES:-}" ]; then
  RELEASES=$(ls -d "$DATA"/cic-code-"$ST"/transforms/"$ST"/*/r[0-9]* | sed 's/.*\/r//' | sort -n | tr '\n' ' ')
fi
read -r -a RELS <<< "$RELEASES"
FIRST=${RELS[0]} LAST=${RELS[${#RELS[@]}-1]}

# step NAME CMD...: run CMD once (skipped when WORK/logs/NAME.ok exists), timed, its output logged.
step() {
  local name=$1; shift
  [ -f "$LOG/$name.ok" ] && return 0
  echo "$(date +%T) $name: $*" >&2
  if /usr/bin/time -v -o "$LOG/$name.time" "$@" > "$LOG/$name.log" 2>&1; then
    touch "$LOG/$name.ok"
  else
    echo "$name failed: see $LOG/$name.log" >&2; tail -5 "$LOG/$name.log" >&2; exit 1
  fi
}
size() { du -sbD "$1" | cut -f1 > "$LOG/$2.bytes"; du -shD "$1" >> "$LOG/$2.bytes"; }  # -D: an index is a link to its version folder

# 1. convert every release
for r in "${RELS[@]}"; do
  C=$WORK/$ST$r
  if [ ! -f "$LOG/convert-$r.ok" ]; then rm -rf "$C"; fi
  step "convert-$r" $L convert statutes --data-dir "$DATA" --option state="$ST" --option release="$r" --out "$C"
  [ -f "$LOG/size-$r.bytes" ] || size "$C" "size-$r"
done

# 2. index the oldest release, then update it to each newer release in turn
if [ ! -f "$LOG/index-$FIRST.ok" ]; then rm -rf "$WORK/idx"; fi
step "index-$FIRST" $L index "$WORK/$ST$FIRST" "$WORK/idx/bm25"
[ -f "$LOG/idx-$FIRST.bytes" ] || size "$WORK/idx" "idx-$FIRST"
for r in "${RELS[@]:1}"; do
  step "update-$r" $L index update "$WORK/idx/bm25" --to "$WORK/$ST$r"
  [ -f "$LOG/idx-$r.bytes" ] || size "$WORK/idx" "idx-$r"
done

# 3. a fresh index of the newest release; the test topics' runs of both must be byte-identical
if [ ! -f "$LOG/fresh-$LAST.ok" ]; then rm -rf "$WORK/fresh$LAST"; fi
step "fresh-$LAST" $L index "$WORK/$ST$LAST" "$WORK/fresh$LAST"
[ -f "$LOG/freshsize-$LAST.bytes" ] || size "$WORK/fresh$LAST" "freshsize-$LAST"
for set in test train; do
  for which in updated fresh; do
    idx=$WORK/idx/bm25; [ $which = fresh ] && idx=$WORK/fresh$LAST
    step "search-$which-$set" $L search "$idx" "$WORK/$ST$LAST/topics/$set.jsonl" "$WORK/runs/$which.$set.trec" \
      -k 100 --citations on --force
  done
done
for set in test train; do
  if cmp "$WORK/runs/updated.$set.trec" "$WORK/runs/fresh.$set.trec"; then
    echo "runs of r$LAST's $set topics, updated index vs fresh index: byte-identical ($(wc -l < "$WORK/runs/fresh.$set.trec") lines)"
  else
    echo "runs of r$LAST's $set topics, updated index vs fresh index: DIFFER" >&2; exit 1
  fi
done

# 4. point in time: the index keeps the newest version of each release; --as-of R must search as a fresh index
#    of R alone (the runs of R's test topics byte-identical), for every release
AGREE=0 ALL=0
for r in "${RELS[@]}"; do
  [ "$r" = "$LAST" ] || { if [ ! -f "$LOG/fresh-$r.ok" ]; then rm -rf "$WORK/fresh$r"; fi
                          step "fresh-$r" $L index "$WORK/$ST$r" "$WORK/fresh$r"; }
  step "asof-$r" $L search "$WORK/idx/bm25" "$WORK/$ST$r/topics/test.jsonl" "$WORK/runs/asof$r.test.trec" \
    -k 100 --citations on --as-of "$r" --force
  step "asof-fresh-$r" $L search "$WORK/fresh$r" "$WORK/$ST$r/topics/test.jsonl" "$WORK/runs/fresh$r.test.trec" \
    -k 100 --citations on --force
  ALL=$((ALL + 1))
  if cmp -s "$WORK/runs/asof$r.test.trec" "$WORK/runs/fresh$r.test.trec"; then AGREE=$((AGREE + 1))
  else echo "r$r: --as-of $r and a fresh index of r$r DIFFER" >&2; fi
done
echo "point in time: $AGREE of $ALL releases searched --as-of give a fresh index's run byte for byte"
[ "$AGREE" = "$ALL" ] || exit 1

# 5. the tables
python - "$WORK" "$ST" "$RELEASES" <<'EOF'
import json, re, sys
from pathlib import Path
work, st, rels = Path(sys.argv[1]), sys.argv[2], sys.argv[3].split()
log = work / "logs"
def tv(name):
    t = (log / f"{name}.time").read_text()
    w = re.search(r"Elapsed \(wall clock\) time \(h:mm:ss or m:ss\): (\S+)", t).group(1).split(":")
    secs = sum(float(x) * 60 ** i for i, x in enumerate(reversed(w)))
    return secs, int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", t).group(1)) / 1024
def mb(name):
    return int((log / f"{name}.bytes").read_text().split()[0]) / 1e6
print(f"\n| release | files | sections read | documents | skipped | convert s | peak RSS MB | collection MB |")
print("|---|---:|---:|---:|---:|---:|---:|---:|")
reasons = {}
for r in rels:
    rep = json.loads((work / f"{st}{r}" / "manifest.json").read_text())["reader"]
    s, m = tv(f"convert-{r}")
    files = rep["files"] if isinstance(rep["files"], int) else len(rep["files"])
    print(f"| r{r} | {files} | {rep['sections_read']:,} | {rep['documents_written']:,} | "
          f"{sum(rep['skipped'].values())} | {s:.0f} | {m:.0f} | {mb(f'size-{r}'):.1f} |")
    for k, v in rep["skipped"].items():
        reasons.setdefault(k, {})[r] = v
print("\nskips by reason (release: count):")
for k, d in sorted(reasons.items()):
    print(f"- {k}: " + ", ".join(f"r{r} {n}" for r, n in d.items()))
print(f"\n| step | added | replaced | of which text changed | deleted | unchanged | documents | s | peak RSS MB | WORK/idx MB |")
print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
s, m = tv(f"index-{rels[0]}")
print(f"| index r{rels[0]} | | | | | | | {s:.1f} | {m:.0f} | {mb(f'idx-{rels[0]}'):.0f} |")
pat = re.compile(r"now (\S+), (\d+) documents \((\d+) added, (\d+) replaced, (\d+) deleted, (\d+) unchanged; "
                 r"(\d+) of the replaced with a new text\)")
for prev, r in zip(rels, rels[1:]):
    s, m = tv(f"update-{r}")
    g = pat.search((log / f"update-{r}.log").read_text())
    if g is None:
        print(f"| r{prev} -> r{r} | nothing to apply | | | | | | {s:.1f} | {m:.0f} | {mb(f'idx-{r}'):.0f} |")
        continue
    ver, docs, a, rp, d, same, tc = g.groups()
    print(f"| r{prev} -> r{r} ({ver}) | {a} | {rp} | {tc} | {d} | {same} | {int(docs):,} | {s:.1f} | {m:.0f} | "
          f"{mb(f'idx-{r}'):.0f} |")
s, m = tv(f"fresh-{rels[-1]}")
print(f"| fresh index r{rels[-1]} | | | | | | | {s:.1f} | {m:.0f} | {mb(f'freshsize-{rels[-1]}'):.0f} |")
print("\n| search (-k 100 --citations on) | index | topics | s | topics/s | peak RSS MB |")
print("|---|---|---:|---:|---:|---:|")
for set in ("test", "train"):
    n = sum(1 for line in open(work / f"{st}{rels[-1]}" / "topics" / f"{set}.jsonl") if line.strip())
    for which in ("updated", "fresh"):
        s, m = tv(f"search-{which}-{set}")
        print(f"| r{rels[-1]} {set} | {which} | {n} | {s:.1f} | {n / s:.1f} | {m:.0f} |")
print("\n| --as-of | test topics | search s (as of, in the index of every release) | search s (fresh index of it) |")
print("|---|---:|---:|---:|")
for r in rels:
    n = sum(1 for line in open(work / f"{st}{r}" / "topics" / "test.jsonl") if line.strip())
    print(f"| r{r} | {n} | {tv(f'asof-{r}')[0]:.1f} | {tv(f'asof-fresh-{r}')[0]:.1f} |")
EOF
