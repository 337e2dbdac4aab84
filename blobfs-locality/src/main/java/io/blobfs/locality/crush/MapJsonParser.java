package io.blobfs.locality.crush;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.blobfs.locality.crush.CrushMap.Bucket;
import io.blobfs.locality.crush.CrushMap.BucketAlg;
import io.blobfs.locality.crush.CrushMap.Op;
import io.blobfs.locality.crush.CrushMap.Rule;
import io.blobfs.locality.crush.CrushMap.Step;
import io.blobfs.locality.crush.CrushMap.Tunables;
import io.blobfs.locality.crush.PlacementGroups.PgId;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;

/**
 * Parses the JSON of {@code ceph osd crush dump} (or {@code crushtool --dump}) and of
 * {@code ceph osd dump --format json} into immutable records. Anything malformed or outside
 * what this implementation places raises {@link CrushMapException}; it never guesses.
 */
public final class MapJsonParser {
  private static final ObjectMapper JSON = new ObjectMapper();

  private MapJsonParser() {}

  public static CrushMap parseCrush(String json) {
    JsonNode root = read(json, "crush dump");
    Map<String, Integer> typeIds = new HashMap<>();
    for (JsonNode t : array(root, "types")) {
      typeIds.put(text(t, "name"), integer(t, "type_id"));
    }
    int maxDevices = 0;
    for (JsonNode d : array(root, "devices")) {
      maxDevices = Math.max(maxDevices, integer(d, "id") + 1);
    }
    Map<Integer, Bucket> buckets = new HashMap<>();
    for (JsonNode b : array(root, "buckets")) {
      int id = integer(b, "id");
      String alg = text(b, "alg");
      BucketAlg bucketAlg;
      try {
        bucketAlg = BucketAlg.valueOf(alg.toUpperCase(Locale.ROOT));
      } catch (IllegalArgumentException e) {
        throw new UnsupportedMapFeatureException("bucket " + id + ": unknown alg '" + alg + "'");
      }
      if (bucketAlg != BucketAlg.STRAW2) {
        throw new UnsupportedMapFeatureException(
            "bucket " + id + ": alg " + alg + " is not implemented (only straw2)");
      }
      String hash = text(b, "hash");
      if (!"rjenkins1".equals(hash)) {
        throw new UnsupportedMapFeatureException("bucket " + id + ": unknown hash '" + hash + "'");
      }
      List<JsonNode> items = array(b, "items");
      int[] ids = new int[items.size()];
      int[] weights = new int[items.size()];
      for (int i = 0; i < items.size(); i++) {
        ids[i] = integer(items.get(i), "id");
        weights[i] = (int) longValue(items.get(i), "weight");
        if (ids[i] >= 0) {
          maxDevices = Math.max(maxDevices, ids[i] + 1);
        }
      }
      buckets.put(id, new Bucket(id, integer(b, "type_id"), bucketAlg, 0, ids, weights));
    }
    Map<Integer, Rule> rules = new HashMap<>();
    for (JsonNode r : array(root, "rules")) {
      int ruleId = integer(r, "rule_id");
      if (r.has("ruleset") && integer(r, "ruleset") != ruleId) {
        throw new UnsupportedMapFeatureException("rule " + ruleId + " has ruleset "
            + r.get("ruleset") + " != rule_id");
      }
      List<Step> steps = new ArrayList<>();
      for (JsonNode s : array(r, "steps")) {
        steps.add(step(s, typeIds, ruleId));
      }
      rules.put(ruleId, new Rule(ruleId, integer(r, "type"), steps));
    }
    JsonNode t = object(root, "tunables");
    Tunables tunables = new Tunables(integer(t, "choose_local_tries"),
        integer(t, "choose_local_fallback_tries"), integer(t, "choose_total_tries"),
        integer(t, "chooseleaf_descend_once"), integer(t, "chooseleaf_vary_r"),
        integer(t, "chooseleaf_stable"));
    JsonNode chooseArgs = root.get("choose_args");
    if (chooseArgs != null && !chooseArgs.isEmpty()) {
      throw new UnsupportedMapFeatureException("choose_args (weight sets) are not implemented");
    }
    for (Bucket b : buckets.values()) {
      for (int item : b.items()) {
        if (item < 0 && !buckets.containsKey(item)) {
          throw new CrushMapException("bucket " + b.id() + " holds missing bucket " + item);
        }
      }
    }
    return new CrushMap(buckets, rules, tunables, maxDevices);
  }

  /**
   * OSD id to the name of the CRUSH bucket of type {@code hostType} above it (normally
   * "host", whose buckets Ceph names after the machine unless told otherwise). OSDs under no
   * such bucket are absent.
   */
  public static Map<Integer, String> deviceHosts(String crushJson, String hostType) {
    JsonNode root = read(crushJson, "crush dump");
    Map<Integer, JsonNode> byId = new HashMap<>();
    for (JsonNode b : array(root, "buckets")) {
      byId.put(integer(b, "id"), b);
    }
    Map<Integer, String> hosts = new HashMap<>();
    for (JsonNode b : byId.values()) {
      if (!hostType.equals(b.path("type_name").asText())) {
        continue;
      }
      String name = text(b, "name");
      List<Integer> pending = new ArrayList<>(List.of(integer(b, "id")));
      Set<Integer> seen = new HashSet<>();
      while (!pending.isEmpty()) {
        JsonNode bucket = byId.get(pending.remove(pending.size() - 1));
        if (bucket == null || !seen.add(integer(bucket, "id"))) {
          continue;
        }
        for (JsonNode item : array(bucket, "items")) {
          int id = integer(item, "id");
          if (id >= 0) {
            hosts.putIfAbsent(id, name);
          } else {
            pending.add(id);
          }
        }
      }
    }
    return hosts;
  }

  private static Step step(JsonNode s, Map<String, Integer> typeIds, int ruleId) {
    String op = text(s, "op");
    return switch (op) {
      case "take" -> new Step(Op.TAKE, integer(s, "item"), 0);
      case "emit" -> new Step(Op.EMIT, 0, 0);
      case "choose_firstn", "chooseleaf_firstn", "choose_indep", "chooseleaf_indep" -> {
        String type = text(s, "type");
        Integer typeId = typeIds.get(type);
        if (typeId == null) {
          throw new CrushMapException("rule " + ruleId + ": unknown type '" + type + "'");
        }
        yield new Step(Op.valueOf(op.toUpperCase(Locale.ROOT)), integer(s, "num"), typeId);
      }
      case "set_choose_tries", "set_chooseleaf_tries", "set_choose_local_tries",
          "set_choose_local_fallback_tries", "set_chooseleaf_vary_r",
          "set_chooseleaf_stable" ->
          new Step(Op.valueOf(op.toUpperCase(Locale.ROOT)), integer(s, "num"), 0);
      default -> throw new UnsupportedMapFeatureException(
          "rule " + ruleId + ": unknown step op '" + op + "'");
    };
  }

  /** Parses {@code ceph osd dump --format json}, joined with an already parsed CRUSH map. */
  public static OsdMap parseOsdMap(String json, CrushMap crush) {
    JsonNode root = read(json, "osd dump");
    int epoch = root.has("epoch") ? integer(root, "epoch") : 0;
    int maxOsd = integer(root, "max_osd");
    Map<Integer, OsdMap.Pool> pools = new HashMap<>();
    for (JsonNode p : array(root, "pools")) {
      int id = integer(p, "pool");
      int pgpNum = p.has("pg_placement_num") ? integer(p, "pg_placement_num")
          : integer(p, "pgp_num");
      long flags = longValue(p, "flags");
      // CEPH_STR_HASH_RJENKINS; the older "linux" dcache hash is not implemented
      if (p.has("object_hash") && integer(p, "object_hash") != 2) {
        throw new UnsupportedMapFeatureException("pool " + id + ": object_hash "
            + p.get("object_hash") + " (only rjenkins, 2, is implemented)");
      }
      pools.put(id, new OsdMap.Pool(id, p.path("pool_name").asText(""), integer(p, "type"),
          integer(p, "size"), integer(p, "crush_rule"), integer(p, "pg_num"), pgpNum,
          (flags & 1) != 0));
    }
    Map<Integer, OsdMap.Osd> osds = new HashMap<>();
    for (JsonNode o : array(root, "osds")) {
      int id = integer(o, "osd");
      double weight = number(o, "weight");
      if (weight < 0 || weight > 1) {
        throw new CrushMapException("osd." + id + ": weight " + weight + " outside [0, 1]");
      }
      double affinity = o.has("primary_affinity") ? number(o, "primary_affinity") : 1.0;
      if (affinity < 0 || affinity > 1) {
        throw new CrushMapException("osd." + id + ": primary_affinity " + affinity
            + " outside [0, 1]");
      }
      osds.put(id, new OsdMap.Osd(id, integer(o, "up") != 0, integer(o, "in") != 0,
          (int) Math.round(weight * 0x10000), affinity, addressHost(o.path("public_addr"))));
    }
    Map<PgId, List<Integer>> upmap = new HashMap<>();
    for (JsonNode e : optionalArray(root, "pg_upmap")) {
      upmap.put(pgId(e), intList(e, "osds"));
    }
    Map<PgId, List<OsdMap.Remap>> upmapItems = new HashMap<>();
    for (JsonNode e : optionalArray(root, "pg_upmap_items")) {
      List<OsdMap.Remap> remaps = new ArrayList<>();
      for (JsonNode m : array(e, "mappings")) {
        remaps.add(new OsdMap.Remap(integer(m, "from"), integer(m, "to")));
      }
      upmapItems.put(pgId(e), remaps);
    }
    Map<PgId, List<Integer>> pgTemp = new HashMap<>();
    for (JsonNode e : optionalArray(root, "pg_temp")) {
      pgTemp.put(pgId(e), intList(e, "osds"));
    }
    Map<PgId, Integer> primaryTemp = new HashMap<>();
    List<JsonNode> entries = optionalArray(root, "primary_temp");
    for (int i = 0; i < entries.size(); i++) {
      JsonNode e = entries.get(i);
      if (e.isObject()) {
        primaryTemp.put(pgId(e), integer(e, "osd"));
      } else {
        // Pacific dumps this array without an object per entry: "pgid", osd, "pgid", osd...
        JsonNode osd = i + 1 < entries.size() ? entries.get(i + 1) : null;
        if (!e.isTextual() || osd == null || !osd.isIntegralNumber()) {
          throw new CrushMapException("primary_temp: expected a pgid and an osd at " + i
              + " in " + root.get("primary_temp"));
        }
        primaryTemp.put(PgId.parse(e.asText()), osd.asInt());
        i++;
      }
    }
    return new OsdMap(epoch, maxOsd, pools, osds, crush,
        new OsdMap.Overrides(upmap, upmapItems, pgTemp, primaryTemp));
  }

  private static PgId pgId(JsonNode entry) {
    return PgId.parse(text(entry, "pgid"));
  }

  private static List<Integer> intList(JsonNode n, String field) {
    List<Integer> out = new ArrayList<>();
    for (JsonNode v : array(n, field)) {
      if (!v.isIntegralNumber()) {
        throw new CrushMapException("'" + field + "' holds a non-integer: " + n);
      }
      out.add(v.asInt());
    }
    return out;
  }

  /** The host part of a Ceph entity address ("127.0.0.1:6806/19476", "[::1]:6806/7"). */
  private static String addressHost(JsonNode addr) {
    String a = addr.asText("");
    int slash = a.lastIndexOf('/');
    if (slash >= 0) {
      a = a.substring(0, slash);
    }
    int colon = a.lastIndexOf(':');
    if (colon > 0) {
      a = a.substring(0, colon);
    }
    if (a.startsWith("[") && a.endsWith("]")) {
      a = a.substring(1, a.length() - 1);
    }
    return a.equals("-") || a.equals("0.0.0.0") || a.equals("::") ? "" : a;
  }

  private static JsonNode read(String json, String what) {
    try {
      JsonNode n = JSON.readTree(json);
      if (n == null || !n.isObject()) {
        throw new CrushMapException(what + ": not a JSON object");
      }
      return n;
    } catch (JsonProcessingException e) {
      throw new CrushMapException(what + ": malformed JSON: " + e.getOriginalMessage(), e);
    }
  }

  private static List<JsonNode> array(JsonNode n, String field) {
    JsonNode a = n.get(field);
    if (a == null || !a.isArray()) {
      throw new CrushMapException("missing array '" + field + "'");
    }
    List<JsonNode> out = new ArrayList<>();
    a.forEach(out::add);
    return out;
  }

  private static List<JsonNode> optionalArray(JsonNode n, String field) {
    return n.has(field) ? array(n, field) : List.of();
  }

  private static JsonNode object(JsonNode n, String field) {
    JsonNode o = n.get(field);
    if (o == null || !o.isObject()) {
      throw new CrushMapException("missing object '" + field + "'");
    }
    return o;
  }

  private static String text(JsonNode n, String field) {
    JsonNode v = n.get(field);
    if (v == null || !v.isTextual()) {
      throw new CrushMapException("missing string '" + field + "' in " + n);
    }
    return v.asText();
  }

  private static long longValue(JsonNode n, String field) {
    JsonNode v = n.get(field);
    if (v == null || !v.isIntegralNumber()) {
      throw new CrushMapException("missing integer '" + field + "' in " + n);
    }
    return v.asLong();
  }

  private static int integer(JsonNode n, String field) {
    long v = longValue(n, field);
    if (v < Integer.MIN_VALUE || v > Integer.MAX_VALUE) {
      throw new CrushMapException("'" + field + "' out of int range: " + v);
    }
    return (int) v;
  }

  private static double number(JsonNode n, String field) {
    JsonNode v = n.get(field);
    if (v == null || !v.isNumber()) {
      throw new CrushMapException("missing number '" + field + "' in " + n);
    }
    return v.asDouble();
  }
}
