package io.blobfs.e2e;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/**
 * Test fixture shared by the standalone-cluster tests: {@code scripts/hosts/spark-cluster.sh}
 * (a Master, a Worker inside each host's network namespace) run with the build's Spark
 * classpath, and the configuration a driver in the test JVM needs to use it.
 *
 * @param master the master URL spark-cluster.sh printed
 * @param driverHost the address a driver here binds to, reachable from every host
 * @param logDir where the script's stderr goes
 */
record SparkStandaloneCluster(String master, String driverHost, Path logDir) {

  /** {@code spark-cluster.sh up n}; whatever started is stopped again if it fails. */
  static SparkStandaloneCluster up(int n, Path logDir) throws IOException, InterruptedException {
    String out;
    try {
      out = run(logDir, "up", Integer.toString(n));
    } catch (IOException e) {
      run(logDir, "down"); // what did start (a Master, some Workers) must not outlive the test
      throw e;
    }
    String master = null;
    String driver = null;
    for (String line : out.lines().toList()) {
      if (line.startsWith("SPARK MASTER ")) {
        master = line.substring("SPARK MASTER ".length()).trim();
      } else if (line.startsWith("SPARK DRIVER-HOST ")) {
        driver = line.substring("SPARK DRIVER-HOST ".length()).trim();
      }
    }
    assertThat(master).as("master URL printed by spark-cluster.sh up:\n%s", out).isNotNull();
    assertThat(driver).as("driver host printed by spark-cluster.sh up:\n%s", out).isNotNull();
    return new SparkStandaloneCluster(master, driver, logDir);
  }

  void down() throws IOException, InterruptedException {
    run(logDir, "down");
  }

  /**
   * The spark-submit configuration of an application on this cluster: the driver here,
   * BlobFS from the bundle on the executors (as a user's {@code --jars}), every executor
   * registered before the first task is offered, and the event log (uncompressed, one
   * file per application) in {@code events}.
   */
  Map<String, String> applicationConf(Path events) {
    Map<String, String> conf = new LinkedHashMap<>();
    conf.put("spark.ui.enabled", "false");
    conf.put("spark.driver.host", driverHost);
    conf.put("spark.driver.bindAddress", driverHost);
    conf.put("spark.jars", E2eSupport.requiredJar("blobfs.bundle.jar").toString());
    conf.put("spark.executor.memory", "1g");
    // An early offer from one host alone would take tasks off their hosts and measure the
    // start-up instead.
    conf.put("spark.scheduler.minRegisteredResourcesRatio", "1.0");
    conf.put("spark.scheduler.maxRegisteredResourcesWaitingTime", "60s");
    conf.put("spark.eventLog.enabled", "true");
    conf.put("spark.eventLog.compress", "false");
    conf.put("spark.eventLog.rolling.enabled", "false");
    conf.put("spark.eventLog.dir", events.toUri().toString());
    return conf;
  }

  /**
   * The configuration of the file:// reference run in local mode in the test JVM: the same
   * Spark and code, without a cluster application's executor start-ups.
   */
  static Map<String, String> localConf() {
    return Map.of("spark.ui.enabled", "false", "spark.driver.host", "127.0.0.1",
        "spark.driver.bindAddress", "127.0.0.1");
  }

  private static String run(Path logDir, String... args)
      throws IOException, InterruptedException {
    return run(script(), RUN_TIMEOUT, logDir, args);
  }

  /** How long one spark-cluster.sh command may take (up waits for every Worker itself). */
  private static final Duration RUN_TIMEOUT = Duration.ofMinutes(3);

  /**
   * Runs {@code bash script args...}: its stdout is returned, its stderr goes to
   * {@code logDir/spark-cluster-ARGS0.log}. Past {@code timeout} the script and every
   * process it started are killed and an IOException says so.
   */
  static String run(Path script, Duration timeout, Path logDir, String... args)
      throws IOException, InterruptedException {
    List<String> cmd = new ArrayList<>(List.of("bash", script.toString()));
    cmd.addAll(List.of(args));
    Path log = logDir.resolve("spark-cluster-" + args[0] + ".log");
    // stdout goes to a file, not to a pipe read here before waitFor: that read ends only
    // when the script does, so a hung script kept the test waiting and the timeout was
    // never looked at.
    Path out = logDir.resolve("spark-cluster-" + args[0] + ".out");
    ProcessBuilder pb = new ProcessBuilder(cmd).redirectError(log.toFile())
        .redirectOutput(out.toFile());
    pb.environment().put("BLOBFS_SPARK_CLASSPATH",
        "@" + E2eSupport.requiredProperty("blobfs.spark.classpath.file"));
    pb.environment().remove("SPARK_HOME");
    pb.environment().remove("SPARK_LOCAL_IP"); // failsafe's 127.0.0.1 is for local mode
    Process p = pb.start();
    String what = "spark-cluster.sh " + String.join(" ", args);
    if (!p.waitFor(timeout.toMillis(), TimeUnit.MILLISECONDS)) {
      killTree(p);
      throw new IOException(what + " did not finish within " + timeout
          + " (killed, with every process it started):\n" + Files.readString(log));
    }
    if (p.exitValue() != 0) {
      throw new IOException(what + " failed (exit " + p.exitValue() + "):\n"
          + Files.readString(log));
    }
    System.err.print(Files.readString(log));
    return Files.readString(out, StandardCharsets.UTF_8);
  }

  private static void killTree(Process p) throws InterruptedException {
    // The descendants first taken, then killed: once the script is gone, its children
    // are re-parented and no longer found as its descendants.
    List<ProcessHandle> tree = p.descendants().toList();
    p.destroyForcibly();
    tree.forEach(ProcessHandle::destroyForcibly);
    p.waitFor(30, TimeUnit.SECONDS);
  }

  private static Path script() {
    for (Path d = Path.of("").toAbsolutePath(); d != null; d = d.getParent()) {
      if (Files.exists(d.resolve("scripts/hosts/spark-cluster.sh"))) {
        return d.resolve("scripts/hosts/spark-cluster.sh");
      }
    }
    throw new IllegalStateException("scripts/hosts/spark-cluster.sh not found");
  }
}
