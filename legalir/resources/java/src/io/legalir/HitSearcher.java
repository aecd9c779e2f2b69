package io.legalir;

import java.io.IOException;
import java.lang.reflect.Field;

import org.apache.lucene.index.FieldInfo;
import org.apache.lucene.index.IndexReader;
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
 * stored document is read up to its {@code id} field (the first field Anserini writes) and no further. What
 * reads documents for their text (legalir's document display, RM3's fallback without term vectors) reads the
 * index reader's stored fields, which this class leaves alone.
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
    return new IdFields(super.storedFields());
  }

  /** Stored fields read through {@link IdOnly}. */
  public static final class IdFields extends StoredFields {
    private final StoredFields all;

    IdFields(StoredFields all) {
      this.all = all;
    }

    @Override
    public void document(int docID, StoredFieldVisitor visitor) throws IOException {
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
