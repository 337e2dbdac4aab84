package io.blobfs.rados;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.HashMap;
import java.util.Map;
import org.testcontainers.DockerClientFactory;
import org.testcontainers.containers.GenericContainer;
import org.testcontainers.containers.wait.strategy.Wait;
import org.testcontainers.images.builder.ImageFromDockerfile;

/**
 * The test cluster in a container built from {@code docker/Dockerfile}, for machines with
 * Docker: host networking (clients reach 127.0.0.1) and a bind mount through which the
 * conf and keyrings come out. The container lives as long as the test JVM.
 */
final class DockerCeph {
  private static final String MOUNT = "/var/lib/blobfs-ceph";

  private DockerCeph() {}

  /** Docker is wanted (BLOBFS_CEPH_DOCKER=auto|always|never, default auto) and present. */
  static boolean wanted() {
    String mode = System.getenv().getOrDefault("BLOBFS_CEPH_DOCKER", "auto");
    if (mode.equals("never")) {
      return false;
    }
    boolean present;
    try {
      present = DockerClientFactory.instance().isDockerAvailable();
    } catch (RuntimeException | LinkageError e) {
      present = false;
    }
    if (!present && mode.equals("always")) {
      throw new IllegalStateException("BLOBFS_CEPH_DOCKER=always but no Docker engine answers");
    }
    return present;
  }

  @SuppressWarnings("resource") // lives until the JVM ends; Testcontainers reaps it
  static Map<String, String> start(String layout, String auth) throws IOException {
    Path root = CephTestCluster.repoRoot();
    Path hostDir = Files.createTempDirectory("blobfs-ceph-docker");
    GenericContainer<?> ceph = new GenericContainer<>(new ImageFromDockerfile("blobfs-ceph", false)
        .withFileFromPath("scripts/ceph", root.resolve("scripts/ceph"))
        .withFileFromPath("docker", root.resolve("docker"))
        .withDockerfile(root.resolve("docker/Dockerfile")))
        .withNetworkMode("host")
        .withPrivilegedMode(true)
        .withEnv("BLOBFS_CEPH_LAYOUT", layout)
        .withEnv("BLOBFS_CEPH_AUTH", auth)
        .withFileSystemBind(hostDir.toString(), MOUNT)
        .waitingFor(Wait.forLogMessage(".*BLOBFS CEPH READY.*", 1)
            .withStartupTimeout(Duration.ofMinutes(8)));
    ceph.start();
    Path env = hostDir.resolve(layout + "-" + auth).resolve("env.sh");
    Map<String, String> vars = new HashMap<>();
    for (String line : Files.readAllLines(env, StandardCharsets.UTF_8)) {
      CephTestCluster.parseExport(line, vars);
    }
    vars.replaceAll((k, v) -> v.replace(MOUNT, hostDir.toString()));
    return vars;
  }
}
