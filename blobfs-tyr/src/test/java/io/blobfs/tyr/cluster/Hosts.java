package io.blobfs.tyr.cluster;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * Test fixture: the hosts of {@code scripts/hosts/hosts.sh} (network namespaces, or
 * loopback addresses where there are none). {@link #up} makes N of them and says which
 * kind it got; {@link #command} runs a command on one of them.
 */
public final class Hosts {
  private final String mode;
  private final List<String> names;
  private final List<String> addresses;

  private Hosts(String mode, List<String> names, List<String> addresses) {
    this.mode = mode;
    this.names = names;
    this.addresses = addresses;
  }

  /** Runs {@code hosts.sh up n} (idempotent) and reads the hosts it made. */
  public static Hosts up(int n) throws IOException, InterruptedException {
    String out = run("up", Integer.toString(n));
    Path hostsFile = Path.of(out.strip().lines().reduce((a, b) -> b).orElseThrow());
    String mode = run("status", Integer.toString(n)).lines().findFirst().orElseThrow()
        .substring("mode ".length());
    List<String> names = new ArrayList<>();
    List<String> addresses = new ArrayList<>();
    for (String line : Files.readAllLines(hostsFile)) {
      String[] f = line.trim().split("\\s+");
      if (f.length == 2 && !line.startsWith("#") && !f[1].equals("localhost")) {
        addresses.add(f[0]);
        names.add(f[1]);
      }
    }
    if (names.size() != n) {
      throw new IOException("hosts.sh up " + n + " made " + names + " (" + hostsFile + ")");
    }
    if (!mode.equals("netns")) {
      System.err.println("Hosts: network namespaces unavailable, the " + n
          + " hosts are loopback addresses " + addresses);
    }
    return new Hosts(mode, List.copyOf(names), List.copyOf(addresses));
  }

  /** True when the hosts are namespaces; false for the loopback fallback. */
  public boolean namespaces() {
    return mode.equals("netns");
  }

  public String name(int i) {
    return names.get(i - 1);
  }

  public String address(int i) {
    return addresses.get(i - 1);
  }

  /**
   * Takes host {@code i}'s link down or up (the bridge's end of its veth pair,
   * {@code NAMEv}): cut off, its packets go nowhere and its process runs on. Namespaces
   * only.
   */
  public void setLink(int i, boolean up) throws IOException, InterruptedException {
    if (!namespaces()) {
      throw new IllegalStateException("links exist only between namespace hosts");
    }
    Process p = new ProcessBuilder("ip", "link", "set", name(i) + "v", up ? "up" : "down")
        .inheritIO().start();
    if (p.waitFor() != 0) {
      throw new IOException("ip link set " + name(i) + "v " + (up ? "up" : "down")
          + " failed");
    }
  }

  /** The command that runs {@code cmd} on host {@code i} (1-based). */
  public List<String> command(int i, List<String> cmd) {
    List<String> full = new ArrayList<>(List.of("bash", script().toString(), "exec",
        Integer.toString(i)));
    full.addAll(cmd);
    return full;
  }

  static String run(String... args) throws IOException, InterruptedException {
    List<String> cmd = new ArrayList<>(List.of("bash", script().toString()));
    cmd.addAll(List.of(args));
    Process p = new ProcessBuilder(cmd).redirectErrorStream(false).start();
    byte[] out = p.getInputStream().readAllBytes();
    String err = new String(p.getErrorStream().readAllBytes(), StandardCharsets.UTF_8);
    if (!p.waitFor(2, TimeUnit.MINUTES) || p.exitValue() != 0) {
      p.destroyForcibly();
      throw new IOException("hosts.sh " + String.join(" ", args) + " failed: " + err);
    }
    return new String(out, StandardCharsets.UTF_8);
  }

  static Path script() {
    return repoRoot().resolve("scripts/hosts/hosts.sh");
  }

  static Path repoRoot() {
    Path dir = Path.of("").toAbsolutePath();
    for (Path d = dir; d != null; d = d.getParent()) {
      if (Files.exists(d.resolve("scripts/hosts/hosts.sh"))) {
        return d;
      }
    }
    throw new IllegalStateException("scripts/hosts/hosts.sh not found above " + dir);
  }
}
