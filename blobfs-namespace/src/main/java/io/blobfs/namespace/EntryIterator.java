package io.blobfs.namespace;

import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import java.util.NoSuchElementException;

/** A lazy listing whose steps may call the store (Hadoop's RemoteIterator, minus Hadoop). */
public interface EntryIterator<T> {
  boolean hasNext() throws IOException;

  /** @throws NoSuchElementException past the end */
  T next() throws IOException;

  default List<T> drain() throws IOException {
    List<T> all = new ArrayList<>();
    while (hasNext()) {
      all.add(next());
    }
    return all;
  }
}
