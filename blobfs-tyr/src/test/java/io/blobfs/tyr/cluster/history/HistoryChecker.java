package io.blobfs.tyr.cluster.history;

import io.blobfs.tyr.cluster.history.Op.Kind;
import io.blobfs.tyr.cluster.history.Op.Outcome;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;

/**
 * Checks a recorded history (see {@link Op}) against what a serializable store that loses
 * no acknowledged write may show. Pure: no I/O, no clock; it judges the operations it is
 * given. Indeterminate operations ({@link Outcome#INFO}) may or may not have applied;
 * failed ones ({@link Outcome#FAIL}) must not have.
 *
 * <p>Accounts: every value names the transfer that wrote it, so each account's history is
 * a chain of transfers, each linked to the one whose value it read. The checker verifies:
 * every value read anywhere was written by a transfer that may have applied, exactly as
 * it wrote it; no two applied transfers read the same value of one account (a lost
 * update, i.e. not serializable); the final value's chain holds every acknowledged
 * transfer of that account (no acknowledged write lost); in every acknowledged snapshot
 * (audits and the final read) each transfer is in the chains of both its accounts or of
 * neither (not half-applied), and the balances sum to the total; every transfer's reads,
 * whatever its outcome, hold each acknowledged transfer of that account that completed
 * before it began.
 *
 * <p>Counters: the final value lies between the acknowledged increments and those plus
 * the indeterminate ones; no two acknowledged increments read the same value; every read
 * (an acknowledged counter read, or the read of any increment, whatever its outcome) lies
 * between the increments acknowledged before it began and those invoked before it ended.
 *
 * <p>Registers (unique values): a read returns a value some write that may have applied
 * wrote, not one whose write began after the read ended, nor one an acknowledged write
 * had overwritten before the read began: that write began after the value read was known
 * to have applied (its write acknowledged, or an earlier read returned it) and was
 * acknowledged before the read began. The final read is such a read.
 */
public final class HistoryChecker {
  /** The writer of an account's initial value. */
  public static final String INIT = "init";

  private final Set<String> accounts;
  private final long initialBalance;
  private final Set<String> counters;
  private final Set<String> registers;

  /** What the checker found. */
  public record Result(List<String> violations, Map<String, Integer> counts) {
    public boolean valid() {
      return violations.isEmpty();
    }

    /** The counts by kind and outcome, one line. */
    public String summary() {
      StringBuilder b = new StringBuilder();
      counts.forEach((k, v) -> b.append(b.length() == 0 ? "" : ", ").append(k).append(' ')
          .append(v));
      return b.toString();
    }
  }

  public HistoryChecker(Set<String> accounts, long initialBalance, Set<String> counters,
      Set<String> registers) {
    this.accounts = Set.copyOf(accounts);
    this.initialBalance = initialBalance;
    this.counters = Set.copyOf(counters);
    this.registers = Set.copyOf(registers);
  }

  /** An account's value: {@code balance:writer}. */
  public static String account(long balance, String writer) {
    return balance + ":" + writer;
  }

  public static long balanceOf(String value) {
    return Long.parseLong(value.substring(0, value.indexOf(':')));
  }

  /** Whether an account value is {@code balance:writer}. */
  static boolean wellFormed(String value) {
    return value.matches("-?[0-9]{1,18}:.+");
  }

  public static String writerOf(String value) {
    return value.substring(value.indexOf(':') + 1);
  }

  public Result check(List<Op> history) {
    List<String> bad = new ArrayList<>();
    Map<String, Integer> counts = new TreeMap<>();
    Op fin = null;
    for (Op op : history) {
      counts.merge(op.f().name().toLowerCase() + " " + op.outcome().name().toLowerCase(), 1,
          Integer::sum);
      if (op.f() == Kind.FINAL) {
        if (op.outcome() != Outcome.OK || fin != null) {
          bad.add("the final read must be one acknowledged operation: " + op.toJson());
        }
        fin = op;
      }
    }
    if (fin == null) {
      bad.add("no final read");
      return new Result(bad, counts);
    }
    new Accounts(history, fin, bad).check();
    checkCounters(history, fin, bad);
    checkRegisters(history, fin, bad);
    return new Result(List.copyOf(bad), counts);
  }

  /** The account part: chains of transfers, linked by the values they read. */
  private final class Accounts {
    private final List<Op> history;
    private final Op fin;
    private final List<String> bad;
    private final Map<String, Op> transfers = new HashMap<>();
    /** key -> transfer id -> the writer of the value that transfer read. */
    private final Map<String, Map<String, String>> pred = new HashMap<>();
    /** Transfers seen to have applied: some read shows a value they wrote. */
    private final Set<String> observed = new HashSet<>();

    Accounts(List<Op> history, Op fin, List<String> bad) {
      this.history = history;
      this.fin = fin;
      this.bad = bad;
    }

    void check() {
      for (Op op : history) {
        if (op.f() == Kind.TRANSFER && transfers.put(op.id(), op) != null) {
          bad.add("two transfers with id " + op.id());
        }
      }
      for (Op op : history) {
        for (Map.Entry<String, String> r : op.reads().entrySet()) {
          if (accounts.contains(r.getKey())) {
            checkValue(op, r.getKey(), r.getValue());
          }
        }
        if (op.f() == Kind.TRANSFER) {
          op.reads().forEach((k, v) -> pred.computeIfAbsent(k, x -> new HashMap<>())
              .put(op.id(), v == null ? null : writerOf(v)));
        }
      }
      checkLostUpdates();
      for (Op op : history) {
        if (op.f() == Kind.TRANSFER) {
          checkTransferRead(op);
        }
      }
      for (Op op : history) {
        if ((op.f() == Kind.AUDIT && op.outcome() == Outcome.OK) || op == fin) {
          checkSnapshot(op);
        }
      }
      checkFinalChains();
    }

    /** A value read: written by init or by a transfer that may have applied, as it wrote it. */
    private void checkValue(Op op, String key, String value) {
      if (value == null) {
        bad.add(key + " absent in " + op.toJson());
        return;
      }
      if (!wellFormed(value)) {
        bad.add(key + " = " + value + " is not an account value (balance:writer), in "
            + op.toJson());
        return;
      }
      String writer = writerOf(value);
      if (writer.equals(INIT)) {
        if (balanceOf(value) != initialBalance) {
          bad.add(key + " = " + value + ": not the initial balance " + initialBalance
              + ", in " + op.toJson());
        }
        return;
      }
      Op w = transfers.get(writer);
      if (w == null) {
        bad.add(key + " = " + value + " was written by no transfer; read by " + op.toJson());
      } else if (w.outcome() == Outcome.FAIL) {
        bad.add("failed transfer " + w.id() + " is visible: " + key + " = " + value
            + " read by " + op.toJson() + "; the transfer: " + w.toJson());
      } else if (!value.equals(w.writes().get(key))) {
        bad.add(key + " = " + value + " differs from what " + w.id() + " wrote ("
            + w.writes().get(key) + "), read by " + op.toJson());
      } else if (op != w) {
        observed.add(writer);
      }
    }

    private boolean applied(Op t) {
      return t.outcome() == Outcome.OK || (t.outcome() == Outcome.INFO
          && observed.contains(t.id()));
    }

    /**
     * A transfer's reads are not older than any acknowledged transfer of the same account
     * that completed before it began. Checked whatever the transfer's outcome: its reads
     * completed even if its commit failed, and a stale read that led to a conflict shows
     * up nowhere else.
     */
    private void checkTransferRead(Op op) {
      for (Map.Entry<String, String> r : op.reads().entrySet()) {
        if (!accounts.contains(r.getKey()) || r.getValue() == null
            || !wellFormed(r.getValue())) {
          continue; // reported by checkValue
        }
        Set<String> c = quietChain(r.getKey(), writerOf(r.getValue()));
        if (c == null) {
          continue; // a broken chain is reported where a snapshot or checkValue meets it
        }
        for (Op t : transfers.values()) {
          if (t != op && t.outcome() == Outcome.OK && t.complete() < op.invoke()
              && t.writes().containsKey(r.getKey()) && !c.contains(t.id())) {
            bad.add("transfer " + op.id() + " read " + r.getKey() + " = " + r.getValue()
                + ", which misses acknowledged transfer " + t.id() + ", completed before "
                + op.id() + " began: " + op.toJson() + "; the transfer: " + t.toJson());
          }
        }
      }
    }

    /** Like {@link #chain} but reporting nothing; null if the chain is broken. */
    private Set<String> quietChain(String key, String writer) {
      Set<String> seen = new HashSet<>();
      for (String w = writer; w != null; w = pred.getOrDefault(key, Map.of()).get(w)) {
        if (w.equals(INIT)) {
          return seen;
        }
        if (!seen.add(w)) {
          return null;
        }
      }
      return null;
    }

    /** Two applied transfers that read one value of an account: one's write was lost. */
    private void checkLostUpdates() {
      for (String key : accounts) {
        Map<String, String> byPred = new HashMap<>();
        for (Map.Entry<String, String> e : pred.getOrDefault(key, Map.of()).entrySet()) {
          Op t = transfers.get(e.getKey());
          if (!applied(t)) {
            continue;
          }
          String other = byPred.putIfAbsent(String.valueOf(e.getValue()), t.id());
          if (other != null) {
            bad.add("lost update on " + key + ": transfers " + other + " and " + t.id()
                + " both applied after reading the value written by " + e.getValue() + ": "
                + transfers.get(other).toJson() + " / " + t.toJson());
          }
        }
      }
    }

    /**
     * The transfers whose writes the value of {@code key} written by {@code writer}
     * includes, following what each read; null if the chain is broken (reported).
     */
    private Set<String> chain(String key, String writer, Op where) {
      Set<String> seen = new LinkedHashSet<>();
      for (String w = writer; !w.equals(INIT); ) {
        if (!seen.add(w)) {
          bad.add("cycle in the chain of " + key + " at " + w + " (" + where.toJson() + ")");
          return null;
        }
        String p = pred.getOrDefault(key, Map.of()).get(w);
        if (p == null) {
          bad.add("the chain of " + key + " breaks at " + w + ", which did not read it ("
              + where.toJson() + ")");
          return null;
        }
        w = p;
      }
      return seen;
    }

    /** One acknowledged snapshot: the total, and no transfer in one account's chain only. */
    private void checkSnapshot(Op snap) {
      long sum = 0;
      Map<String, Set<String>> chains = new HashMap<>();
      for (String a : accounts) {
        String v = snap.reads().get(a);
        if (v == null || !wellFormed(v)) {
          return; // reported by checkValue
        }
        sum += balanceOf(v);
        Set<String> c = chain(a, writerOf(v), snap);
        if (c == null) {
          return;
        }
        chains.put(a, c);
      }
      long total = initialBalance * accounts.size();
      if (sum != total) {
        bad.add("the accounts sum to " + sum + ", not " + total + ", in " + snap.toJson());
      }
      for (Map.Entry<String, Set<String>> e : chains.entrySet()) {
        for (String t : e.getValue()) {
          for (String other : transfers.get(t).writes().keySet()) {
            if (chains.containsKey(other) && !chains.get(other).contains(t)) {
              bad.add("transfer " + t + " half-applied in " + snap.f().name().toLowerCase()
                  + " " + snap.id() + ": in the value of " + e.getKey() + ", not of " + other
                  + "; transfer " + transfers.get(t).toJson() + "; snapshot " + snap.toJson());
            }
          }
        }
      }
    }

    /** Every acknowledged transfer of an account is in its final value's chain. */
    private void checkFinalChains() {
      for (String a : accounts) {
        String v = fin.reads().get(a);
        Set<String> c = v == null || !wellFormed(v) ? null : chain(a, writerOf(v), fin);
        if (c == null) {
          continue;
        }
        for (Op t : transfers.values()) {
          if (t.outcome() == Outcome.OK && t.writes().containsKey(a) && !c.contains(t.id())) {
            bad.add("acknowledged transfer " + t.id() + " lost on " + a + " (final " + v
                + "): " + t.toJson());
          }
        }
      }
    }
  }

  private void checkCounters(List<Op> history, Op fin, List<String> bad) {
    for (String c : new TreeSet<>(counters)) {
      List<Op> incs = new ArrayList<>();
      for (Op op : history) {
        if (op.f() == Kind.INCREMENT && op.writes().containsKey(c)) {
          incs.add(op);
        }
      }
      // Every counter exists from the start and holds a number: anything else read is a
      // violation, reported here once per read and left out of the bounds below.
      boolean finalOk = fin.reads().containsKey(c);
      if (!finalOk) {
        bad.add("the final read has no counter " + c + ": " + fin.toJson());
      }
      for (Op op : history) {
        if (op.reads().containsKey(c) && valueOf(op.reads().get(c)) == null) {
          bad.add("counter " + c + " read " + (op.reads().get(c) == null ? "absent"
              : "'" + op.reads().get(c) + "', not a number") + ": " + op.toJson());
          finalOk &= op != fin;
        }
      }
      if (!finalOk) {
        continue;
      }
      long ok = incs.stream().filter(o -> o.outcome() == Outcome.OK).count();
      long info = incs.stream().filter(o -> o.outcome() == Outcome.INFO).count();
      long last = valueOf(fin.reads().get(c));
      if (last < ok || last > ok + info) {
        bad.add("counter " + c + " ends at " + last + ", outside [" + ok + ", " + (ok + info)
            + "] (" + ok + " acknowledged increments, " + info + " indeterminate)");
      }
      Map<Long, String> readBy = new HashMap<>();
      for (Op i : incs) {
        if (i.outcome() == Outcome.OK && valueOf(i.reads().get(c)) != null) {
          String other = readBy.putIfAbsent(valueOf(i.reads().get(c)), i.id());
          if (other != null) {
            bad.add("lost update on counter " + c + ": increments " + other + " and " + i.id()
                + " both acknowledged after reading " + i.reads().get(c));
          }
        }
      }
      for (Op op : history) {
        // An increment's read completed whatever became of its commit (a failed read
        // records nothing), so it is checked whatever the increment's outcome; its bounds
        // use the whole operation's span, which contains the read's.
        boolean isRead = op.f() == Kind.INCREMENT
            || (op.f() == Kind.COUNTER_READ && op.outcome() == Outcome.OK);
        if (!isRead || !op.reads().containsKey(c) || valueOf(op.reads().get(c)) == null) {
          continue;
        }
        long v = valueOf(op.reads().get(c));
        long lower = incs.stream().filter(i -> i.outcome() == Outcome.OK
            && i.complete() < op.invoke()).count();
        long upper = incs.stream().filter(i -> i != op && i.mayHaveApplied()
            && i.invoke() < op.complete()).count();
        if (v < lower || v > upper) {
          bad.add("counter " + c + " read " + v + " outside [" + lower + ", " + upper
              + "] (acknowledged before the read began; invoked before it ended): "
              + op.toJson());
        }
      }
    }
  }

  /** A counter's value; null if absent or not a number. */
  private static Long valueOf(String counter) {
    return counter != null && counter.matches("[0-9]{1,18}") ? Long.valueOf(counter) : null;
  }

  private void checkRegisters(List<Op> history, Op fin, List<String> bad) {
    Map<String, Map<String, Op>> writes = new HashMap<>();
    for (Op op : history) {
      if (op.f() == Kind.WRITE) {
        op.writes().forEach((k, v) -> {
          if (writes.computeIfAbsent(k, x -> new LinkedHashMap<>()).put(v, op) != null) {
            bad.add("register " + k + " written twice with " + v);
          }
        });
      }
    }
    List<Op> reads = new ArrayList<>();
    for (Op op : history) {
      if ((op.f() == Kind.READ && op.outcome() == Outcome.OK) || op == fin) {
        reads.add(op);
      }
    }
    for (String key : new TreeSet<>(registers)) { // a stable order of violations
      Map<String, Op> byValue = writes.getOrDefault(key, Map.of());
      Map<String, Long> applied = appliedBy(key, byValue, reads);
      for (Op op : reads) {
        if (op.reads().containsKey(key)) {
          checkRegisterRead(op, key, op.reads().get(key), byValue, applied, bad);
        }
      }
    }
  }

  /**
   * For each value of a register, the time by which its write is known to have applied:
   * its acknowledgement, or the completion of the first acknowledged read that returned
   * it, whichever is earlier. A write applies once, so an indeterminate write seen by a
   * read is as settled from then on as an acknowledged one. Values never known to have
   * applied are absent.
   */
  private static Map<String, Long> appliedBy(String key, Map<String, Op> writes,
      List<Op> reads) {
    Map<String, Long> at = new HashMap<>();
    for (Op w : writes.values()) {
      if (w.outcome() == Outcome.OK) {
        at.put(w.writes().get(key), w.complete());
      }
    }
    for (Op r : reads) {
      String v = r.reads().get(key);
      Op w = v == null ? null : writes.get(v);
      // A value read before its write began, or of a failed write, is reported on its own.
      if (w != null && w.outcome() != Outcome.FAIL && w.invoke() <= r.complete()) {
        at.merge(v, r.complete(), Math::min);
      }
    }
    return at;
  }

  private static void checkRegisterRead(Op read, String key, String value,
      Map<String, Op> writes, Map<String, Long> applied, List<String> bad) {
    Op w = value == null ? null : writes.get(value);
    if (value != null && w == null) {
      bad.add("register " + key + " read " + value + ", which no write wrote: "
          + read.toJson());
      return;
    }
    if (w != null && w.outcome() == Outcome.FAIL) {
      bad.add("register " + key + " read " + value + " of a failed write: " + read.toJson()
          + "; the write: " + w.toJson());
      return;
    }
    if (w != null && w.invoke() > read.complete()) {
      bad.add("register " + key + " read " + value + " before its write began: "
          + read.toJson() + "; the write: " + w.toJson());
      return;
    }
    // Stale: an acknowledged write w2 began after the value read had applied and completed
    // before the read began; the value cannot apply again, so the read must see w2 or later.
    long readApplied = w == null ? Long.MIN_VALUE : applied.getOrDefault(value, Long.MAX_VALUE);
    for (Op w2 : writes.values()) {
      boolean overwritten = w2 != w && w2.outcome() == Outcome.OK
          && w2.complete() < read.invoke() && readApplied < w2.invoke();
      if (overwritten) {
        bad.add("register " + key + " read " + (value == null ? "absent" : value)
            + ", but acknowledged write " + w2.id() + " of " + w2.writes().get(key)
            + " had replaced it before the read began: " + read.toJson() + "; the write: "
            + w2.toJson());
        return;
      }
    }
  }
}
