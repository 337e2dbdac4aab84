package io.blobfs.tyr;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ThreadLocalRandom;

/**
 * Ports for test servers that are named in a ring before they bind. Two things made the
 * old {@code new ServerSocket(0)} pick flaky: the kernel may hand the same just-closed
 * port to the next pick (two members on one port: "a member is listed twice"), and a
 * port from the ephemeral range (32768-60999) can be taken by any outgoing connection
 * before the server binds it. So ports come from below that range, are checked bindable,
 * and are never handed out twice in one JVM.
 */
public final class TestPorts {
  private static final Set<Integer> GIVEN = ConcurrentHashMap.newKeySet();

  private TestPorts() {}

  public static int free() throws IOException {
    for (int attempt = 0; attempt < 200; attempt++) {
      int port = 20_000 + ThreadLocalRandom.current().nextInt(12_000);
      if (GIVEN.add(port)) {
        if (bindable(port)) {
          return port;
        }
      }
    }
    throw new IOException("no free port in 20000-32000 after 200 tries");
  }

  private static boolean bindable(int port) {
    try (ServerSocket s = new ServerSocket()) {
      s.bind(new InetSocketAddress("127.0.0.1", port));
      return true;
    } catch (IOException taken) {
      return false;
    }
  }
}
