package io.blobfs.fuse;

import io.blobfs.namespace.NamespaceOptions;
import io.blobfs.store.StoreOptions;
import java.io.IOException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import javax.xml.parsers.DocumentBuilderFactory;
import org.w3c.dom.Document;
import org.w3c.dom.Element;
import org.w3c.dom.NodeList;

/**
 * A mount's settings from the same {@code fs.blob.*} keys as blob://, so one
 * core-site.xml serves both. Read without Hadoop: a Hadoop configuration file is a list
 * of name/value properties, which the JDK's XML parser reads. For each file-system key
 * the store profile's value ({@code fs.blob.store.STORE.KEY}) wins, then
 * {@code fs.blob.KEY}, then the backend's own default, then blob://'s default, as in
 * blobfs-core's {@code BlobFsConfiguration}, whose key names and defaults these are.
 *
 * <p>Shared stripes (issue 16, {@code wip/shared-stripes/DESIGN.md} §3-4): with
 * {@value #TAKEOVER}{@code =true} a publication of a file the mount writes (not passed
 * through) is a new version that names the stripes of the version before which no write
 * or truncate through the mount changed, and sends only the others. <b>Off by
 * default</b>, the rollout gate of step 4: such a record is stored as {@code BFS3}, which
 * clients before session 16 cannot read (they refuse it as a bad magic: an old blob://
 * client's listing of the directory fails whole, an old mount gets EIO); turn it on only
 * once every client of the store is at this version or later. The mount's new files get
 * {@value #STRIPE_SIZE} if set, else the store's {@code stripe.size} or
 * {@code fs.blob.stripe.size} if set, else, with it on (and passthrough off: passed-through
 * files are uploaded whole), 8 MiB (a version re-sends whole stripes, so a 4 KiB change
 * costs 8 MiB, not 64), else blob://'s default. An existing file keeps
 * its stripe size in every version (a version adopts its base's, I4). blob://'s default
 * (64 MiB) is unchanged.
 */
record MountConfig(String storeName, String storeType, StoreOptions backend,
    NamespaceOptions namespace, int permission, Path stagingDir, long earlyUploadChunk,
    boolean passthrough, boolean takeover) {

  static final String PREFIX = "fs.blob.";
  static final String STORE_PREFIX = "fs.blob.store.";
  /** The mount's own keys: where files open for writing are staged; see EarlyUpload. */
  static final String STAGING_DIR = "fs.blob.fuse.staging.dir";
  static final String EARLY_UPLOAD = "fs.blob.fuse.early-upload.chunk";
  /**
   * FUSE passthrough (Linux 6.9+): the kernel reads and writes a file open for writing in
   * its staged copy itself, with no round trip to the mount per request. Off by default.
   */
  static final String PASSTHROUGH = "fs.blob.fuse.passthrough";
  /** Shared stripes for the mount's publications (see above). Off by default. */
  static final String TAKEOVER = "fs.blob.fuse.takeover";
  /** The stripe size of the files the mount creates (see above). */
  static final String STRIPE_SIZE = "fs.blob.fuse.stripe.size";
  /** {@value #STRIPE_SIZE} with {@value #TAKEOVER} on, when not set: the early upload's chunk. */
  static final long TAKEOVER_STRIPE_SIZE = 8L << 20;

  private static final List<String> FS_SUFFIXES = List.of("stripe.size", "write.buffer.size",
      "write.max-inflight", "inline.threshold", "directory.markers", "list.page.size",
      "create.performance", "writer.lease", "rename.lease", "permission", "read.buffer.size",
      "read.ahead", "read.random.min", "read.policy", "downgrade.syncable.exceptions");

  /** The properties of a Hadoop-style configuration file. */
  static Map<String, String> readXml(Path file) throws IOException {
    Map<String, String> props = new HashMap<>();
    try {
      DocumentBuilderFactory f = DocumentBuilderFactory.newInstance();
      f.setFeature("http://apache.org/xml/features/disallow-doctype-decl", true);
      Document doc = f.newDocumentBuilder().parse(file.toFile());
      NodeList list = doc.getElementsByTagName("property");
      for (int i = 0; i < list.getLength(); i++) {
        Element p = (Element) list.item(i);
        String name = text(p, "name");
        String value = text(p, "value");
        if (name != null && value != null) {
          props.put(name.trim(), value.trim());
        }
      }
    } catch (javax.xml.parsers.ParserConfigurationException | org.xml.sax.SAXException e) {
      throw new IOException("cannot read " + file + ": " + e.getMessage(), e);
    }
    return props;
  }

  private static String text(Element p, String tag) {
    NodeList l = p.getElementsByTagName(tag);
    return l.getLength() == 0 ? null : l.item(0).getTextContent();
  }

  /** Settings of store {@code storeName}; {@code backendDefaults} as the provider suggests. */
  static MountConfig parse(Map<String, String> conf, String storeName,
      Map<String, String> backendDefaults) {
    String storePrefix = STORE_PREFIX + storeName + ".";
    Map<String, String> profile = new HashMap<>();
    conf.forEach((k, v) -> {
      if (k.startsWith(storePrefix)) {
        profile.put(k.substring(storePrefix.length()), v);
      }
    });
    String type = profile.remove("type");
    if (type == null) {
      type = conf.getOrDefault("fs.blob.default.store.type", "memory");
    }
    // Set by the user for this store or for every blob:// store (not a back end's
    // suggestion): then the mount's new files keep it, takeover or not.
    boolean stripeSet = profile.containsKey("stripe.size")
        || conf.containsKey(PREFIX + "stripe.size");
    Map<String, String> fsValues = new HashMap<>();
    for (String suffix : FS_SUFFIXES) {
      String v = profile.remove(suffix);
      if (v == null) {
        v = conf.getOrDefault(PREFIX + suffix, backendDefaults.get(suffix));
      }
      if (v != null) {
        fsValues.put(suffix, v);
      }
    }
    StoreOptions fs = new StoreOptions(PREFIX, fsValues);
    StoreOptions mount = new StoreOptions("fs.blob.fuse.", fuseKeys(conf));
    boolean takeover = mount.getBoolean("takeover", false);
    boolean passthrough = mount.getBoolean("passthrough", false);
    // 8 MiB only where versions are made (seen writes: a passthrough mount uploads whole)
    // and nobody chose a stripe size.
    long stripe = mount.getBytes("stripe.size", takeover && !passthrough && !stripeSet
        ? TAKEOVER_STRIPE_SIZE
        : fs.getBytes("stripe.size", NamespaceOptions.DEFAULT_STRIPE_SIZE, 4096, 1L << 40),
        4096, 1L << 40);
    long buffer = Math.min(stripe, fs.getBytes("write.buffer.size", 8L << 20, 4096, 1L << 30));
    long inflight = fs.getBytes("write.max-inflight", 64L << 20, 0, 1L << 40);
    long inline = fs.getBytes("inline.threshold", 64L << 10, 0, 1L << 20);
    boolean markers = fs.getChoice("directory.markers", "none", List.of("none", "keep"))
        .equals("keep");
    int page = (int) fs.getLong("list.page.size", 1000, 1, 100_000);
    Duration lease = fs.getDuration("writer.lease", NamespaceOptions.DEFAULT_WRITER_LEASE);
    // The rename lease as blob:// reads it (before, the mount ignored the key and always
    // ran with the default).
    Duration renameLease =
        NamespaceOptions.renameLease(fs, "rename.lease", "writer.lease", lease);
    NamespaceOptions ns = new NamespaceOptions(stripe, (int) buffer, Math.max(inflight, buffer),
        (int) inline, markers, page, fs.getBoolean("create.performance", false), lease,
        renameLease);
    int permission;
    try {
      permission = Integer.parseInt(fs.getString("permission", "777"), 8) & 0777;
    } catch (NumberFormatException e) {
      throw fs.bad("permission", fs.getString("permission", ""), "octal 000-777");
    }
    Path staging = Path.of(conf.getOrDefault(STAGING_DIR, System.getProperty("java.io.tmpdir")
        + "/blobfs-fuse-" + ProcessHandle.current().pid()));
    long early = mount.getBytes("early-upload.chunk", EarlyUpload.DEFAULT_CHUNK, 0, 1L << 40);
    return new MountConfig(storeName, type, new StoreOptions(storePrefix, profile), ns,
        permission, staging, early, passthrough, takeover);
  }

  /** The mount's own keys ({@code fs.blob.fuse.*}) that are options, without the prefix. */
  private static Map<String, String> fuseKeys(Map<String, String> conf) {
    Map<String, String> keys = new HashMap<>();
    for (String key : List.of(EARLY_UPLOAD, PASSTHROUGH, TAKEOVER, STRIPE_SIZE)) {
      if (conf.containsKey(key)) {
        keys.put(key.substring("fs.blob.fuse.".length()), conf.get(key));
      }
    }
    return keys;
  }
}
