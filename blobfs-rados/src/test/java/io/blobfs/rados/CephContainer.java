package io.blobfs.rados;

import com.github.dockerjava.api.exception.NotFoundException;
import io.blobfs.rados.DockerCeph.Unavailable;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.testcontainers.DockerClientFactory;
import org.testcontainers.containers.GenericContainer;
import org.testcontainers.containers.wait.strategy.Wait;
import org.testcontainers.utility.DockerImageName;

/**
 * The test cluster in a container of the local image {@code blobfs/ceph:local} (built by
 * {@code scripts/docker/build-images.sh}), started through Testcontainers: host networking
 * (clients reach 127.0.0.1), and a bind mount at the same path inside and out, so that the
 * conf and keyrings the cluster writes name paths that hold on the host too.
 */
final class CephContainer {
  static final String IMAGE = "blobfs/ceph:local";
  private static final Duration ENGINE_CHECK = Duration.ofSeconds(20);
  private static final Duration READY = Duration.ofMinutes(2);

  private CephContainer() {}

  // The container lives until the shutdown hook stops it; withFileSystemBind is deprecated
  // in favour of copying files in, but here the container writes the cluster's files out.
  @SuppressWarnings({"resource", "deprecation"})
  static Map<String, String> start(String layout, String auth)
      throws IOException, Unavailable {
    for (String var : new String[] {"TESTCONTAINERS_RYUK_DISABLED", "TESTCONTAINERS_CHECKS_DISABLE"}) {
      // Testcontainers reads these from the environment or ~/.testcontainers.properties
      // only, not from the classpath; unset, it runs helper containers whose images it
      // would pull (testcontainers/ryuk, alpine), waiting minutes on a registry.
      if (!"true".equals(System.getenv(var))) {
        throw new Unavailable(var + "=true is not set (blobfs-rados/pom.xml sets it): "
            + "Testcontainers would try to pull a helper image");
      }
    }
    checkEngine();
    checkImage();
    Path hostDir = Files.createTempDirectory("blobfs-ceph-docker");
    GenericContainer<?> ceph = new GenericContainer<>(DockerImageName.parse(IMAGE))
        .withImagePullPolicy(image -> false) // no registry is reachable: a pull only waits
        .withNetworkMode("host")
        .withEnv("BLOBFS_CEPH_LAYOUT", layout)
        .withEnv("BLOBFS_CEPH_AUTH", auth)
        .withEnv("BLOBFS_CEPH_ROOT", hostDir.toString())
        .withFileSystemBind(hostDir.toString(), hostDir.toString())
        .waitingFor(Wait.forLogMessage(".*BLOBFS CEPH READY.*", 1).withStartupTimeout(READY));
    long t0 = System.nanoTime();
    try {
      ceph.start();
    } catch (RuntimeException e) {
      String logs = tail(ceph);
      ceph.stop();
      removeTree(hostDir);
      throw new Unavailable("container of " + IMAGE + " did not start and print BLOBFS CEPH READY"
          + " (waited at most " + READY.toSeconds() + " s): " + causes(e) + logs);
    }
    // Ryuk (the reaper container) is off, so nothing outside this JVM removes the container.
    Runtime.getRuntime().addShutdownHook(new Thread(() -> {
      try {
        ceph.stop();
      } finally {
        removeTree(hostDir);
      }
    }, "blobfs-ceph-docker-stop"));
    System.out.printf("[blobfs-ceph] Testcontainers started container %s from image %s (%s),"
        + " cluster %s-%s ready in %d s%n", ceph.getContainerId().substring(0, 12), IMAGE,
        ceph.getContainerInfo().getImageId(), layout, auth,
        TimeUnit.NANOSECONDS.toSeconds(System.nanoTime() - t0));
    Map<String, String> vars = new HashMap<>();
    for (String line : Files.readAllLines(hostDir.resolve(layout + "-" + auth).resolve("env.sh"),
        StandardCharsets.UTF_8)) {
      CephTestCluster.parseExport(line, vars);
    }
    return vars;
  }

  /**
   * Fails fast without an engine: no socket takes milliseconds, a socket nobody answers
   * at most {@link #ENGINE_CHECK} (Testcontainers' own probing has no overall bound).
   */
  private static void checkEngine() throws Unavailable {
    String host = System.getenv("DOCKER_HOST");
    if ((host == null || host.isEmpty()) && !Files.exists(Path.of("/var/run/docker.sock"))) {
      throw new Unavailable("no Docker engine (/var/run/docker.sock does not exist;"
          + " scripts/docker/ensure-docker.sh starts one)");
    }
    var probe = Executors.newSingleThreadExecutor(r -> {
      Thread t = new Thread(r, "docker-probe");
      t.setDaemon(true);
      return t;
    });
    Future<Boolean> answers = probe.submit(() -> DockerClientFactory.instance().isDockerAvailable());
    try {
      if (!answers.get(ENGINE_CHECK.toSeconds(), TimeUnit.SECONDS)) {
        throw new Unavailable("no Docker engine answers"
            + (host == null ? " on /var/run/docker.sock" : " at DOCKER_HOST=" + host));
      }
    } catch (TimeoutException e) {
      throw new Unavailable("the Docker engine did not answer within "
          + ENGINE_CHECK.toSeconds() + " s");
    } catch (ExecutionException e) {
      throw new Unavailable("Docker engine check failed: " + causes(e.getCause()));
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new Unavailable("interrupted while checking for a Docker engine");
    } finally {
      probe.shutdownNow();
    }
  }

  private static void checkImage() throws Unavailable {
    try {
      DockerClientFactory.instance().client().inspectImageCmd(IMAGE).exec();
    } catch (NotFoundException e) {
      throw new Unavailable("image " + IMAGE + " is not built here (nothing is pulled;"
          + " scripts/docker/build-images.sh ceph builds it)");
    }
  }

  /** The messages of e and its causes: Testcontainers' own says only "startup failed". */
  private static String causes(Throwable e) {
    StringBuilder b = new StringBuilder();
    for (Throwable t = e; t != null; t = t.getCause()) {
      b.append(b.length() == 0 ? "" : " <- ").append(String.valueOf(t.getMessage()).strip());
    }
    return b.toString();
  }

  private static String tail(GenericContainer<?> c) {
    try {
      String logs = c.getLogs();
      return logs.isEmpty() ? "" : "; its log ends:\n"
          + logs.substring(Math.max(0, logs.length() - 2000));
    } catch (RuntimeException e) {
      return "";
    }
  }

  private static void removeTree(Path dir) {
    try {
      new ProcessBuilder("rm", "-rf", dir.toString()).start().waitFor(60, TimeUnit.SECONDS);
    } catch (IOException e) {
      // best effort: the directory is under the temp dir
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }
}
