package io.blobfs.tyr.server;

import io.blobfs.store.StoreOptions;
import java.io.IOException;
import java.io.Reader;
import java.net.InetSocketAddress;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.Map;
import java.util.Properties;

/**
 * The standalone server:
 *
 * <pre>
 *   java -cp blobfs-tyr.jar:... io.blobfs.tyr.server.TyrServerMain \
 *       [--config server.properties] [--data-dir DIR] [--port N] [--sync always] ...
 * </pre>
 *
 * Every key of {@link ServerConfig} is a flag ({@code --key value}) or a line of the
 * properties file; flags win. Prints {@code TYR-SERVER LISTENING host:port} once ready,
 * for scripts and tests to wait on; SIGTERM closes the log cleanly (SIGKILL is safe too:
 * recovery replays the log).
 */
public final class TyrServerMain {
  public static final String READY = "TYR-SERVER LISTENING ";

  private TyrServerMain() {}

  public static void main(String[] args) throws Exception {
    ServerConfig config;
    Membership membership;
    try {
      StoreOptions options = new StoreOptions(parseArgs(args), k -> "--" + k);
      config = ServerConfig.parse(options, System.getenv("TYR_SECRET"));
      membership = Membership.fromOptions(options, config.bind(), config.port());
      config.checkPeerTls(membership != null);
    } catch (IllegalArgumentException e) {
      System.err.println("tyr-server: " + e.getMessage());
      System.exit(2);
      return;
    }
    TyrServer server;
    try {
      server = TyrServer.start(config, membership);
    } catch (io.blobfs.tyr.ring.OlderRingException
        | Membership.CorruptEpochRecordException e) {
      // Its ring file is older than a ring it served under (issue 13), or its record of
      // that is unreadable: it must not serve; the message names the way out.
      System.err.println("tyr-server: " + e.getMessage());
      System.exit(2);
      return;
    }
    Runtime.getRuntime().addShutdownHook(new Thread(() -> {
      try {
        server.close();
      } catch (IOException e) {
        System.err.println("tyr-server: close failed: " + e);
      }
    }, "tyr-shutdown"));
    System.out.println(READY + ((InetSocketAddress) server.address()).getHostString() + ":"
        + server.port());
    System.out.flush();
    Thread.currentThread().join();
  }

  static Map<String, String> parseArgs(String[] args) throws IOException {
    Map<String, String> values = new HashMap<>();
    Map<String, String> flags = new HashMap<>();
    for (int i = 0; i < args.length; i++) {
      if (!args[i].startsWith("--") || i + 1 >= args.length) {
        throw new IllegalArgumentException("expected --key value pairs, got '" + args[i]
            + "'");
      }
      flags.put(args[i].substring(2), args[++i]);
    }
    String file = flags.remove("config");
    if (file != null) {
      Properties p = new Properties();
      try (Reader r = Files.newBufferedReader(Path.of(file))) {
        p.load(r);
      }
      p.stringPropertyNames().forEach(k -> values.put(k, p.getProperty(k)));
    }
    values.putAll(flags);
    return values;
  }
}
