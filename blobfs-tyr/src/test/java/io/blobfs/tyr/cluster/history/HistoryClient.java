package io.blobfs.tyr.cluster.history;

import static io.blobfs.tyr.cluster.history.HistoryChecker.account;
import static io.blobfs.tyr.cluster.history.HistoryChecker.balanceOf;

import io.blobfs.store.BlobMutation;
import io.blobfs.store.BlobNotFoundException;
import io.blobfs.store.Futures;
import io.blobfs.store.PutMode;
import io.blobfs.store.TransactionConflictException;
import io.blobfs.store.TransactionalBlobStore;
import io.blobfs.store.VersionedBytes;
import io.blobfs.tyr.cluster.history.Op.Kind;
import io.blobfs.tyr.cluster.history.Op.Outcome;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Queue;
import java.util.Random;
import java.util.function.BooleanSupplier;

/**
 * One workload client: its own store (its own connections to every node), a seeded
 * random choice of operations, each recorded with its invocation and completion time,
 * what it read and wrote, and its outcome. An error is {@link Outcome#FAIL} only where
 * it guarantees that nothing was applied (a conflict, or any error of an operation that
 * writes nothing); any other error of a write is {@link Outcome#INFO}.
 */
final class HistoryClient implements Runnable {
  private static final int MAX = 64;

  private final int id;
  private final TransactionalBlobStore store;
  private final List<String> accounts;
  private final List<String> counters;
  private final List<String> registers;
  private final Random random;
  private final Queue<Op> history;
  private final BooleanSupplier running;
  private int seq;

  HistoryClient(int id, TransactionalBlobStore store, List<String> accounts,
      List<String> counters, List<String> registers, long seed, Queue<Op> history,
      BooleanSupplier running) {
    this.id = id;
    this.store = store;
    this.accounts = accounts;
    this.counters = counters;
    this.registers = registers;
    this.random = new Random(seed);
    this.history = history;
    this.running = running;
  }

  @Override
  public void run() {
    while (running.getAsBoolean()) {
      int dice = random.nextInt(100);
      if (dice < 30) {
        transfer();
      } else if (dice < 40) {
        audit();
      } else if (dice < 60) {
        increment(counters.get(random.nextInt(counters.size())));
      } else if (dice < 65) {
        readCounter(counters.get(random.nextInt(counters.size())));
      } else if (dice < 85) {
        write(registers.get(random.nextInt(registers.size())));
      } else {
        read(registers.get(random.nextInt(registers.size())));
      }
    }
  }

  private String nextId(String prefix) {
    return prefix + id + "-" + seq++;
  }

  /** The record of an operation under way. */
  private final class Pending {
    final String opId;
    final Kind f;
    final long invoke = System.nanoTime();
    final Map<String, String> reads = new LinkedHashMap<>();
    final Map<String, String> writes = new LinkedHashMap<>();

    Pending(String opId, Kind f) {
      this.opId = opId;
      this.f = f;
    }

    void done(Outcome o, Exception e) {
      history.add(new Op(opId, id, f, o, invoke, System.nanoTime(), reads, writes,
          e == null ? null : e.getClass().getSimpleName() + ": " + e.getMessage()));
    }

    /** Outcome of an error: FAIL for reads and conflicts, INFO for other errors of writes. */
    void failed(Exception e, boolean writes) {
      done(!writes || e instanceof TransactionConflictException ? Outcome.FAIL : Outcome.INFO,
          e);
    }
  }

  private void transfer() {
    int i = random.nextInt(accounts.size());
    int j = (i + 1 + random.nextInt(accounts.size() - 1)) % accounts.size();
    String from = accounts.get(i);
    String to = accounts.get(j);
    long amount = 1 + random.nextInt(20);
    Pending p = new Pending(nextId("t"), Kind.TRANSFER);
    VersionedBytes f;
    VersionedBytes g;
    try {
      f = read(p, from);
      g = read(p, to);
      // A malformed value is recorded as read (the checker reports it), not thrown.
      p.writes.put(from, account(balanceOf(text(f.bytes())) - amount, p.opId));
      p.writes.put(to, account(balanceOf(text(g.bytes())) + amount, p.opId));
    } catch (IOException | RuntimeException e) {
      p.writes.clear();
      p.failed(e, false);
      return;
    }
    commit(p, List.of(new BlobMutation.Check(from, f.version()),
        new BlobMutation.Check(to, g.version()),
        new BlobMutation.Put(from, utf8(p.writes.get(from)), PutMode.OVERWRITE),
        new BlobMutation.Put(to, utf8(p.writes.get(to)), PutMode.OVERWRITE)));
  }

  private void audit() {
    Pending p = new Pending(nextId("a"), Kind.AUDIT);
    List<BlobMutation> checks = new ArrayList<>();
    try {
      for (String a : accounts) {
        VersionedBytes v = read(p, a);
        checks.add(new BlobMutation.Check(a, v.version()));
      }
      store.commit(checks); // only checks: it commits iff what it read was one state
      p.done(Outcome.OK, null);
    } catch (IOException | RuntimeException e) {
      p.failed(e, false);
    }
  }

  private void increment(String counter) {
    Pending p = new Pending(nextId("i"), Kind.INCREMENT);
    VersionedBytes v;
    try {
      v = read(p, counter);
      p.writes.put(counter, Long.toString(Long.parseLong(text(v.bytes())) + 1));
    } catch (IOException | RuntimeException e) {
      p.failed(e, false); // a malformed value stays in the reads: the checker reports it
      return;
    }
    commit(p, List.of(new BlobMutation.Check(counter, v.version()),
        new BlobMutation.Put(counter, utf8(p.writes.get(counter)), PutMode.OVERWRITE)));
  }

  private void readCounter(String counter) {
    Pending p = new Pending(nextId("c"), Kind.COUNTER_READ);
    try {
      p.reads.put(counter, plainRead(counter));
      p.done(Outcome.OK, null);
    } catch (IOException | RuntimeException e) {
      p.failed(e, false);
    }
  }

  private void write(String register) {
    Pending p = new Pending(nextId("w"), Kind.WRITE);
    p.writes.put(register, p.opId);
    try {
      store.put(register, utf8(p.opId), PutMode.OVERWRITE);
      p.done(Outcome.OK, null);
    } catch (IOException | RuntimeException e) {
      p.failed(e, true);
    }
  }

  private void read(String register) {
    Pending p = new Pending(nextId("r"), Kind.READ);
    try {
      p.reads.put(register, plainRead(register));
      p.done(Outcome.OK, null);
    } catch (IOException | RuntimeException e) {
      p.failed(e, false);
    }
  }

  /**
   * A read with its version on the key's primary, recorded in {@code p}: its value, or
   * null if the key is absent (every key of the workload exists, so the checker reports
   * that, where a bare error would only make the operation a failed read).
   */
  private VersionedBytes read(Pending p, String key) throws IOException {
    try {
      VersionedBytes v = store.readWithVersion(key, MAX);
      p.reads.put(key, text(v.bytes()));
      return v;
    } catch (BlobNotFoundException e) {
      p.reads.put(key, null);
      throw e;
    }
  }

  private void commit(Pending p, List<BlobMutation> tx) {
    try {
      store.commit(tx);
      p.done(Outcome.OK, null);
    } catch (IOException | RuntimeException e) {
      p.failed(e, true);
    }
  }

  /** A plain read (any replica, as a reader of the file system does); null if absent. */
  private String plainRead(String key) throws IOException {
    ByteBuffer b = ByteBuffer.allocate(MAX);
    try {
      int n = Futures.await(store.read(key, 0, b));
      return n < 0 ? "" : new String(b.array(), 0, n, StandardCharsets.UTF_8);
    } catch (BlobNotFoundException e) {
      return null;
    }
  }

  static String text(byte[] b) {
    return new String(b, StandardCharsets.UTF_8);
  }

  static ByteBuffer utf8(String s) {
    return ByteBuffer.wrap(s.getBytes(StandardCharsets.UTF_8));
  }
}
