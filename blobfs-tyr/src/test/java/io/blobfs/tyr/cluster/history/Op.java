package io.blobfs.tyr.cluster.history;

import java.util.Map;
import java.util.TreeMap;

/**
 * One operation of a recorded history, Jepsen-style: a client invoked it at
 * {@code invoke} and learnt its outcome at {@code complete} (nanoseconds of one clock).
 *
 * <p>{@code reads} is what the operation read (key to value; a null value: the blob was
 * absent), {@code writes} what it wrote or tried to. Accounts hold {@code balance:writer}
 * (the id of the transfer that wrote it, {@code init} for the initial value), counters a
 * decimal number, registers a unique value per write.
 */
public record Op(String id, int client, Kind f, Outcome outcome, long invoke, long complete,
    Map<String, String> reads, Map<String, String> writes, String error) {

  /** What the operation does. */
  public enum Kind {
    /** Moves an amount between two accounts: reads both, writes both, one transaction. */
    TRANSFER,
    /** Reads every account and commits only checks of what it read: one snapshot. */
    AUDIT,
    /** Read-modify-write of a counter: reads n, writes n + 1 under a check. */
    INCREMENT,
    /** Reads a counter. */
    COUNTER_READ,
    /** Writes a register's unique value. */
    WRITE,
    /** Reads a register. */
    READ,
    /** The final read of every key once everything healed (ok only). */
    FINAL
  }

  /** The outcome as the client knows it. */
  public enum Outcome {
    /** Acknowledged. */
    OK,
    /** Definitely not applied: a typed error that guarantees it (a conflict). */
    FAIL,
    /** Indeterminate: a timeout, a connection lost mid-commit; it may or may not apply. */
    INFO
  }

  public Op {
    reads = reads == null ? Map.of() : new TreeMap<>(reads);
    writes = writes == null ? Map.of() : new TreeMap<>(writes);
  }

  /** Whether the operation's effects may be in the store: acknowledged or indeterminate. */
  public boolean mayHaveApplied() {
    return outcome != Outcome.FAIL;
  }

  /** The operation as one JSON object (one line of the history file). */
  public String toJson() {
    StringBuilder b = new StringBuilder("{");
    b.append("\"id\":").append(quote(id)).append(",\"client\":").append(client)
        .append(",\"f\":").append(quote(f.name().toLowerCase()))
        .append(",\"type\":").append(quote(outcome.name().toLowerCase()))
        .append(",\"invoke\":").append(invoke).append(",\"complete\":").append(complete)
        .append(",\"reads\":").append(json(reads)).append(",\"writes\":").append(json(writes));
    if (error != null) {
      b.append(",\"error\":").append(quote(error));
    }
    return b.append('}').toString();
  }

  /** The invocation as one JSON object: what was asked, before any outcome. */
  public String invokeJson() {
    return "{\"id\":" + quote(id) + ",\"client\":" + client + ",\"f\":"
        + quote(f.name().toLowerCase()) + ",\"type\":\"invoke\",\"time\":" + invoke + "}";
  }

  private static String json(Map<String, String> m) {
    StringBuilder b = new StringBuilder("{");
    for (Map.Entry<String, String> e : m.entrySet()) {
      b.append(b.length() == 1 ? "" : ",").append(quote(e.getKey())).append(':')
          .append(e.getValue() == null ? "null" : quote(e.getValue()));
    }
    return b.append('}').toString();
  }

  static String quote(String s) {
    StringBuilder b = new StringBuilder("\"");
    for (char c : s.toCharArray()) {
      switch (c) {
        case '"' -> b.append("\\\"");
        case '\\' -> b.append("\\\\");
        case '\n' -> b.append("\\n");
        case '\r' -> b.append("\\r");
        case '\t' -> b.append("\\t");
        default -> {
          if (c < 0x20) {
            b.append(String.format("\\u%04x", (int) c));
          } else {
            b.append(c);
          }
        }
      }
    }
    return b.append('"').toString();
  }
}
