#!/usr/bin/env bash
# Build legalir/resources/java/legalir.jar from legalir/resources/java/src (the Java classes legalir adds to
# Anserini's: io.legalir.LiveStatsSearcher and LiveStatsReader, statistics of the live documents of an updated index;
# io.legalir.HitSearcher, hits read by their id alone; io.legalir.IndexUpdate, an update's documents indexed in its own writer as a build indexes them; io.legalir.Anserini,
# IndexCollection called by name). Anserini's own classes are Java 21 bytecode: the sources reach them by name.
# The jar is committed, so an install needs no Java compiler; run this after changing the source. Needs a
# javac of Java 11 or later; compiles against the Lucene classes of the Anserini fat jar that pyserini ships.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-.venv/bin/python}
JAR=$($PY -c "import legalir.base.jvm as j; print(j.anserini_jar())")
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT
javac --release 11 -nowarn -cp "$JAR" -d "$OUT" legalir/resources/java/src/io/legalir/*.java
# fixed timestamps: the same source and compiler give the same jar
find "$OUT" -exec touch -d '2000-01-01T00:00:00Z' {} +
(cd "$OUT" && rm -f legalir.jar && find io -type f | sort | TZ=UTC zip -q -X -D legalir.jar -@)
cp "$OUT/legalir.jar" legalir/resources/java/legalir.jar
echo "legalir/resources/java/legalir.jar: $(unzip -l legalir/resources/java/legalir.jar | tail -1)"
