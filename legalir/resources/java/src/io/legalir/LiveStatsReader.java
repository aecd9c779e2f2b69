package io.legalir;

import java.io.IOException;
import java.util.ArrayList;
import java.util.List;

import org.apache.lucene.index.CompositeReader;
import org.apache.lucene.index.Fields;
import org.apache.lucene.index.IndexReader;
import org.apache.lucene.index.LeafReader;
import org.apache.lucene.index.LeafReaderContext;
import org.apache.lucene.index.StoredFieldVisitor;
import org.apache.lucene.index.StoredFields;
import org.apache.lucene.index.Term;
import org.apache.lucene.index.TermVectors;

/**
 * A view of an index reader whose reader-level statistics count the live documents only.
 *
 * <p>{@link LiveStatsSearcher} corrects the statistics a query scores with; a reader's own
 * {@code docFreq}, {@code totalTermFreq} and field sums still count the deleted documents of an
 * updated index. Anserini's RM3 reads {@code reader.docFreq} to drop feedback terms held by more than
 * a tenth of the documents, so over an updated index it kept or dropped other terms than over a fresh
 * index of the same documents. Searching through this view, it sees a fresh index's frequencies.
 *
 * <p>The view holds the same segment readers, in the same order, so searches, stored fields and term
 * vectors are those of the reader it wraps; it does not own that reader and closes nothing.
 */
public final class LiveStatsReader extends CompositeReader {

  private final IndexReader in;
  private final LiveStatsSearcher.Deleted deleted;
  private final List<LeafReader> leaves = new ArrayList<>();

  /** A view of {@code in} with {@code deleted} (read from {@code in}) left out of its statistics. */
  public LiveStatsReader(IndexReader in, LiveStatsSearcher.Deleted deleted) {
    this.in = in;
    this.deleted = deleted;
    for (LeafReaderContext ctx : in.leaves()) {
      leaves.add(ctx.reader());
    }
  }

  @Override
  protected List<? extends IndexReader> getSequentialSubReaders() {
    return leaves;
  }

  @Override
  public int docFreq(Term term) throws IOException {
    return in.docFreq(term) - (int) deleted.ofTerm(term, 0);
  }

  @Override
  public long totalTermFreq(Term term) throws IOException {
    return in.totalTermFreq(term) - deleted.ofTerm(term, 1);
  }

  @Override
  public int getDocCount(String field) throws IOException {
    return in.getDocCount(field) - (int) deleted.ofField(field, 0);
  }

  @Override
  public long getSumTotalTermFreq(String field) throws IOException {
    return in.getSumTotalTermFreq(field) - deleted.ofField(field, 1);
  }

  @Override
  public long getSumDocFreq(String field) throws IOException {
    return in.getSumDocFreq(field) - deleted.ofField(field, 2);
  }

  @Override
  public Fields getTermVectors(int docID) throws IOException {
    return in.getTermVectors(docID);
  }

  @Override
  public TermVectors termVectors() throws IOException {
    return in.termVectors();
  }

  @Override
  public int numDocs() {
    return in.numDocs();
  }

  @Override
  public int maxDoc() {
    return in.maxDoc();
  }

  @Override
  public void document(int docID, StoredFieldVisitor visitor) throws IOException {
    in.document(docID, visitor);
  }

  @Override
  public StoredFields storedFields() throws IOException {
    return in.storedFields();
  }

  @Override
  public boolean hasDeletions() {
    return in.hasDeletions();
  }

  @Override
  public CacheHelper getReaderCacheHelper() {
    return null;  // a view made per searcher: nothing to cache at its level (segments keep their own keys)
  }

  @Override
  protected void doClose() {
    // the wrapped reader is its owner's to close
  }
}
