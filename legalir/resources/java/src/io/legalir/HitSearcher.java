package io.legalir;

import java.io.IOException;
import java.lang.reflect.Field;
import java.util.List;

import org.apache.lucene.index.BinaryDocValues;
import org.apache.lucene.index.FieldInfo;
import org.apache.lucene.index.IndexReader;
import org.apache.lucene.index.LeafReader;
import org.apache.lucene.index.LeafReaderContext;
import org.apache.lucene.index.ReaderUtil;
import org.apache.lucene.index.StoredFieldVisitor;
import org.apache.lucene.index.StoredFields;
import org.apache.lucene.search.IndexSearcher;

/**
 * An IndexSearcher whose hits are read with their id alone.
 *
 * <p>Anserini's {@code ScoredDocs.fromTopDocs} loads the whole stored document of every hit through
 * {@link IndexSearcher#storedFields()}, only to read its {@code id}: a statute section's stored raw JSON and
 * contents are decoded into Java strings and dropped. Measured on North Carolina r81 (212 topics, 1,232
 * sections), a hit cost about 40 microseconds, most of a search of the top 1,000. Through this searcher a
 * hit's document holds its {@code id} alone, read from the id's binary doc values, which Anserini writes beside
 * the stored id (its searches sort ties by them), so no stored block is decompressed at all; in a segment
 * without them, the stored document is read up to its {@code id} field (the first field Anserini writes) and
 * no further. What reads documents for their text (legalir's document display, RM3's fallback without term
 * vectors) reads the index reader's stored fields, which this class leaves alone.
 *
 * <p>Built by scripts/build_java.sh into legalir/resources/java/legalir.jar.
 */
public class HitSearcher extends IndexSearcher {

  /** Anserini's id field ({@code io.anserini.index.Constants.ID}). */
  static final String ID = "id";

  public HitSearcher(IndexReader reader) {
    super(reader);
  }

  @Override
  public StoredFields storedFields() throws IOException {
    return new IdFields(super.storedFields(), getIndexReader().leaves());
  }

  /** A document's id alone: from the id's doc values where its segment has them, else through {@link IdOnly}. */
  public static final class IdFields extends StoredFields {
    private final StoredFields all;
    private final List<LeafReaderContext> leaves;

    IdFields(StoredFields all, List<LeafReaderContext> leaves) {
      this.all = all;
      this.leaves = leaves;
    }

    @Override
    public void document(int docID, StoredFieldVisitor visitor) throws IOException {
      LeafReaderContext leaf = leaves.get(ReaderUtil.subIndex(docID, leaves));
      LeafReader reader = leaf.reader();
      FieldInfo info = reader.getFieldInfos().fieldInfo(ID);
      // a fresh iterator each time: hits come in score order, and doc values are read forwards only
      BinaryDocValues ids = info == null ? null : reader.getBinaryDocValues(ID);
      if (ids != null && ids.advanceExact(docID - leaf.docBase)) {
        if (visitor.needsField(info) == StoredFieldVisitor.Status.YES) {
          visitor.stringField(info, ids.binaryValue().utf8ToString());
        }
        return;
      }
      all.document(docID, new IdOnly(visitor));
    }
  }

  /** Passes the {@code id} field to the visitor it wraps, and stops reading once it has. */
  public static final class IdOnly extends StoredFieldVisitor {
    private final StoredFieldVisitor inner;
    private boolean seen;

    IdOnly(StoredFieldVisitor inner) {
      this.inner = inner;
    }

    @Override
    public Status needsField(FieldInfo fieldInfo) throws IOException {
      if (seen) {
        return Status.STOP;
      }
      if (!ID.equals(fieldInfo.name)) {
        return Status.NO;
      }
      Status s = inner.needsField(fieldInfo);
      seen = s == Status.YES;
      return s;
    }

    @Override
    public void binaryField(FieldInfo fieldInfo, byte[] value) throws IOException {
      inner.binaryField(fieldInfo, value);
    }

    @Override
    public void stringField(FieldInfo fieldInfo, String value) throws IOException {
      inner.stringField(fieldInfo, value);
    }

    @Override
    public void intField(FieldInfo fieldInfo, int value) throws IOException {
      inner.intField(fieldInfo, value);
    }

    @Override
    public void longField(FieldInfo fieldInfo, long value) throws IOException {
      inner.longField(fieldInfo, value);
    }

    @Override
    public void floatField(FieldInfo fieldInfo, float value) throws IOException {
      inner.floatField(fieldInfo, value);
    }

    @Override
    public void doubleField(FieldInfo fieldInfo, double value) throws IOException {
      inner.doubleField(fieldInfo, value);
    }
  }

  /**
   * Make Anserini's SimpleSearcher {@code simple} search through a HitSearcher of its reader with its
   * similarity: a {@link LiveStatsSearcher} where {@code deleted} is not null (call after each set_bm25 /
   * set_qld: they make a plain IndexSearcher anew).
   */
  public static void install(Object simple, LiveStatsSearcher.Deleted deleted) throws ReflectiveOperationException {
    Field f = null;
    for (Class<?> c = simple.getClass(); c != null && f == null; c = c.getSuperclass()) {
      try {
        f = c.getDeclaredField("searcher");
      } catch (NoSuchFieldException e) {
        // its superclass, then
      }
    }
    if (f == null) {
      throw new NoSuchFieldException("searcher");
    }
    f.setAccessible(true);
    IndexSearcher plain = (IndexSearcher) f.get(simple);
    HitSearcher mine = deleted == null ? new HitSearcher(plain.getIndexReader())
        : new LiveStatsSearcher(plain.getIndexReader(), deleted);
    mine.setSimilarity(plain.getSimilarity());
    f.set(simple, mine);
  }
}
