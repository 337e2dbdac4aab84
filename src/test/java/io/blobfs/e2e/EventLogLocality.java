package io.blobfs.e2e;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.BufferedReader;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Comparator;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.TreeMap;
import java.util.stream.Stream;

/**
 * The locality of input tasks as Spark itself recorded it: its event logs
 * ({@code spark.eventLog.enabled}, uncompressed), one JSON event per line. An input task is a
 * {@code SparkListenerTaskEnd} whose task read input bytes ({@code Input Metrics}); its
 * {@code Task Info}'s {@code Locality} is the level the scheduler launched it at.
 */
final class EventLogLocality {
  private static final ObjectMapper JSON = new ObjectMapper();

  private EventLogLocality() {}

  /** Input tasks of one kind of application, by locality level and by host. */
  record Share(Map<String, Integer> byLocality, Map<String, Integer> byHost,
      List<String> apps) {
    int total() {
      return byLocality.values().stream().mapToInt(Integer::intValue).sum();
    }

    /** PROCESS_LOCAL counts too: it is a better level than NODE_LOCAL, on the same host. */
    int nodeLocal() {
      return byLocality.getOrDefault("NODE_LOCAL", 0)
          + byLocality.getOrDefault("PROCESS_LOCAL", 0);
    }

    double fraction() {
      return total() == 0 ? 0 : (double) nodeLocal() / total();
    }

    @Override
    public String toString() {
      return String.format(Locale.ROOT, "%d of %d (%.3f) %s %s in %s", nodeLocal(), total(),
          fraction(), byLocality, byHost, apps);
    }
  }

  /**
   * The input tasks of every application that logged into {@code dir}. (By directory, not by
   * name: the applications name themselves, which overrides {@code spark.app.name}.)
   */
  static Share inputTasks(Path dir) throws IOException {
    List<String> apps = new java.util.ArrayList<>();
    Map<String, Integer> byLocality = new TreeMap<>();
    Map<String, Integer> byHost = new TreeMap<>();
    // A rolling event log (spark.eventLog.rolling.enabled) is a directory per application
    // whose events_N_* files continue one another.
    List<Path> logs;
    try (Stream<Path> s = Files.walk(dir)) {
      logs = s.filter(Files::isRegularFile)
          .filter(p -> !p.getFileName().toString().startsWith("appstatus"))
          .sorted(Comparator.comparing((Path p) -> p.getParent().toString())
              .thenComparingInt(EventLogLocality::rollingIndex))
          .toList();
    }
    for (Path log : logs) {
      try (BufferedReader r = Files.newBufferedReader(log, StandardCharsets.UTF_8)) {
        for (String line = r.readLine(); line != null; line = r.readLine()) {
          JsonNode e = JSON.readTree(line);
          String event = e.path("Event").asText();
          if (event.equals("SparkListenerApplicationStart")) {
            apps.add(e.path("App Name").asText() + " (" + e.path("App ID").asText() + ")");
          } else if (event.equals("SparkListenerTaskEnd")
              && e.path("Task Metrics").path("Input Metrics").path("Bytes Read").asLong() > 0) {
            JsonNode info = e.path("Task Info");
            byLocality.merge(info.path("Locality").asText(), 1, Integer::sum);
            byHost.merge(info.path("Host").asText(), 1, Integer::sum);
          }
        }
      }
    }
    return new Share(byLocality, byHost, apps);
  }

  /** N of a rolling log's {@code events_N_APPID}; 0 for a single-file log. */
  private static int rollingIndex(Path p) {
    String[] f = p.getFileName().toString().split("_");
    return f.length > 2 && f[0].equals("events") && f[1].matches("[0-9]+")
        ? Integer.parseInt(f[1]) : 0;
  }
}
