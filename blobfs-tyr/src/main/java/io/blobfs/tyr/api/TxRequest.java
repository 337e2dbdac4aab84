package io.blobfs.tyr.api;

import java.util.List;

/**
 * A transaction as sent for commit: the versions it read (validated first) and the ops it
 * applies, in order. A single op with no read set is a one-op transaction.
 */
public record TxRequest(List<ReadCheck> reads, List<TxOp> ops) {
  public TxRequest {
    reads = List.copyOf(reads);
    ops = List.copyOf(ops);
  }

  public static TxRequest of(TxOp... ops) {
    return new TxRequest(List.of(), List.of(ops));
  }
}
