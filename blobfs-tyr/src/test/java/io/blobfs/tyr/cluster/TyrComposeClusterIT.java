package io.blobfs.tyr.cluster;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.fail;

import io.blobfs.store.StoreOptions;
import io.blobfs.tyr.blobfs.TyrBlobStoreProvider;
import io.blobfs.tyr.blobfs.TyrClusterBlobStore;
import io.blobfs.tyr.ring.Member;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code docker/tyr-cluster.yml} starts a working 3-node Týr cluster (R = 2) from the image
 * {@code scripts/docker/build-images.sh tyr} builds out of this build's server jar: a client
 * given the three nodes stores 2,000 keys each on exactly its two computed owners, and
 * reads them back. Runs where a Docker engine answers (as root, ensure-docker.sh starts
 * one); elsewhere it is skipped saying why, and under {@code CI=true} it fails instead.
 */
class TyrComposeClusterIT {
  @TempDir
  Path dir;

  @Test
  void composeStartsAThreeNodeClusterThatPlacesEveryKeyOnItsOwners() throws Exception {
    Path root = Hosts.repoRoot();
    Run docker = run(root, dir.resolve("ensure-docker.log"), 5, Map.of(),
        "bash", "scripts/docker/ensure-docker.sh");
    if (docker.exit != 0) {
      String why = "no Docker engine: " + docker.output.strip();
      if ("true".equals(System.getenv("CI"))) {
        fail(why + " (CI=true: the compose cluster must be tested)");
      }
      Assumptions.abort(why);
    }
    Run image = run(root, dir.resolve("build-images.log"), 20,
        Map.of("BLOBFS_TYR_JAR", serverJar().toAbsolutePath().toString()),
        "bash", "scripts/docker/build-images.sh", "tyr");
    assertEquals(0, image.exit, "build-images.sh tyr: " + image.output);

    List<String> compose = composeCommand(root);
    int base = freeTriple();
    Map<String, String> env = Map.of("TYR_PORT_1", Integer.toString(base),
        "TYR_PORT_2", Integer.toString(base + 1), "TYR_PORT_3", Integer.toString(base + 2),
        "TYR_REPLICATION", "2");
    List<String> project = new ArrayList<>(compose);
    project.addAll(List.of("-f", "docker/tyr-cluster.yml", "-p",
        "blobfs-tyr-it-" + ProcessHandle.current().pid()));
    try {
      Run up = run(root, dir.resolve("up.log"), 3, env, with(project, "up", "-d"));
      assertEquals(0, up.exit, "compose up: " + up.output);
      List<Member> members = new ArrayList<>();
      for (int i = 0; i < 3; i++) {
        members.add(new Member("127.0.0.1", base + i));
        awaitListening(base + i, root, project, env);
      }
      String nodes = "127.0.0.1:" + base + ",127.0.0.1:" + (base + 1) + ",127.0.0.1:" + (base + 2);
      try (TyrClusterBlobStore store = (TyrClusterBlobStore) new TyrBlobStoreProvider().open(
          "compose", new StoreOptions("fs.blob.store.compose.", Map.of("nodes", nodes)))) {
        assertEquals(members.size(), store.ring().members().size());
        TyrClusterPlacementIT.assertPlacement(members, false, store, 2_000);
      }
    } finally {
      Run down = run(root, dir.resolve("down.log"), 3, env, with(project, "down", "-v"));
      System.out.println("compose down: exit " + down.exit);
    }
  }

  private static List<String> with(List<String> cmd, String... more) {
    List<String> all = new ArrayList<>(cmd);
    all.addAll(List.of(more));
    return all;
  }

  /**
   * Three consecutive ports that are free now, below Linux's ephemeral range (32768 and up):
   * the containers bind them only after the images start, and a port in that range can be
   * taken meanwhile by any outgoing connection on the machine (CI saw a node fail with
   * "Address already in use" on a port of 31,000-40,000).
   */
  private static int freeTriple() throws IOException {
    for (int attempt = 0; attempt < 50; attempt++) {
      int base = 20_000 + ThreadLocalRandom.current().nextInt(4_000) * 3;
      if (free(base) && free(base + 1) && free(base + 2)) {
        return base;
      }
    }
    throw new IOException("no three consecutive free ports in 20000-32000 after 50 tries");
  }

  private static boolean free(int port) {
    try (ServerSocket s = new ServerSocket()) {
      s.bind(new InetSocketAddress("127.0.0.1", port));
      return true;
    } catch (IOException taken) {
      return false;
    }
  }

  /** {@code docker compose} (the plugin) if the CLI has it, else {@code docker-compose}. */
  private static List<String> composeCommand(Path root) throws Exception {
    Run plugin = run(root, Files.createTempFile("compose", ".log"), 1, Map.of(),
        "docker", "compose", "version");
    if (plugin.exit == 0) {
      return List.of("docker", "compose");
    }
    return List.of("docker-compose");
  }

  /** The node answers TCP within 60 s, else the test fails with the containers' logs. */
  private void awaitListening(int port, Path root, List<String> project, Map<String, String> env)
      throws Exception {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
    while (System.nanoTime() < deadline) {
      try (Socket s = new Socket()) {
        s.connect(new InetSocketAddress("127.0.0.1", port), 1000);
        return;
      } catch (IOException notYet) {
        Thread.sleep(250);
      }
    }
    Run logs = run(root, dir.resolve("logs.log"), 1, env, with(project, "logs"));
    fail("node on port " + port + " did not listen within 60 s; compose logs:\n" + logs.output);
  }

  /** The server jar {@code package} made (failsafe runs after it). */
  private static Path serverJar() throws IOException {
    try (Stream<Path> s = Files.list(Path.of("target"))) {
      return s.filter(p -> p.getFileName().toString().matches("blobfs-tyr-.*-server\\.jar"))
          .findFirst().orElseThrow(() -> new IOException(
              "no blobfs-tyr-*-server.jar in target/: run at least the package phase"));
    }
  }

  private record Run(int exit, String output) {}

  private static Run run(Path root, Path log, int minutes, Map<String, String> env,
      List<String> cmd) throws IOException, InterruptedException {
    ProcessBuilder pb = new ProcessBuilder(cmd).directory(root.toFile())
        .redirectErrorStream(true).redirectOutput(log.toFile());
    pb.environment().putAll(env);
    Process p = pb.start();
    if (!p.waitFor(minutes, TimeUnit.MINUTES)) {
      p.destroyForcibly();
      return new Run(-1, "timed out after " + minutes + " min: " + cmd + "\n"
          + Files.readString(log, StandardCharsets.UTF_8));
    }
    return new Run(p.exitValue(), Files.readString(log, StandardCharsets.UTF_8));
  }

  private static Run run(Path root, Path log, int minutes, Map<String, String> env,
      String... cmd) throws IOException, InterruptedException {
    return run(root, log, minutes, env, List.of(cmd));
  }
}
