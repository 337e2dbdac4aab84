package io.blobfs.tyr.protocol;

import io.netty.buffer.ByteBufAllocator;
import io.netty.handler.ssl.SslContext;
import io.netty.handler.ssl.SslContextBuilder;
import io.netty.handler.ssl.SslHandler;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.GeneralSecurityException;
import java.security.KeyStore;
import javax.net.ssl.KeyManagerFactory;
import javax.net.ssl.SSLEngine;
import javax.net.ssl.SSLParameters;

/**
 * The optional TLS session under the frames: Netty's {@link SslHandler} in front of the
 * codec, so framing, limits and the shared-secret handshake are the same with or without
 * it. The server presents a key and certificate from a PKCS12 key store; the client
 * trusts the certificates of a PEM file (the server's own, if self-signed) and checks
 * that the certificate names the host it connects to.
 */
public final class Tls {
  private static final String[] PROTOCOLS = {"TLSv1.3", "TLSv1.2"};

  private Tls() {}

  /** The server's context, from a PKCS12 key store and a file holding its password. */
  public static SslContext server(Path keystore, Path passwordFile) throws IOException {
    char[] password = Files.readString(passwordFile, StandardCharsets.UTF_8).strip()
        .toCharArray();
    try (InputStream in = Files.newInputStream(keystore)) {
      KeyStore ks = KeyStore.getInstance("PKCS12");
      ks.load(in, password);
      KeyManagerFactory kmf = KeyManagerFactory.getInstance(
          KeyManagerFactory.getDefaultAlgorithm());
      kmf.init(ks, password);
      return SslContextBuilder.forServer(kmf).protocols(PROTOCOLS).build();
    } catch (GeneralSecurityException e) {
      throw new IOException("cannot use the TLS key store " + keystore + ": " + e, e);
    }
  }

  /** The client's context, trusting the certificates in {@code trustPem}. */
  public static SslContext client(Path trustPem) throws IOException {
    try {
      return SslContextBuilder.forClient().trustManager(trustPem.toFile())
          .protocols(PROTOCOLS).build();
    } catch (IllegalArgumentException | javax.net.ssl.SSLException e) {
      throw new IOException("cannot use the TLS certificates in " + trustPem + ": " + e, e);
    }
  }

  /** A client's handler that also checks the certificate against {@code host}. */
  public static SslHandler clientHandler(SslContext context, ByteBufAllocator alloc,
      String host, int port) {
    SslHandler handler = context.newHandler(alloc, host, port);
    SSLEngine engine = handler.engine();
    SSLParameters params = engine.getSSLParameters();
    params.setEndpointIdentificationAlgorithm("HTTPS");
    engine.setSSLParameters(params);
    return handler;
  }
}
