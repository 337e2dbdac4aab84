package io.blobfs.bench.run;

import java.io.IOException;
import java.io.OutputStream;
import java.net.URISyntaxException;
import java.nio.file.FileVisitResult;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.SimpleFileVisitor;
import java.nio.file.attribute.BasicFileAttributes;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.jar.JarEntry;
import java.util.jar.JarOutputStream;
import org.apache.spark.deploy.SparkSubmit;

/**
 * Submits an application through {@code org.apache.spark.deploy.SparkSubmit} with the
 * arguments a user gives {@code spark-submit}: {@code --master}, {@code --class},
 * {@code --conf K=V}..., the application jar, then the application's arguments.
 *
 * <p>It runs SparkSubmit in this JVM (as the {@code spark-submit} script runs it in its own):
 * in client mode the application's {@code main} runs here, so a store embedded in this JVM
 * serves it and the file systems it opens are the cached instances whose counters the caller
 * reads. SparkSubmit copies the application's configuration into system properties; they are
 * put back as they were after each submission, so one run's settings cannot leak into the
 * next. An application that throws makes {@link #submit} throw.
 */
public final class SparkSubmitRunner {
  private SparkSubmitRunner() {}

  /** The spark-submit argument list of one application. */
  public static List<String> arguments(String master, Map<String, String> conf,
      String mainClass, Path appJar, List<String> appArgs) {
    List<String> a = new ArrayList<>(List.of("--master", master, "--class", mainClass));
    conf.forEach((k, v) -> {
      a.add("--conf");
      a.add(k + "=" + v);
    });
    a.add(appJar.toString());
    a.addAll(appArgs);
    return a;
  }

  /** Runs {@code SparkSubmit.main(arguments)} here and restores the system properties. */
  public static void submit(List<String> arguments) {
    Properties saved = (Properties) System.getProperties().clone();
    try {
      SparkSubmit.main(arguments.toArray(new String[0]));
    } finally {
      System.setProperties(saved);
    }
  }

  /**
   * The jar holding the workloads, as spark-submit needs one: this class's own jar, or, when
   * it runs from a classes directory (a reactor build), a jar made from that directory.
   */
  public static Path appJar(Path tmpDir) throws IOException {
    Path where;
    try {
      where = Path.of(SparkSubmitRunner.class.getProtectionDomain().getCodeSource()
          .getLocation().toURI());
    } catch (URISyntaxException e) {
      throw new IOException("cannot locate the workloads' classes", e);
    }
    if (Files.isRegularFile(where)) {
      return where;
    }
    Files.createDirectories(tmpDir);
    Path jar = tmpDir.resolve("blobfs-workloads.jar");
    try (OutputStream out = Files.newOutputStream(jar);
        JarOutputStream j = new JarOutputStream(out)) {
      Files.walkFileTree(where, new SimpleFileVisitor<>() {
        @Override
        public FileVisitResult visitFile(Path file, BasicFileAttributes attrs) throws IOException {
          j.putNextEntry(new JarEntry(where.relativize(file).toString().replace('\\', '/')));
          Files.copy(file, j);
          j.closeEntry();
          return FileVisitResult.CONTINUE;
        }
      });
    }
    return jar;
  }
}
