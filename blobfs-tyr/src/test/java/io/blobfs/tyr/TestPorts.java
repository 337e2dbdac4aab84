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
 * and are never handed out twice in one JVM; within a given {@link #range} (helpers sharing
 * a host), round robin instead, each port again only after every other one.
 */
public final class TestPorts {
  private static final Set<Integer> GIVEN = ConcurrentHashMap.newKeySet();

  private TestPorts() {}

  /**
   * A range to take ports from instead, {@code low-high} inclusive, from the system
   * property {@code blobfs.tyr.test-ports} or the environment's {@code BLOBFS_TYR_TEST_PORTS}:
   * runs that share a host are each given their own range.
   */
  static int[] range() {
    String r = System.getProperty("blobfs.tyr.test-ports",
        System.getenv("BLOBFS_TYR_TEST_PORTS"));
    if (r == null || r.isBlank()) {
      return null;
    }
    String[] lh = r.strip().split("-");
    try {
      int[] range = {Integer.parseInt(lh[0].strip()), Integer.parseInt(lh[1].strip())};
      if (lh.length == 2 && range[0] > 0 && range[0] <= range[1] && range[1] < 65536) {
        return range;
      }
    } catch (NumberFormatException | ArrayIndexOutOfBoundsException e) {
      // named below
    }
    throw new IllegalArgumentException("blobfs.tyr.test-ports / BLOBFS_TYR_TEST_PORTS: not"
        + " low-high: " + r);
  }

  /** Where the next pick in {@link #range} starts: round robin over it. */
  private static final java.util.concurrent.atomic.AtomicInteger NEXT =
      new java.util.concurrent.atomic.AtomicInteger();

  public static int free() throws IOException {
    int[] range = range();
    if (range != null) {
      // A small range (100 ports) is used again and again over a run: round robin, so a
      // port comes back only after every other one was handed out (a test's members are
      // still distinct), and only if bindable (not held by a server still running).
      int n = range[1] - range[0] + 1;
      for (int i = 0; i < n; i++) {
        int port = range[0] + Math.floorMod(NEXT.getAndIncrement(), n);
        if (bindable(port)) {
          return port;
        }
      }
      throw new IOException("no free port left in " + range[0] + "-" + range[1]);
    }
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
