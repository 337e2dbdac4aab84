package io.blobfs.e2e;

import io.blobfs.rados.CephTestCluster;
import java.io.IOException;
import java.util.HashMap;
import java.util.Map;

/** The core job on the real Ceph cluster the project's script starts. */
class SparkOnRadosIT extends SparkJobsOnStoreTestBase {

  @Override
  String store() {
    return "rados-e2e";
  }

  @Override
  String backend() {
    return "RADOS";
  }

  @Override
  Map<String, String> startStore() throws IOException {
    CephTestCluster.Env env = CephTestCluster.single();
    Map<String, String> settings = new HashMap<>();
    for (Map.Entry<String, String> e : CephTestCluster.hadoopConf(env, store(),
        "e2e-" + ProcessHandle.current().pid())) {
      if (e.getKey().startsWith("fs.blob.")) {
        settings.put(e.getKey(), e.getValue());
      }
    }
    return settings;
  }
}
