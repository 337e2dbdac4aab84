package io.blobfs.tyr.it;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.blobfs.store.BlobStore;
import io.blobfs.store.PutMode;
import io.blobfs.store.StoreOptions;
import io.blobfs.tyr.api.ErrorCode;
import io.blobfs.tyr.api.TyrException;
import io.blobfs.tyr.blobfs.TyrBlobStoreProvider;
import io.blobfs.tyr.client.ClientConfig;
import io.blobfs.tyr.client.TyrClient;
import io.blobfs.tyr.engine.EngineConfig;
import io.blobfs.tyr.server.ServerConfig;
import io.blobfs.tyr.server.TyrServer;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * TLS under the frames, with self-signed certificates made by the JDK's keytool (a child
 * process, hence an integration test): a client that trusts the server's certificate
 * works through the store option; one that trusts another certificate, or speaks plain
 * TCP to a TLS server, is refused.
 */
class TyrTlsIT {
  @TempDir
  Path dir;

  @Test
  void tlsSessionsOnlyWithTheTrustedCertificate() throws Exception {
    Path keystore = keypair("tyr", dir.resolve("server.p12"), dir.resolve("server.pem"));
    keypair("other", dir.resolve("other.p12"), dir.resolve("other.pem"));
    Path password = Files.writeString(dir.resolve("password"), "changeit\n");
    Path secret = Files.writeString(dir.resolve("secret"), "s3cret\n");
    try (TyrServer server = TyrServer.start(ServerConfig.local(EngineConfig.defaults(
        dir.resolve("data"))).withSecret("s3cret".getBytes())
        .withTls(new ServerConfig.TlsFiles(keystore, password)))) {
      try (BlobStore store = new TyrBlobStoreProvider().open("tls", new StoreOptions(
          "fs.blob.store.tls.", Map.of("address", "127.0.0.1:" + server.port(),
              "secret-file", secret.toString(), "tls-trust",
              dir.resolve("server.pem").toString())))) {
        store.put("n/a", ByteBuffer.wrap(new byte[200_000]), PutMode.CREATE);
        assertThat(store.stat("n/a").size()).isEqualTo(200_000);
      }
      try (TyrClient wrongTrust = new TyrClient(ClientConfig.of("127.0.0.1", server.port())
          .withSecret("s3cret".getBytes()).withTlsTrust(dir.resolve("other.pem"))
          .withTimeouts(Duration.ofSeconds(5), Duration.ofSeconds(5)))) {
        assertThatThrownBy(() -> TyrClient.await(wrongTrust.ping()))
            .matches(e -> e instanceof TyrException t
                && t.code() == ErrorCode.UNAUTHENTICATED, "UNAUTHENTICATED")
            .hasMessageContaining("TLS");
      }
      try (TyrClient plain = new TyrClient(ClientConfig.of("127.0.0.1", server.port())
          .withSecret("s3cret".getBytes())
          .withTimeouts(Duration.ofSeconds(2), Duration.ofSeconds(2)))) {
        assertThatThrownBy(() -> TyrClient.await(plain.ping()))
            .isInstanceOf(TyrException.class);
      }
    }
  }

  /** A self-signed key pair for 127.0.0.1 in a PKCS12 store, and its certificate as PEM. */
  private static Path keypair(String alias, Path p12, Path pem) throws Exception {
    return SelfSigned.keypair(alias, p12, pem, "ip:127.0.0.1,dns:localhost");
  }
}
