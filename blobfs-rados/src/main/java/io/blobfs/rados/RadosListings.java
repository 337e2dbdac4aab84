package io.blobfs.rados;

import com.sun.jna.Pointer;
import com.sun.jna.ptr.PointerByReference;
import io.blobfs.store.ScanPage;
import java.io.IOException;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.TimeUnit;

/**
 * The listings a store holds open for its scan cursors. RADOS lists objects in hash order
 * and cannot filter by prefix, so names are filtered here; keys with a '/' list only their
 * namespace. A cursor names a listing held open until its last page, until its caller
 * closes it ({@link #close}), until it idles out, or until too many are open: a caller
 * that cannot say it stopped (an abandoned Hadoop iterator has no close) costs at most
 * {@link #MAX_OPEN} contexts, and those only until they idle out.
 *
 * <p>Not thread-safe towards the store's close: the store calls every method under its
 * lifecycle lock, so no listing is used after the cluster frees its contexts.
 */
final class RadosListings {
  private static final LibRados LIB = LibRados.INSTANCE;
  /** How many listings one store keeps open for cursors; the oldest is closed beyond. */
  static final int MAX_OPEN = 256;
  private static final long IDLE_NANOS = TimeUnit.MINUTES.toNanos(10);

  private final RadosCluster cluster;
  private final String pool;
  private final RadosKeys mapping;
  /** Least recently used first. Guarded by itself. */
  private final LinkedHashMap<String, Listing> listings = new LinkedHashMap<>(16, 0.75f, true);

  RadosListings(RadosCluster cluster, String pool, RadosKeys keys) {
    this.cluster = cluster;
    this.pool = pool;
    this.mapping = keys;
  }

  /** One page of the keys under {@code prefix}, continuing {@code cursor} if not null. */
  ScanPage page(String prefix, String cursor, int limit) throws IOException {
    expireIdle();
    return cursor == null ? firstPage(prefix, limit) : nextPage(prefix, cursor, limit);
  }

  private ScanPage firstPage(String prefix, int limit) throws IOException {
    int slash = prefix.indexOf('/');
    String ns;
    String keyPrefix;
    if (slash > 0) {
      ns = mapping.namespaceOf(prefix.substring(0, slash));
      keyPrefix = prefix.substring(0, slash + 1);
    } else {
      ns = LibRados.ALL_NSPACES;
      keyPrefix = null;
    }
    PointerByReference ctx = new PointerByReference();
    RadosErrors.check("scan", prefix, LIB.rados_nobjects_list_open(cluster.context(pool, ns), ctx));
    Listing listing = new Listing(ctx.getValue(), prefix, keyPrefix);
    String token = UUID.randomUUID().toString();
    Listing evicted;
    synchronized (listings) {
      listings.put(token, listing);
      evicted = listings.size() > MAX_OPEN ? removeEldest() : null;
    }
    if (evicted != null) {
      evicted.close();
    }
    return page(listing, token, limit);
  }

  private ScanPage nextPage(String prefix, String cursor, int limit) throws IOException {
    Listing listing;
    synchronized (listings) {
      listing = listings.get(cursor);
    }
    if (listing == null) {
      throw new IOException("scan cursor " + cursor + " of " + prefix + " is unknown, idle for"
          + " over " + TimeUnit.NANOSECONDS.toMinutes(IDLE_NANOS) + " min, or was"
          + " closed as the least recently used of over " + MAX_OPEN + " open"
          + " listings: start the scan again");
    }
    return page(listing, cursor, limit);
  }

  /** Reads one page; a listing at its end or failing is closed before returning. */
  private ScanPage page(Listing listing, String token, int limit) throws IOException {
    boolean done = true;
    try {
      synchronized (listing) {
        if (listing.closed) {
          // closed by closeScan, eviction or close() between the lookup and here
          throw new IOException("scan cursor " + token + " of " + listing.prefix
              + " was closed while in use");
        }
        List<String> keys = new ArrayList<>(Math.min(limit, 1024));
        PointerByReference entry = new PointerByReference();
        PointerByReference nspace = new PointerByReference();
        while (keys.size() < limit) {
          int rc = LIB.rados_nobjects_list_next(listing.ctx, entry, null, nspace);
          if (rc == -RadosErrors.ENOENT) {
            return new ScanPage(keys, null);
          }
          RadosErrors.check("scan", listing.prefix, rc);
          String object = entry.getValue().getString(0, "UTF-8");
          String key = listing.keyPrefix != null ? listing.keyPrefix + object
              : mapping.keyOf(nspace.getValue() == null ? "" : nspace.getValue().getString(0, "UTF-8"),
                  object);
          if (key != null && key.startsWith(listing.prefix)) {
            keys.add(key);
          }
        }
        listing.lastUsed = System.nanoTime();
        done = false;
        return new ScanPage(keys, token);
      }
    } finally {
      if (done) {
        close(token);
      }
    }
  }

  /** Closes the listing behind a cursor, if it is still open. */
  void close(String cursor) {
    Listing l;
    synchronized (listings) {
      l = listings.remove(cursor);
    }
    if (l != null) {
      l.close();
    }
  }

  /** Closes every listing: the store is closing. */
  void closeAll() {
    List<Listing> open;
    synchronized (listings) {
      open = List.copyOf(listings.values());
      listings.clear();
    }
    open.forEach(Listing::close);
  }

  /** The listings held open for cursors now: a gauge, bounded by MAX_OPEN. */
  int open() {
    synchronized (listings) {
      return listings.size();
    }
  }

  private static final class Listing {
    final Pointer ctx;
    final String prefix;
    /** The namespace's key segment ("n/"), or null when listing every namespace. */
    final String keyPrefix;
    volatile long lastUsed = System.nanoTime();
    /** Guarded by this: a scan holds it around every use of ctx. */
    boolean closed;

    Listing(Pointer ctx, String prefix, String keyPrefix) {
      this.ctx = ctx;
      this.prefix = prefix;
      this.keyPrefix = keyPrefix;
    }

    synchronized void close() {
      if (!closed) {
        closed = true;
        LIB.rados_nobjects_list_close(ctx);
      }
    }
  }

  /** Under the listings' lock; the caller closes what it returns outside it. */
  private Listing removeEldest() {
    Iterator<Listing> it = listings.values().iterator();
    Listing eldest = it.next();
    it.remove();
    return eldest;
  }

  private void expireIdle() {
    long now = System.nanoTime();
    List<Listing> idle = new ArrayList<>();
    synchronized (listings) {
      for (Iterator<Listing> it = listings.values().iterator(); it.hasNext(); ) {
        Listing l = it.next();
        if (now - l.lastUsed > IDLE_NANOS) {
          it.remove();
          idle.add(l);
        }
      }
    }
    idle.forEach(Listing::close);
  }
}
