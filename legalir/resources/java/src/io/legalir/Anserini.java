package io.legalir;

import java.lang.reflect.InvocationTargetException;

/**
 * Anserini's entry points, called by name: pyjnius reflects every method of a class it is asked for, and
 * reflecting IndexCollection from Python took seconds per process; this class has one method.
 */
public final class Anserini {
  private Anserini() {}

  /** {@code io.anserini.index.IndexCollection.main(args)}: its own exception, unwrapped. */
  public static void indexCollection(String[] args) throws Exception {
    try {
      Class.forName("io.anserini.index.IndexCollection").getMethod("main", String[].class)
          .invoke(null, (Object) args);
    } catch (InvocationTargetException e) {
      Throwable cause = e.getCause();
      if (cause instanceof Exception) {
        throw (Exception) cause;
      }
      throw e;
    }
  }
}
