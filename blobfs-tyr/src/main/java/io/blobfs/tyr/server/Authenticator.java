package io.blobfs.tyr.server;

import java.security.GeneralSecurityException;
import java.security.MessageDigest;
import javax.crypto.Mac;
import javax.crypto.spec.SecretKeySpec;

/**
 * Shared-secret authentication by challenge and response: the secret itself never
 * crosses the wire, and a recorded proof is useless on another connection (new nonce).
 */
public final class Authenticator {
  private final byte[] secret;

  public Authenticator(byte[] secret) {
    this.secret = secret == null || secret.length == 0 ? null : secret.clone();
  }

  public boolean required() {
    return secret != null;
  }

  boolean verify(byte[] nonce, byte[] proof) {
    return secret == null || MessageDigest.isEqual(prove(secret, nonce), proof);
  }

  /** HMAC-SHA256(secret, nonce): what a client sends in its HELLO. */
  public static byte[] prove(byte[] secret, byte[] nonce) {
    try {
      Mac mac = Mac.getInstance("HmacSHA256");
      mac.init(new SecretKeySpec(secret, "HmacSHA256"));
      return mac.doFinal(nonce);
    } catch (GeneralSecurityException e) {
      throw new IllegalStateException("HmacSHA256 is missing from this JVM", e);
    }
  }
}
