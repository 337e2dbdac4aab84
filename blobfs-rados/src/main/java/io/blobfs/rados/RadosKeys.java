package io.blobfs.rados;

import java.nio.charset.StandardCharsets;

/**
 * How a store key maps to RADOS: the key's first path segment becomes the object's
 * namespace ({@code n/a/b} is object {@code a/b} in namespace {@code n}), so that a scan
 * of names never walks the data stripes. With a base namespace (several file systems in
 * one pool) the segment is appended to it: {@code base.n}.
 */
final class RadosKeys {
  /** Where a key lives: RADOS namespace and object name. */
  record Location(String namespace, String object) {
    /** The object name as librados takes it: UTF-8, NUL-terminated. */
    byte[] oid() {
      byte[] b = object.getBytes(StandardCharsets.UTF_8);
      byte[] z = new byte[b.length + 1];
      System.arraycopy(b, 0, z, 0, b.length);
      return z;
    }
  }

  private final String baseNamespace;

  /** The store's base RADOS namespace ("" for none). */
  String base() {
    return baseNamespace;
  }

  RadosKeys(String baseNamespace) {
    this.baseNamespace = baseNamespace;
  }

  Location locate(String key) {
    int slash = key.indexOf('/');
    if (slash <= 0) {
      return new Location(baseNamespace, key);
    }
    return new Location(namespaceOf(key.substring(0, slash)), key.substring(slash + 1));
  }

  /**
   * The RADOS namespace of the name index ({@link RadosIndex}): it holds a '/', which no
   * key's namespace can (a segment has none, and a base namespace may not either).
   */
  String indexNamespace() {
    return baseNamespace + "/index";
  }

  /** The RADOS namespace of a key's first segment. */
  String namespaceOf(String segment) {
    return baseNamespace.isEmpty() ? segment : baseNamespace + "." + segment;
  }

  /** The key of an object found by a listing of every namespace; null if not ours. */
  String keyOf(String ns, String object) {
    if (ns.indexOf('/') >= 0) {
      return null; // the name index's own namespace: no key maps there
    }
    if (ns.equals(baseNamespace)) {
      return object;
    }
    String mine = baseNamespace.isEmpty() ? "" : baseNamespace + ".";
    if (!ns.startsWith(mine)) {
      return null;
    }
    return ns.substring(mine.length()) + "/" + object;
  }
}
