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
    int maxOsd = integer(root, "max_osd");
    Map<Integer, OsdMap.Pool> pools = new HashMap<>();
    for (JsonNode p : array(root, "pools")) {
      int id = integer(p, "pool");
      int pgpNum = p.has("pg_placement_num") ? integer(p, "pg_placement_num")
          : integer(p, "pgp_num");
      long flags = longValue(p, "flags");
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
      osds.put(id, new OsdMap.Osd(id, integer(o, "up") != 0, integer(o, "in") != 0,
          (int) Math.round(weight * 0x10000), affinity));
    }
    Set<String> upmapped = new HashSet<>();
    for (String field : List.of("pg_upmap", "pg_upmap_items")) {
      for (JsonNode e : optionalArray(root, field)) {
        upmapped.add(text(e, "pgid"));
      }
    }
    Set<String> temp = new HashSet<>();
    for (String field : List.of("pg_temp", "primary_temp")) {
      for (JsonNode e : optionalArray(root, field)) {
        temp.add(text(e, "pgid"));
      }
    }
    return new OsdMap(maxOsd, pools, osds, crush, upmapped, temp);
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
