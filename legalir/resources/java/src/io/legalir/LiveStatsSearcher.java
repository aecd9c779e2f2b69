package io.legalir;

import java.io.IOException;
import java.util.HashMap;
import java.util.Map;

import org.apache.lucene.index.FieldInfo;
import org.apache.lucene.index.IndexOptions;
import org.apache.lucene.index.IndexReader;
import org.apache.lucene.index.LeafReader;
import org.apache.lucene.index.LeafReaderContext;
import org.apache.lucene.index.PostingsEnum;
import org.apache.lucene.index.Term;
import org.apache.lucene.index.Terms;
import org.apache.lucene.index.TermsEnum;
import org.apache.lucene.search.CollectionStatistics;
import org.apache.lucene.search.DocIdSetIterator;
import org.apache.lucene.search.TermStatistics;
import org.apache.lucene.util.Bits;
import org.apache.lucene.util.BytesRef;
import org.apache.lucene.util.FixedBitSet;

/**
 * An IndexSearcher whose BM25 statistics count the live documents only.
 *
 * <p>Lucene keeps a deleted document in its segment's term statistics (document frequencies, field
 * lengths, document counts) until the segment is rewritten. `legalir index update` leaves a replaced
 * or deleted document in its segment (the segment is shared, hard-linked, with the versions before)
 * and marks it deleted; this searcher subtracts what the deleted documents contribute, read once from
 * the postings of the segments that hold deletions, so each query scores as in a fresh index of the
 * live documents alone: the same statistics, so the same float scores.
 *
 * <p>Built by scripts/build_java.sh into legalir/resources/java/legalir.jar (Java 11 bytecode,
 * against the Lucene classes of Anserini's fat jar).
 */
public final class LiveStatsSearcher extends HitSearcher {

  /** What the deleted documents of one reader add to its statistics. */
  public static final class Deleted {
    /** field -> {documents with the field, sum of term frequencies, sum of document frequencies} */
    final Map<String, long[]> fields = new HashMap<>();
    /** term -> {document frequency, total term frequency} */
    final Map<Term, long[]> terms = new HashMap<>();
    /** deleted documents in all */
    long deleted;

    /** Read from the postings of every segment of {@code reader} that holds a deleted document. */
    public Deleted(IndexReader reader) throws IOException {
      for (LeafReaderContext ctx : reader.leaves()) {
        LeafReader leaf = ctx.reader();
        Bits live = leaf.getLiveDocs();
        if (live == null) {
          continue;
        }
        deleted += leaf.numDeletedDocs();
        for (FieldInfo fi : leaf.getFieldInfos()) {
          if (fi.getIndexOptions() == IndexOptions.NONE) {
            continue;
          }
          Terms t = leaf.terms(fi.name);
          if (t == null) {
            continue;
          }
          boolean freqs = fi.getIndexOptions().compareTo(IndexOptions.DOCS_AND_FREQS) >= 0;
          FixedBitSet has = new FixedBitSet(leaf.maxDoc());
          long sumTtf = 0;
          long sumDf = 0;
          TermsEnum it = t.iterator();
          PostingsEnum pe = null;
          BytesRef term;
          while ((term = it.next()) != null) {
            pe = it.postings(pe, freqs ? PostingsEnum.FREQS : PostingsEnum.NONE);
            long df = 0;
            long ttf = 0;
            for (int d = pe.nextDoc(); d != DocIdSetIterator.NO_MORE_DOCS; d = pe.nextDoc()) {
              if (live.get(d)) {
                continue;
              }
              df++;
              ttf += freqs ? pe.freq() : 1;  // a field of documents only: Lucene counts ttf as df
              has.set(d);
            }
            if (df > 0) {
              long[] was = terms.get(new Term(fi.name, term));
              if (was == null) {
                terms.put(new Term(fi.name, BytesRef.deepCopyOf(term)), new long[] {df, ttf});
              } else {
                was[0] += df;
                was[1] += ttf;
              }
              sumDf += df;
              sumTtf += ttf;
            }
          }
          long[] f = fields.computeIfAbsent(fi.name, k -> new long[3]);
          f[0] += has.cardinality();
          f[1] += sumTtf;
          f[2] += sumDf;
        }
      }
    }

    /** What the deleted documents add to {@code term}'s statistic {@code i} (0: df, 1: ttf). */
    long ofTerm(Term term, int i) {
      long[] gone = terms.get(term);
      return gone == null ? 0 : gone[i];
    }

    /** What they add to {@code field}'s statistic {@code i} (0: documents, 1: sum of ttf, 2: sum of df). */
    long ofField(String field, int i) {
      long[] gone = fields.get(field);
      return gone == null ? 0 : gone[i];
    }

    /** Deleted documents the statistics leave out. */
    public long deleted() {
      return deleted;
    }

    /** Terms whose statistics are corrected. */
    public int terms() {
      return terms.size();
    }
  }

  private final Deleted deleted;

  /**
   * A searcher of {@code reader} with {@code deleted} (read from the same reader) left out, through a
   * {@link LiveStatsReader}: what reads the reader's own frequencies (RM3's feedback terms) sees the live
   * ones too.
   */
  public LiveStatsSearcher(IndexReader reader, Deleted deleted) {
    super(new LiveStatsReader(reader, deleted));
    this.deleted = deleted;
  }

  @Override
  public CollectionStatistics collectionStatistics(String field) throws IOException {
    CollectionStatistics all = super.collectionStatistics(field);
    long[] gone = deleted.fields.get(field);
    if (all == null || gone == null) {
      return all;
    }
    long docCount = all.docCount() - gone[0];
    if (docCount <= 0) {
      return null;  // as a fresh index: no live document has the field
    }
    return new CollectionStatistics(field, getIndexReader().numDocs(), docCount,
        all.sumTotalTermFreq() - gone[1], all.sumDocFreq() - gone[2]);
  }

  @Override
  public TermStatistics termStatistics(Term term, int docFreq, long totalTermFreq) throws IOException {
    long[] gone = deleted.terms.get(term);
    if (gone == null) {
      return super.termStatistics(term, docFreq, totalTermFreq);
    }
    long df = docFreq - gone[0];
    if (df <= 0) {
      // only deleted documents hold the term: it scores no live document; any valid statistics do
      return new TermStatistics(term.bytes(), 1, 1);
    }
    return new TermStatistics(term.bytes(), df, totalTermFreq - gone[1]);
  }
}
