package io.blobfs.tyr.server;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * Test fixture: a Týr server in a process of its own, on this JVM's classpath: what tests, the
 * benchmark and tools use to run a real server beside them and to kill it with SIGKILL
 * and restart it on the same data.
 */
public final class TyrServerProcess implements AutoCloseable {
  private final Path dataDir;
  private final List<String> extraArgs;
  /** What runs the JVM (e.g. {@code hosts.sh exec I}: on another host); empty: here. */
  private final List<String> launcher;
  private final String bind;
  /** Put before this JVM's classpath: another build of the server (a benchmark's "before"). */
  private String classpathFirst;
  private Process process;
  private int port;
  private final StringBuilder output = new StringBuilder();

  public TyrServerProcess(Path dataDir, String... extraArgs) {
    this(dataDir, List.of(), "127.0.0.1", 0, extraArgs);
  }

  /**
   * A server started through {@code launcher} (a command prefix, for a server on another
   * host; empty: here), listening on {@code bind:port} (port 0: any free one).
   */
  public TyrServerProcess(Path dataDir, List<String> launcher, String bind, int port,
      String... extraArgs) {
    this.dataDir = dataDir;
    this.extraArgs = List.of(extraArgs);
    this.launcher = List.copyOf(launcher);
    this.bind = bind;
    this.port = port;
  }

  /**
   * Runs the server with {@code classpath} (another build's jars, path-separated) ahead of
   * this JVM's classpath, whose classes it then shadows; for a side-by-side benchmark of
   * two builds.
   */
  public TyrServerProcess classpathFirst(String classpath) {
    this.classpathFirst = classpath;
    return this;
  }

  /** Starts the process (again, after a kill or stop, on the same data and port if known). */
  public synchronized TyrServerProcess start() throws IOException {
    List<String> cmd = new ArrayList<>(launcher);
    cmd.addAll(List.of(
        Path.of(System.getProperty("java.home"), "bin", "java").toString(),
        "-Xmx1g", "-cp", (classpathFirst == null ? "" : classpathFirst + java.io.File.pathSeparator)
            + System.getProperty("java.class.path"),
        TyrServerMain.class.getName(), "--data-dir", dataDir.toString(),
        "--bind", bind, "--port", Integer.toString(port)));
    cmd.addAll(extraArgs);
    process = new ProcessBuilder(cmd).redirectErrorStream(true).start();
    CompletableFuture<Integer> ready = new CompletableFuture<>();
    Process p = process;
    Thread reader = new Thread(() -> {
      try (BufferedReader r = new BufferedReader(new InputStreamReader(p.getInputStream(),
          StandardCharsets.UTF_8))) {
        for (String line; (line = r.readLine()) != null; ) {
          synchronized (output) {
            output.append(line).append('\n');
          }
          if (line.startsWith(TyrServerMain.READY)) {
            ready.complete(Integer.parseInt(line.substring(line.lastIndexOf(':') + 1)));
          }
        }
      } catch (IOException e) {
        ready.completeExceptionally(e);
      }
      ready.completeExceptionally(new IOException("Týr server exited before it was ready"));
    }, "tyr-test-server-output");
    reader.setDaemon(true);
    reader.start();
    try {
      port = ready.get(60, TimeUnit.SECONDS);
    } catch (InterruptedException | java.util.concurrent.ExecutionException
        | TimeoutException e) {
      process.destroyForcibly();
      throw new IOException("Týr server did not start: " + e + "\n" + output(), e);
    }
    return this;
  }

  public int port() {
    return port;
  }

  public String address() {
    return bind + ":" + port;
  }

  public Path dataDir() {
    return dataDir;
  }

  public long pid() {
    return process.pid();
  }

  /** SIGKILL: no shutdown hook runs, nothing is flushed by the server. */
  public void kill() throws InterruptedException {
    process.destroyForcibly();
    process.waitFor(30, TimeUnit.SECONDS);
  }

  public String output() {
    synchronized (output) {
      return output.toString();
    }
  }

  /** SIGTERM, then SIGKILL if it does not exit in time. */
  @Override
  public synchronized void close() {
    if (process != null && process.isAlive()) {
      process.destroy();
      try {
        if (!process.waitFor(Duration.ofSeconds(20).toSeconds(), TimeUnit.SECONDS)) {
          process.destroyForcibly();
        }
      } catch (InterruptedException e) {
        process.destroyForcibly();
        Thread.currentThread().interrupt();
      }
    }
  }
}
