package io.blobfs.fuse;

import io.blobfs.namespace.FsPath;
import java.nio.charset.StandardCharsets;
import java.util.HashMap;
import java.util.Map;

/**
 * The inodes the kernel holds: node id to path and back, with the kernel's lookup counts.
 *
 * <p>A node id is a 64-bit hash of the path (the paper's "inode number from a hash of the
 * key"), so the same name gets the same number in every mount and across remounts. Two
 * paths that hash alike while both are in the table: the later one takes the next free
 * number, so ids stay unique within a mount. A rename moves the node to its new path and
 * keeps its id, as the kernel expects of an inode that changes name.
 */
final class InodeTable {
  /** One inode the kernel knows of. {@code path} changes on rename. */
  static final class Node {
    final long id;
    volatile FsPath path;
    /** Unlinked or replaced: no name leads here, the kernel may still hold it open. */
    volatile boolean unlinked;
    /** What stat showed last: an unlinked file still open answers fstat with it. */
    volatile io.blobfs.fuse.kernel.Attr lastAttr;
    long lookups;
    /** Whether an open may keep the kernel's pages of this node. */
    final KeptPages pages = new KeptPages();
    /**
     * Handles open (or opening) on the published file, which the kernel serves through its
     * page cache: while any is, a staged copy may not pass through (the kernel refuses an
     * inode both). Guarded by BlobFuseFs's staged-file map.
     */
    int cachedOpens;

    Node(long id, FsPath path) {
      this.id = id;
      this.path = path;
    }
  }

  private final Map<Long, Node> byId = new HashMap<>();
  private final Map<FsPath, Node> byPath = new HashMap<>();

  private final java.util.function.ToLongFunction<FsPath> hash;

  InodeTable() {
    this(InodeTable::hash);
  }

  /** With another hash: tests force collisions. */
  InodeTable(java.util.function.ToLongFunction<FsPath> hash) {
    this.hash = hash;
    Node root = new Node(1, FsPath.ROOT);
    root.lookups = 1; // the kernel never forgets the root
    byId.put(1L, root);
    byPath.put(FsPath.ROOT, root);
  }

  /** FNV-1a over the path's UTF-8 bytes; 0 and 1 (the root) are never handed out. */
  static long hash(FsPath path) {
    long h = 0xcbf29ce484222325L;
    for (byte b : path.toString().getBytes(StandardCharsets.UTF_8)) {
      h ^= b & 0xff;
      h *= 0x100000001b3L;
    }
    return h == 0 || h == 1 ? h + 2 : h;
  }

  synchronized Node get(long id) {
    return byId.get(id);
  }

  synchronized Node find(FsPath path) {
    return byPath.get(path);
  }

  /** The node for {@code path}, created if absent, with one more kernel reference. */
  synchronized Node lookup(FsPath path) {
    Node n = byPath.get(path);
    if (n == null) {
      long id = hash.applyAsLong(path);
      while (byId.containsKey(id) || id == 0 || id == 1) {
        id++; // collision with another live path: next free number
      }
      n = new Node(id, path);
      byId.put(id, n);
      byPath.put(path, n);
    }
    n.lookups++;
    return n;
  }

  /** The number readdir shows for a name: its node's id if the kernel holds one. */
  synchronized long inoOf(FsPath path) {
    Node n = byPath.get(path);
    return n != null ? n.id : hash.applyAsLong(path);
  }

  /** Drops {@code count} kernel references; returns true when the node is gone. */
  synchronized boolean forget(long id, long count) {
    Node n = byId.get(id);
    if (n == null || id == 1) {
      return false;
    }
    n.lookups -= count;
    if (n.lookups <= 0) {
      byId.remove(id);
      if (!n.unlinked) {
        byPath.remove(n.path, n);
      }
      return true;
    }
    return false;
  }

  /**
   * Moves the node at {@code from} (and every node under it, for a directory) to the same
   * place under {@code to}; a node that was at {@code to} loses its name (it stays valid
   * for the kernel's open handles until forgotten).
   */
  synchronized void rename(FsPath from, FsPath to) {
    Node replaced = byPath.remove(to);
    if (replaced != null) {
      replaced.unlinked = true;
    }
    for (Node n : byId.values().toArray(new Node[0])) {
      if (!n.unlinked && n.path.isAtOrUnder(from)) {
        byPath.remove(n.path, n);
        n.path = n.path.rebase(from, to);
        byPath.put(n.path, n);
      }
    }
  }

  /** Forgets the name of an unlinked node; its id stays valid until the kernel forgets it. */
  synchronized void unlink(FsPath path) {
    Node n = byPath.remove(path);
    if (n != null) {
      n.unlinked = true;
    }
  }

  synchronized int size() {
    return byId.size();
  }
}
