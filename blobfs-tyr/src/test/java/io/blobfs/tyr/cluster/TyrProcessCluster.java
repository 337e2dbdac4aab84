package io.blobfs.tyr.cluster;

import io.blobfs.tyr.ring.Member;
import io.blobfs.tyr.server.TyrServerProcess;
import io.blobfs.tyr.api.ReadResult;
import io.blobfs.tyr.client.ClientConfig;
import io.blobfs.tyr.client.TyrClient;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ThreadLocalRandom;

/**
 * Test fixture: a Týr cluster of N server processes, each on a host of
 * {@code scripts/hosts/hosts.sh} (its own network namespace and address where namespaces
 * work; a loopback address of this machine otherwise, said on stderr). The nodes share a
 * ring file, so a test can move them to a new ring ({@link #writeRing}).
 */
public final class TyrProcessCluster implements AutoCloseable {
  private final Hosts hosts;
  private final Path ringFile;
  private final List<Member> members;
  private final List<TyrServerProcess> nodes = new ArrayList<>();
  private Path dir;
  private int nsPort;
  private List<String> extraArgs = List.of();
  private java.util.function.IntFunction<List<String>> perNode = i -> List.of();

  private TyrProcessCluster(Hosts hosts, Path ringFile, List<Member> members) {
    this.hosts = hosts;
    this.ringFile = ringFile;
    this.members = new ArrayList<>(members);
  }

  public static TyrProcessCluster start(Path dir, int n, int vnodes, int replication)
      throws IOException, InterruptedException {
    return start(dir, n, vnodes, replication, new String[0]);
  }

  /** With {@code extraArgs} ({@code --option value} pairs) given to every node. */
  public static TyrProcessCluster start(Path dir, int n, int vnodes, int replication,
      String... extraArgs) throws IOException, InterruptedException {
    return startOn(Hosts.up(n), dir, n, vnodes, replication, extraArgs);
  }

  /**
   * On hosts 1..n of {@code hosts}, which may have more: several clusters can share the
   * hosts (a benchmark's 1-node and 3-node clusters), each on a port of its own.
   */
  public static TyrProcessCluster startOn(Hosts hosts, Path dir, int n, int vnodes,
      int replication, String... extraArgs) throws IOException, InterruptedException {
    return startOn(hosts, dir, n, vnodes, replication, i -> List.of(), extraArgs);
  }

  /** As above, node {@code i} (1..n) also given {@code perNode.apply(i)} (its own files). */
  public static TyrProcessCluster startOn(Hosts hosts, Path dir, int n, int vnodes,
      int replication, java.util.function.IntFunction<List<String>> perNode,
      String... extraArgs) throws IOException, InterruptedException {
    List<Member> members = new ArrayList<>();
    // A port of this run's own: a server left behind by a crashed run cannot answer for it.
    // BLOBFS_TYR_PORT_BASE keeps it within [base, base + 100) (helpers sharing a machine).
    String base = System.getenv("BLOBFS_TYR_PORT_BASE");
    int nsPort = base != null && !base.isBlank()
        ? Integer.parseInt(base.trim()) + ThreadLocalRandom.current().nextInt(100)
        : 20_000 + ThreadLocalRandom.current().nextInt(10_000);
    for (int i = 1; i <= n; i++) {
      members.add(new Member(hosts.address(i), hosts.namespaces() ? nsPort : freePort()));
    }
    TyrProcessCluster c = new TyrProcessCluster(hosts, dir.resolve("ring.properties"),
        List.copyOf(members));
    c.dir = dir;
    c.nsPort = nsPort;
    c.extraArgs = List.of(extraArgs);
    c.perNode = perNode;
    c.writeRing(1, vnodes, replication);
    try {
      for (int i = 1; i <= n; i++) {
        c.startNode(i, members.get(i - 1), false);
      }
    } catch (IOException | RuntimeException e) {
      c.close();
      throw e;
    }
    return c;
  }

  private TyrServerProcess startNode(int i, Member m, boolean joining) throws IOException {
    List<String> launcher = hosts.namespaces() ? hosts.command(i, List.of()) : List.of();
    List<String> args = new ArrayList<>(List.of("--sync", "interval",
        "--cluster-file", ringFile.toString(), "--cluster-self", m.id()));
    if (joining) {
      args.addAll(List.of("--cluster-join", "true"));
    }
    args.addAll(extraArgs);
    args.addAll(perNode.apply(i));
    TyrServerProcess p = new TyrServerProcess(Files.createDirectories(
        dir.resolve("node" + i)), launcher, m.host(), m.port(), args.toArray(new String[0]));
    nodes.add(p);
    p.start();
    return p;
  }

  /**
   * Starts a node on the next host that is not a member yet: it follows the ring file and
   * serves nothing until the monitor adds it ({@code ClusterMonitor --join}). Its index is
   * {@code members().size() - 1} from then on.
   */
  public Member startJoiner() throws IOException {
    int i = nodes.size() + 1;
    Member m = new Member(hosts.address(i), hosts.namespaces() ? nsPort : freePort());
    startNode(i, m, true);
    members.add(m);
    return m;
  }

  private static int freePort() throws IOException {
    return io.blobfs.tyr.TestPorts.free();
  }

  /** Rewrites the ring file the nodes follow (they load it within about a second). */
  public void writeRing(long epoch, int vnodes, int replication) throws IOException {
    Path tmp = ringFile.resolveSibling("ring.tmp");
    Files.writeString(tmp, "nodes=" + nodesOption() + "\nepoch=" + epoch + "\nvnodes="
        + vnodes + "\nreplication=" + replication + "\n");
    Files.move(tmp, ringFile, java.nio.file.StandardCopyOption.REPLACE_EXISTING,
        java.nio.file.StandardCopyOption.ATOMIC_MOVE);
  }

  /** The ring file every node follows. */
  public Path ringFile() {
    return ringFile;
  }

  /** The value of {@code fs.blob.store.NAME.nodes} for this cluster. */
  public String nodesOption() {
    StringBuilder b = new StringBuilder();
    for (Member m : members) {
      b.append(b.length() == 0 ? "" : ",").append(m.id());
    }
    return b.toString();
  }

  /** The members started so far (a joiner's from {@link #startJoiner} on). */
  public List<Member> members() {
    return List.copyOf(members);
  }

  public TyrServerProcess node(int i) {
    return nodes.get(i);
  }

  /** Cuts node {@code i} (0-based) off the network, or joins it again (namespaces only). */
  public void setLink(int i, boolean up) throws IOException, InterruptedException {
    hosts.setLink(i + 1, up);
  }

  /** SIGSTOP to node {@code i} (0-based): frozen, its connections open and silent. */
  public void freeze(int i) throws IOException, InterruptedException {
    signal("STOP", i);
  }

  /** SIGCONT to node {@code i}: it runs on from where it was frozen. */
  public void thaw(int i) throws IOException, InterruptedException {
    signal("CONT", i);
  }

  private void signal(String sig, int i) throws IOException, InterruptedException {
    Process p = new ProcessBuilder("kill", "-" + sig, Long.toString(nodes.get(i).pid()))
        .inheritIO().start();
    if (p.waitFor() != 0) {
      throw new IOException("kill -" + sig + " of node " + i + " failed");
    }
  }

  /** Whether the nodes run on hosts of their own (namespaces) rather than loopback. */
  public boolean onOwnHosts() {
    return hosts.namespaces();
  }

  /**
   * The blob as one replica holds it (a request routed to that node only), waiting for
   * the node to load the ring file's epoch (it checks the file every second).
   */
  public static byte[] readOn(Member m, String key, long epoch) throws Exception {
    try (TyrClient raw = new TyrClient(ClientConfig.of(m.host(), m.port()))) {
      raw.routeUnder(() -> epoch);
      for (int attempt = 0; ; attempt++) {
        try {
          ReadResult r = TyrClient.await(raw.read(key, 0, 1000));
          byte[] b = new byte[r.data().remaining()];
          r.data().get(b);
          return b;
        } catch (io.blobfs.tyr.ring.WrongEpochException behind) {
          // Behind the ring, or just UP again and still taking its keys back from the
          // members that stood in for it (Membership.handOver; under a second once they
          // have the ring): both pass.
          if (attempt >= 100 || (behind.ring().epoch() >= epoch && !(behind instanceof io.blobfs.tyr.ring.HandingOverException))) {
            throw behind;
          }
          Thread.sleep(100);
        }
      }
    }
  }

  @Override
  public void close() {
    for (TyrServerProcess p : nodes) {
      p.close();
    }
  }
}
