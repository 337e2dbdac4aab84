package io.blobfs.e2e;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.ByteArrayInputStream;
import java.io.DataInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.jar.JarEntry;
import java.util.jar.JarFile;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The shaded bundle is all a Spark user adds: it must carry BlobFS's services, relocate
 * every third-party class under {@code io.blobfs.shaded}, and leave Hadoop out.
 */
class BundleJarIT {
  private static final String SHADED = "io/blobfs/shaded/";
  private static Path bundle;
  private static List<String> names;

  @BeforeAll
  static void open() throws IOException {
    bundle = E2eSupport.requiredJar("blobfs.bundle.jar");
    try (JarFile jar = new JarFile(bundle.toFile())) {
      names = Collections.list(jar.entries()).stream().map(JarEntry::getName).toList();
    }
  }

  @Test
  void registersTheFileSystemAndStoreProvidersAsServices() throws IOException {
    assertThat(services("META-INF/services/org.apache.hadoop.fs.FileSystem"))
        .contains("io.blobfs.hadoop.BlobFileSystem");
    assertThat(services("META-INF/services/io.blobfs.store.BlobStoreProvider"))
        .contains("io.blobfs.store.memory.InMemoryBlobStoreProvider",
            "io.blobfs.rados.RadosBlobStoreProvider");
  }

  @Test
  void everyServiceEntryNamesAClassInTheBundle() throws IOException {
    List<String> serviceFiles =
        names.stream().filter(n -> n.startsWith("META-INF/services/") && !n.endsWith("/")).toList();
    assertThat(serviceFiles).isNotEmpty();
    for (String f : serviceFiles) {
      for (String impl : services(f)) {
        assertThat(names).as("implementation %s listed in %s", impl, f)
            .contains(impl.replace('.', '/') + ".class");
      }
    }
  }

  @Test
  void containsBlobFsButNoUnrelocatedThirdPartyClasses() {
    assertThat(names).contains("io/blobfs/hadoop/BlobFileSystem.class");
    assertThat(names).noneMatch(n -> n.startsWith("com/google/"));
    assertThat(names).as("Hadoop is provided by the job's runtime, never bundled")
        .noneMatch(n -> n.startsWith("org/apache/hadoop/"));
    // JNA is the one dependency that cannot move: its native stub binds by package name.
    List<String> outside = names.stream()
        .filter(n -> n.endsWith(".class") && !n.startsWith("io/blobfs/")
            && !n.startsWith("com/sun/jna/"))
        .toList();
    assertThat(outside).as("classes outside io/blobfs/ (unrelocated dependencies)").isEmpty();
    assertThat(names).contains("io/blobfs/rados/RadosBlobStore.class",
        "io/blobfs/shaded/com/ceph/rados/Rados.class",
        "io/blobfs/locality/crush/CrushMapper.class",
        "io/blobfs/shaded/com/fasterxml/jackson/databind/ObjectMapper.class");
  }

  @Test
  void noClassStillReferencesUnrelocatedGoogleOrJacksonTypes() throws IOException {
    List<String> offenders = new ArrayList<>();
    try (JarFile jar = new JarFile(bundle.toFile())) {
      for (JarEntry e : Collections.list(jar.entries())) {
        if (!e.getName().endsWith(".class")) {
          continue;
        }
        try (InputStream in = jar.getInputStream(e)) {
          ConstantPool pool = ConstantPool.read(in.readAllBytes());
          for (String relocated : List.of("com/google/", "com/fasterxml/")) {
            for (String ref : pool.refsTo(relocated)) {
              offenders.add(e.getName() + " -> " + ref);
            }
          }
        }
      }
    }
    assertThat(offenders).as("class files naming com.google (Netty's protobuf codecs) or Jackson types outside %s", SHADED)
        .isEmpty();
  }

  @Test
  void constantPoolCheckSeesReferencesWhereTheyExist() throws IOException {
    // Guards the check above against passing vacuously: the same reader must find the
    // references that a bundled class really makes.
    String cls = "io/blobfs/hadoop/BlobFileSystem.class";
    try (JarFile jar = new JarFile(bundle.toFile());
        InputStream in = jar.getInputStream(jar.getJarEntry(cls))) {
      ConstantPool pool = ConstantPool.read(in.readAllBytes());
      assertThat(pool.refsTo("io/blobfs/namespace/"))
          .contains("io/blobfs/namespace/BlobNamespace");
      assertThat(pool.refsTo("com/google/")).isEmpty();
    }
  }

  /** Just enough of the class-file format to read the constant pool. */
  private record ConstantPool(String[] utf8, boolean[] classOrString) {
    static ConstantPool read(byte[] b) throws IOException {
      DataInputStream in = new DataInputStream(new ByteArrayInputStream(b));
      if (in.readInt() != 0xCAFEBABE) {
        throw new IOException("not a class file");
      }
      in.readUnsignedShort(); // minor
      in.readUnsignedShort(); // major
      int count = in.readUnsignedShort();
      String[] utf8 = new String[count];
      boolean[] named = new boolean[count];
      for (int i = 1; i < count; i++) {
        int tag = in.readUnsignedByte();
        switch (tag) {
          case 1 -> utf8[i] = in.readUTF();
          case 7, 8 -> named[in.readUnsignedShort()] = true; // Class, String: name index
          case 16, 19, 20 -> in.readUnsignedShort();
          case 3, 4, 9, 10, 11, 12, 17, 18 -> in.readInt();
          case 5, 6 -> {
            in.readLong();
            i++; // takes two slots
          }
          case 15 -> {
            in.readUnsignedByte();
            in.readUnsignedShort();
          }
          default -> throw new IOException("unknown constant pool tag " + tag);
        }
      }
      return new ConstantPool(utf8, named);
    }

    /**
     * References to the package {@code prefix} (slash form, e.g. {@code com/google/}): class
     * names and String constants that start with it (slash or dot form), and descriptors or
     * signatures that mention {@code L<prefix>}: what the JVM would try to load. Free text
     * such as an error message that mentions the package is not a reference, nor is the bare
     * package name (Jackson compares type names with "com.fasterxml." to spot its own).
     */
    List<String> refsTo(String prefix) {
      String dotted = prefix.replace('/', '.');
      List<String> refs = new ArrayList<>();
      for (int i = 0; i < utf8.length; i++) {
        String s = utf8[i];
        if (s == null) {
          continue;
        }
        boolean name = classOrString[i] && (s.startsWith(prefix) || s.startsWith(dotted))
            && !s.equals(prefix) && !s.equals(dotted);
        if (name || s.contains("L" + prefix)) {
          refs.add(s);
        }
      }
      return refs;
    }
  }

  private static List<String> services(String file) throws IOException {
    try (JarFile jar = new JarFile(bundle.toFile())) {
      JarEntry e = jar.getJarEntry(file);
      assertThat(e).as("%s in %s", file, bundle).isNotNull();
      try (InputStream in = jar.getInputStream(e)) {
        return new String(in.readAllBytes(), StandardCharsets.UTF_8).lines()
            .map(l -> l.replaceAll("#.*", "").trim())
            .filter(l -> !l.isEmpty())
            .toList();
      }
    }
  }
}
