package io.blobfs.tyr.protocol;

import io.blobfs.tyr.api.TxRequest;

/** The requests a client sends, decoded from or encoded to frames by {@link Messages}. */
public sealed interface Request {

  /** Proof of the shared secret: HMAC-SHA256(secret, server nonce); empty if none. */
  record Hello(byte[] proof) implements Request {}

  record Stat(String key) implements Request {}

  record Read(String key, long offset, int length) implements Request {}

  record Commit(TxRequest tx) implements Request {}

  /** {@code cursor} null for the first page; {@code headBytes} 0 for names only. */
  record Scan(String prefix, String cursor, int limit, int headBytes) implements Request {}

  record Ping() implements Request {}
}
