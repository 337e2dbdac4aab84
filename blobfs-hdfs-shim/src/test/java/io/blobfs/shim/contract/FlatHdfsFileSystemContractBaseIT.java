package io.blobfs.shim.contract;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileSystemContractBaseTest;
import org.apache.hadoop.fs.Path;
import org.junit.Before;

/** Hadoop's older FileSystem contract, on the same binding as the contract suites. */
public class FlatHdfsFileSystemContractBaseIT extends FileSystemContractBaseTest {
  @Before
  public void setUp() throws Exception {
    FlatHdfsContract contract = new FlatHdfsContract(new Configuration());
    contract.init();
    fs = contract.getTestFileSystem();
  }

  @Override
  protected boolean rootDirTestEnabled() {
    return true;
  }

  /**
   * Declared (rename-creates-dest-dirs): rename does not need the destination's parent,
   * which this older suite does not consult. Asserted here instead: the file moves.
   */
  @Override
  public void testRenameFileMoveToNonExistentDirectory() throws Exception {
    Path src = path("testRenameFileMoveToNonExistentDirectory/file");
    createFile(src);
    Path dst = path("testRenameFileMoveToNonExistentDirectory/new/newdir/file");
    rename(src, dst, true, false, true);
  }

  /** As above, for a directory: every name under it moves. */
  @Override
  public void testRenameDirectoryMoveToNonExistentDirectory() throws Exception {
    Path src = path("testRenameDirectoryMoveToNonExistentDirectory/dir");
    createFile(new Path(src, "file1"));
    createFile(new Path(src, "subdir/file2"));
    Path dst = path("testRenameDirectoryMoveToNonExistentDirectory/new/newdir");
    rename(src, dst, true, false, true);
    org.junit.Assert.assertTrue(fs.isFile(new Path(dst, "file1")));
    org.junit.Assert.assertTrue(fs.isFile(new Path(dst, "subdir/file2")));
  }
}
