package io.legalir;

import java.io.BufferedReader;
import java.io.IOException;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.nio.charset.StandardCharsets;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import org.apache.lucene.analysis.Analyzer;
import org.apache.lucene.document.Document;
import org.apache.lucene.index.IndexReader;
import org.apache.lucene.index.IndexWriter;
import org.apache.lucene.index.LeafReaderContext;
import org.apache.lucene.index.PostingsEnum;
import org.apache.lucene.index.Terms;
import org.apache.lucene.index.TermsEnum;
import org.apache.lucene.search.DocIdSetIterator;
import org.apache.lucene.index.IndexWriterConfig;
import org.apache.lucene.search.similarities.BM25Similarity;
import org.apache.lucene.util.Bits;
import org.apache.lucene.util.BytesRef;
import org.kohsuke.args4j.CmdLineParser;

/**
 * What {@code legalir index update} asks of Lucene, with Lucene's classes alone where it can.
 *
 * <p>{@link #live}: which ids an index holds, live. {@link #add}: documents added to an open {@link IndexWriter}
 * exactly as Anserini's {@code IndexCollection} indexes them, in
 * the calling thread: the same arguments (parsed into IndexCollection's own {@code Args}), the same
 * {@code JsonCollection} documents, the same {@code DefaultLuceneDocumentGenerator}, and the same analyzer and
 * similarity in the writer's configuration ({@link #config}). An update of a few documents then needs no second
 * index, no thread pool and no copy of segments.
 *
 * <p>Anserini's classes are reached by name (its jar is compiled for Java 21; this class for Java 11, against
 * Lucene's classes alone). Only the arguments legalir gives are accepted (a JSON collection, the default
 * generator, English with IndexCollection's default analyzer); any other is refused rather than indexed
 * another way.
 */
public final class IndexUpdate {
  private IndexUpdate() {}

  private static Object field(Object args, String name) throws ReflectiveOperationException {
    return args.getClass().getField(name).get(args);
  }

  private static Object parse(String[] argv) throws Exception {
    Object args = Class.forName("io.anserini.index.IndexCollection$Args").getConstructor().newInstance();
    new CmdLineParser(args).parseArgument(argv);
    boolean asLegalirGives = "JsonCollection".equals(field(args, "collectionClass"))
        && "DefaultLuceneDocumentGenerator".equals(field(args, "generatorClass"))
        && "en".equals(field(args, "language"))
        && field(args, "analyzeWithHuggingFaceTokenizer") == null && field(args, "whitelist") == null;
    for (String flag : new String[] {"pretokenized", "impact", "bm25Accurate", "useCompositeAnalyzer",
        "useAutoCompositeAnalyzer", "uniqueDocid"}) {
      asLegalirGives = asLegalirGives && !((Boolean) field(args, flag));
    }
    if (!asLegalirGives) {
      throw new IllegalArgumentException("IndexUpdate indexes as IndexCollection does with its defaults "
          + "(JsonCollection, DefaultLuceneDocumentGenerator, English): other arguments were given");
    }
    return args;
  }

  private static Object call(Object target, String name, Object... values) throws Exception {
    search:
    for (Method m : target.getClass().getMethods()) {
      if (m.getName().equals(name) && m.getParameterCount() == values.length) {
        for (int i = 0; i < values.length; i++) {
          if (!m.getParameterTypes()[i].isInstance(values[i])) {
            continue search;  // another overload (createFileSegment of a Path, not of a BufferedReader)
          }
        }
        try {
          return m.invoke(target, values);
        } catch (InvocationTargetException e) {
          Throwable cause = e.getCause();
          throw cause instanceof Exception ? (Exception) cause : e;
        }
      }
    }
    throw new NoSuchMethodException(target.getClass().getName() + "." + name);
  }

  /**
   * A writer configuration that analyzes and scores as IndexCollection's for these arguments: its analyzer
   * ({@code DefaultEnglishAnalyzer.fromArguments(stemmer, keepStopwords, stopwords)}) and {@link BM25Similarity}.
   */
  public static IndexWriterConfig config(String[] argv) throws Exception {
    Object args = parse(argv);
    Analyzer analyzer = (Analyzer) Class.forName("io.anserini.analysis.DefaultEnglishAnalyzer")
        .getMethod("fromArguments", String.class, boolean.class, String.class)
        .invoke(null, field(args, "stemmer"), field(args, "keepStopwords"), field(args, "stopwords"));
    IndexWriterConfig config = new IndexWriterConfig(analyzer);
    config.setSimilarity(new BM25Similarity());
    return config;
  }

  /**
   * Index every document of the {@code *.jsonl} files in the folder {@code -input} names (one JSON object a line)
   * into {@code writer} (made with {@link #config} of the same arguments); returns how many. Each line becomes
   * the document {@code JsonCollection}'s reader makes of it ({@code JsonCollection.Document.fromString}: the same
   * parse, the same stored raw record), without loading {@code JsonCollection} itself, whose logger set-up alone
   * costs a short command about 13 MB. A line that is not a document, or one that is not indexable, is an error
   * naming its file and line, not a document left out.
   */
  public static long add(IndexWriter writer, String[] argv) throws Exception {
    Object args = parse(argv);
    Class<?> docClass = Class.forName("io.anserini.collection.JsonCollection$Document");
    Method fromString = docClass.getMethod("fromString", String.class);
    Object generator = Class.forName("io.anserini.index.generator.DefaultLuceneDocumentGenerator")
        .getConstructor(args.getClass()).newInstance(args);
    List<Path> files = new ArrayList<>();
    try (DirectoryStream<Path> found = Files.newDirectoryStream(Paths.get((String) field(args, "input")), "*.jsonl")) {
      found.forEach(files::add);
    }
    Collections.sort(files);
    long n = 0;
    for (Path path : files) {
      try (BufferedReader in = Files.newBufferedReader(path, StandardCharsets.UTF_8)) {
        int number = 0;
        for (String line = in.readLine(); line != null; line = in.readLine()) {
          number++;
          if (line.trim().isEmpty()) {
            continue;
          }
          Object doc = fromString.invoke(null, line);
          if (doc == null || !((Boolean) call(doc, "indexable"))) {
            throw new IOException(path + ":" + number + ": not an indexable document");
          }
          writer.addDocument((Document) call(generator, "createDocument", doc));
          n++;
        }
      }
    }
    return n;
  }

  /**
   * Whether each of {@code ids} is the {@code id} of a live document of {@code reader} (a deleted one is not): the
   * {@code id} terms looked up segment by segment, one terms and one postings enumerator reused per segment (an
   * update asks this of every id it changes: little garbage, so little heap).
   */
  public static boolean[] live(IndexReader reader, String[] ids) throws IOException {
    boolean[] out = new boolean[ids.length];
    BytesRef[] terms = new BytesRef[ids.length];
    for (int i = 0; i < ids.length; i++) {
      terms[i] = new BytesRef(ids[i]);
    }
    for (LeafReaderContext leaf : reader.leaves()) {
      Terms field = leaf.reader().terms("id");
      if (field == null) {
        continue;
      }
      TermsEnum it = field.iterator();
      Bits liveDocs = leaf.reader().getLiveDocs();
      PostingsEnum postings = null;
      for (int i = 0; i < ids.length; i++) {
        if (out[i] || !it.seekExact(terms[i])) {
          continue;
        }
        postings = it.postings(postings, PostingsEnum.NONE);
        for (int d = postings.nextDoc(); d != DocIdSetIterator.NO_MORE_DOCS; d = postings.nextDoc()) {
          if (liveDocs == null || liveDocs.get(d)) {
            out[i] = true;
            break;
          }
        }
      }
    }
    return out;
  }
}
