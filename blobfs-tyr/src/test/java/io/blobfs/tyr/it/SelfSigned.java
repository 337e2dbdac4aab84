package io.blobfs.tyr.it;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * Test fixture: self-signed key pairs made by the JDK's keytool (a child process, so for
 * integration tests), in a PKCS12 store whose password is {@code changeit}, with the
 * certificate also exported as PEM for clients to trust.
 */
public final class SelfSigned {
  public static final String PASSWORD = "changeit";

  private SelfSigned() {}

  /**
   * A key pair whose certificate names {@code san} (keytool's syntax, e.g.
   * {@code ip:127.0.0.1,dns:localhost}); returns {@code p12}, and writes {@code pem}.
   */
  public static Path keypair(String alias, Path p12, Path pem, String san)
      throws IOException, InterruptedException {
    String keytool = Path.of(System.getProperty("java.home"), "bin", "keytool").toString();
    run(List.of(keytool, "-genkeypair", "-alias", alias, "-keyalg", "EC", "-groupname",
        "secp256r1", "-dname", "CN=" + alias, "-ext", "san=" + san,
        "-validity", "2", "-keystore", p12.toString(), "-storetype", "PKCS12",
        "-storepass", PASSWORD, "-keypass", PASSWORD));
    run(List.of(keytool, "-exportcert", "-rfc", "-alias", alias, "-keystore", p12.toString(),
        "-storepass", PASSWORD, "-file", pem.toString()));
    return p12;
  }

  private static void run(List<String> command) throws IOException, InterruptedException {
    Process p = new ProcessBuilder(command).redirectErrorStream(true).start();
    String out = new String(p.getInputStream().readAllBytes());
    assertThat(p.waitFor(60, TimeUnit.SECONDS)).isTrue();
    assertThat(p.exitValue()).as(out).isZero();
  }
}
