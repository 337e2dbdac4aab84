package io.blobfs.tyr.server;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.GeneralSecurityException;
import java.security.MessageDigest;
import javax.crypto.Mac;
import javax.crypto.spec.SecretKeySpec;

/**
 * Mutual shared-secret authentication by challenge and response. The server's CHALLENGE
 * carries its nonce; the client's HELLO proves the secret over it and carries the
 * client's own nonce; the server's answer proves the secret over both. The secret never
 * crosses the wire, a recorded proof is useless on another connection (new nonces), and
 * each side's proof is labelled with its role, so a fake server cannot get one client
 * connection to compute the proof it owes another (a reflection attack).
 */
public final class Authenticator {
  private static final byte[] CLIENT = "tyr-client-proof".getBytes(StandardCharsets.US_ASCII);
  private static final byte[] SERVER = "tyr-server-proof".getBytes(StandardCharsets.US_ASCII);

  private final byte[] secret;

  public Authenticator(byte[] secret) {
    this.secret = checked(secret, "the Týr secret");
  }

  public boolean required() {
    return secret != null;
  }

  boolean verify(byte[] serverNonce, byte[] proof) {
    return secret == null || MessageDigest.isEqual(clientProof(secret, serverNonce), proof);
  }

  /** What the server answers a verified HELLO with: empty when it has no secret. */
  byte[] answer(byte[] serverNonce, byte[] clientNonce) {
    return secret == null ? new byte[0] : serverProof(secret, serverNonce, clientNonce);
  }

  /** HMAC-SHA256(secret, client label, server nonce): what a client sends in its HELLO. */
  public static byte[] clientProof(byte[] secret, byte[] serverNonce) {
    return hmac(secret, CLIENT, serverNonce, new byte[0]);
  }

  /** HMAC-SHA256(secret, server label, server nonce, client nonce): the server's answer. */
  public static byte[] serverProof(byte[] secret, byte[] serverNonce, byte[] clientNonce) {
    return hmac(secret, SERVER, serverNonce, clientNonce);
  }

  private static byte[] hmac(byte[] secret, byte[] label, byte[] a, byte[] b) {
    try {
      Mac mac = Mac.getInstance("HmacSHA256");
      mac.init(new SecretKeySpec(secret, "HmacSHA256"));
      mac.update(label);
      // Lengths first, so that no two (a, b) pairs give the same input.
      mac.update(new byte[] {(byte) (a.length >> 8), (byte) a.length});
      mac.update(a);
      return mac.doFinal(b);
    } catch (GeneralSecurityException e) {
      throw new IllegalStateException("HmacSHA256 is missing from this JVM", e);
    }
  }

  /**
   * A copy of {@code secret}, or null for none. An empty or blank secret is refused: taken
   * as "no secret" it would silently turn authentication off.
   */
  public static byte[] checked(byte[] secret, String what) {
    if (secret == null) {
      return null;
    }
    if (new String(secret, StandardCharsets.UTF_8).isBlank()) {
      throw new IllegalArgumentException(what + " is empty or blank; it would turn "
          + "authentication off. Set a real secret, or none at all");
    }
    return secret.clone();
  }

  /** The secret in {@code file}, without surrounding whitespace; blank is refused. */
  public static byte[] readSecretFile(Path file, String key) throws IOException {
    byte[] s = Files.readString(file, StandardCharsets.UTF_8).strip()
        .getBytes(StandardCharsets.UTF_8);
    return checked(s, key + " (" + file + ")");
  }
}
