package io.blobfs.rados;

import com.ceph.rados.IoCTX;
import com.ceph.rados.Rados;
import com.ceph.rados.exceptions.RadosException;
import com.sun.jna.NativeLong;
import com.sun.jna.Pointer;
import com.sun.jna.ptr.NativeLongByReference;
import com.sun.jna.ptr.PointerByReference;
import io.blobfs.store.StoreUnavailableException;
import java.io.File;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.AccessDeniedException;
import java.time.Duration;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * One connected librados handle per cluster identity per process, shared by every store
 * that names it and closed with the last one. I/O contexts are made once per (pool,
 * namespace) and never changed afterwards: librados is thread-safe, but the namespace and
 * locator setters of one context are not.
 */
final class RadosCluster {
  /** Who connects where: two stores with equal identities share one handle. */
  record Identity(String confPath, String clientId, String keyring, String monHost,
      Duration opTimeout) {}

  private static final System.Logger LOG = System.getLogger(RadosCluster.class.getName());
  private static final Map<Identity, RadosCluster> OPEN = new HashMap<>();

  private final Identity identity;
  private final Handle rados;
  private final Map<String, IoCTX> contexts = new ConcurrentHashMap<>();
  private int users;
  /** AIO calls submitted on this handle whose completion has not run yet. */
  private int aioInFlight; // guarded by this

  /** rados-java keeps the {@code rados_t} protected; our own librados calls need it. */
  private static final class Handle extends Rados {
    Handle(String clientId) {
      super(clientId);
    }

    Pointer pointer() {
      return clusterPtr;
    }
  }

  private RadosCluster(Identity identity, Handle rados) {
    this.identity = identity;
    this.rados = rados;
  }

  static RadosCluster acquire(Identity id, Duration connectTimeout) throws IOException {
    synchronized (OPEN) {
      RadosCluster c = OPEN.get(id);
      if (c == null) {
        c = new RadosCluster(id, connect(id, connectTimeout));
        OPEN.put(id, c);
      }
      c.users++;
      return c;
    }
  }

  void release() {
    release(System.nanoTime() + identity.opTimeout().plus(AIO_DRAIN_SLACK).toNanos());
  }

  /**
   * As {@link #release()}, waiting for calls in flight until {@code deadline}
   * ({@link System#nanoTime}) at the latest.
   */
  void release(long deadline) {
    synchronized (OPEN) {
      if (--users > 0) {
        return;
      }
      OPEN.remove(identity);
    }
    // A completion that runs after its context is destroyed touches freed memory and
    // kills the JVM (SIGSEGV in librados, seen in RadosNativeHandlesIT when a store was
    // closed under reads). rados_aio_flush waits for writes only, so every AIO call is
    // counted and waited for here; librados times each out (rados_osd_op_timeout).
    if (!awaitAioDrained(deadline)) {
      // Better a leaked handle than a crashed process: the late completions still
      // find their context and threads.
      LOG.log(System.Logger.Level.WARNING, aioInFlight() + " librados calls still in"
          + " flight past librados's op timeout + " + AIO_DRAIN_SLACK.toSeconds()
          + " s after close; the cluster handle is left open");
      return;
    }
    for (IoCTX io : contexts.values()) {
      LibRados.INSTANCE.rados_aio_flush(io.getPointer());
      rados.ioCtxDestroy(io);
    }
    contexts.clear();
    rados.shutDown();
  }

  /** Beyond librados's own op timeout, before a close gives up waiting for completions. */
  static final Duration AIO_DRAIN_SLACK = Duration.ofSeconds(10);

  /** Called before an AIO call is submitted on this handle. */
  synchronized void aioStarted() {
    aioInFlight++;
  }

  /**
   * Called once the AIO call's completion has run, or once its submission failed: the
   * last use of the handle by that call.
   */
  synchronized void aioDone() {
    if (--aioInFlight == 0) {
      notifyAll();
    }
  }

  synchronized int aioInFlight() {
    return aioInFlight;
  }

  private synchronized boolean awaitAioDrained(long deadline) {
    boolean interrupted = false;
    try {
      while (aioInFlight > 0) {
        long left = deadline - System.nanoTime();
        if (left <= 0) {
          return false;
        }
        try {
          TimeUnit.NANOSECONDS.timedWait(this, left);
        } catch (InterruptedException e) {
          interrupted = true; // the wait is what keeps the process alive: finish it
        }
      }
      return true;
    } finally {
      if (interrupted) {
        Thread.currentThread().interrupt();
      }
    }
  }

  /** The context of a pool with its namespace fixed; made on first use. */
  Pointer context(String pool, String namespace) throws IOException {
    String key = pool + "\0" + namespace;
    IoCTX io = contexts.get(key);
    if (io == null) {
      synchronized (contexts) {
        io = contexts.get(key);
        if (io == null) {
          try {
            io = rados.ioCtxCreate(pool);
          } catch (RadosException e) {
            throw RadosErrors.toException("open pool", pool, e.getReturnValue());
          }
          LibRados.INSTANCE.rados_ioctx_set_namespace(io.getPointer(), namespace);
          contexts.put(key, io);
        }
      }
    }
    return io.getPointer();
  }

  /**
   * Runs a monitor command (JSON) and returns its output, bounded by rados_mon_op_timeout.
   * A refusal is an IOException carrying the monitor's message.
   */
  String monCommand(String json) throws IOException {
    PointerByReference outbuf = new PointerByReference();
    NativeLongByReference outlen = new NativeLongByReference();
    PointerByReference outs = new PointerByReference();
    NativeLongByReference outslen = new NativeLongByReference();
    int rc = LibRados.INSTANCE.rados_mon_command(rados.pointer(), new String[] {json},
        new NativeLong(1), null, new NativeLong(0), outbuf, outlen, outs, outslen);
    String out = take(outbuf.getValue(), outlen.getValue().longValue());
    String status = take(outs.getValue(), outslen.getValue().longValue());
    if (rc < 0) {
      throw RadosErrors.toException("mon command", json
          + (status.isEmpty() ? "" : " (" + status.strip() + ")"), rc);
    }
    return out;
  }

  /** Decodes and frees a buffer librados allocated for us. */
  private static String take(Pointer buf, long len) {
    if (buf == null) {
      return "";
    }
    try {
      return new String(buf.getByteArray(0, (int) len), StandardCharsets.UTF_8);
    } finally {
      LibRados.INSTANCE.rados_buffer_free(buf);
    }
  }

  private static Handle connect(Identity id, Duration timeout) throws IOException {
    Handle rados = new Handle(id.clientId());
    String seconds = Long.toString(Math.max(1, id.opTimeout().toSeconds()));
    try {
      if (!id.confPath().isEmpty()) {
        File conf = new File(id.confPath());
        if (!conf.canRead()) {
          throw new IOException("cannot read ceph.conf " + id.confPath());
        }
        rados.confReadFile(conf);
      }
      if (!id.keyring().isEmpty()) {
        if (!new File(id.keyring()).canRead()) {
          throw new AccessDeniedException(id.keyring(), null, "cannot read keyring");
        }
        rados.confSet("keyring", id.keyring());
      }
      if (!id.monHost().isEmpty()) {
        rados.confSet("mon_host", id.monHost());
      }
      // Every operation fails with ETIMEDOUT instead of waiting forever for a lost OSD,
      // a lost monitor or a full pool.
      rados.confSet("rados_osd_op_timeout", seconds);
      rados.confSet("rados_mon_op_timeout", seconds);
      rados.confSet("client_mount_timeout", Long.toString(Math.max(1, timeout.toSeconds())));
    } catch (RadosException e) {
      rados.shutDown();
      throw new IOException("configuring librados for " + id + ": " + e.getMessage(), e);
    }
    // rados_connect honours client_mount_timeout, but a wrong address can still stall in
    // the messenger: bound it here too.
    ExecutorService connector = Executors.newSingleThreadExecutor(r -> {
      Thread t = new Thread(r, "blobfs-rados-connect");
      t.setDaemon(true);
      return t;
    });
    // A connect we stop waiting for still runs in librados, and shutting the handle down
    // under it could crash: whichever of caller and connector comes last shuts it down.
    final class Connecting {
      private boolean finished;
      private boolean abandoned;

      synchronized void finish() {
        finished = true;
        if (abandoned) {
          rados.shutDown();
        }
      }

      synchronized void abandon() {
        abandoned = true;
        if (finished) {
          rados.shutDown();
        }
      }
    }
    Connecting connecting = new Connecting();
    try {
      Future<?> done = connector.submit(() -> {
        try {
          rados.connect();
        } finally {
          connecting.finish();
        }
        return null;
      });
      done.get(timeout.toMillis() + 2000, TimeUnit.MILLISECONDS);
      return rados;
    } catch (TimeoutException e) {
      connecting.abandon();
      throw new StoreUnavailableException("no answer from the Ceph monitors of " + id.confPath()
          + id.monHost() + " within " + timeout.toSeconds() + " s", e);
    } catch (java.util.concurrent.ExecutionException e) {
      Throwable cause = e.getCause();
      rados.shutDown();
      if (cause instanceof RadosException re) {
        int rc = re.getReturnValue();
        if (rc == -RadosErrors.EPERM || rc == -RadosErrors.EACCES) {
          throw new AccessDeniedException(id.clientId(), null,
              "the cluster refused client." + id.clientId() + " (cephx key or caps): "
                  + re.getMessage());
        }
        if (rc == -RadosErrors.ETIMEDOUT) {
          throw new StoreUnavailableException("no answer from the Ceph monitors of "
              + id.confPath() + id.monHost() + " within " + timeout.toSeconds() + " s", re);
        }
      }
      throw new IOException("cannot connect to Ceph as client." + id.clientId() + ": " + cause,
          cause);
    } catch (InterruptedException e) {
      connecting.abandon();
      Thread.currentThread().interrupt();
      throw new java.io.InterruptedIOException("interrupted connecting to Ceph");
    } finally {
      connector.shutdownNow();
    }
  }
}
