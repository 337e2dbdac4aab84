package io.blobfs.contract;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.FileSystemContractBaseTest;
import org.junit.Before;

/** Hadoop's older FileSystem contract, on the same binding as the contract suites. */
public class BlobFileSystemContractBaseTest extends FileSystemContractBaseTest {
  @Before
  public void setUp() throws Exception {
    fs = openFileSystem();
  }

  /** The file system under test; other stores' bindings override this alone. */
  protected FileSystem openFileSystem() throws Exception {
    Configuration conf = new Configuration();
    conf.addResource(BlobContract.XML);
    return FileSystem.get(BlobContract.STORE, conf);
  }

  @Override
  protected boolean rootDirTestEnabled() {
    return true;
  }

  /**
   * BlobFS has no permissions: every entry reports the configured permission (777 by
   * default) whatever the umask, a declared deviation. Asserted here instead.
   */
  @Override
  public void testMkdirsWithUmask() throws Exception {
    Configuration conf = fs.getConf();
    String old = conf.get(org.apache.hadoop.fs.CommonConfigurationKeys.FS_PERMISSIONS_UMASK_KEY);
    try {
      conf.set(org.apache.hadoop.fs.CommonConfigurationKeys.FS_PERMISSIONS_UMASK_KEY, TEST_UMASK);
      org.apache.hadoop.fs.Path dir = path("newDir");
      org.junit.Assert.assertTrue(fs.mkdirs(dir, new org.apache.hadoop.fs.permission.FsPermission((short) 0777)));
      org.junit.Assert.assertEquals(0777, fs.getFileStatus(dir).getPermission().toShort());
    } finally {
      if (old == null) {
        conf.unset(org.apache.hadoop.fs.CommonConfigurationKeys.FS_PERMISSIONS_UMASK_KEY);
      } else {
        conf.set(org.apache.hadoop.fs.CommonConfigurationKeys.FS_PERMISSIONS_UMASK_KEY, old);
      }
    }
  }
}
