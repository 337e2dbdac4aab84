/*
 * LD_PRELOAD shim for TxRecordsDirSyncFailureTest: fsync/fdatasync of a DIRECTORY fd fail
 * with EIO while $FAILSYNC_DIR/EIO exists, with EINVAL (a file system that cannot sync a
 * directory) while $FAILSYNC_DIR/EINVAL exists. Regular files are never affected.
 * Build: cc -shared -fPIC -o libfailsync.so failsync.c -ldl
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>
static int marked(const char *name) {
  const char *d = getenv("FAILSYNC_DIR");
  char p[PATH_MAX];
  if (!d) return 0;
  snprintf(p, sizeof p, "%s/%s", d, name);
  return access(p, F_OK) == 0;
}
static int dir_fail(int fd) {
  struct stat st;
  if (fstat(fd, &st) != 0 || !S_ISDIR(st.st_mode)) return 0;
  if (marked("EIO")) { errno = EIO; return 1; }
  if (marked("EINVAL")) { errno = EINVAL; return 1; }
  return 0;
}
int fsync(int fd) {
  static int (*real)(int);
  if (!real) real = dlsym(RTLD_NEXT, "fsync");
  if (dir_fail(fd)) return -1;
  return real(fd);
}
int fdatasync(int fd) {
  static int (*real)(int);
  if (!real) real = dlsym(RTLD_NEXT, "fdatasync");
  if (dir_fail(fd)) return -1;
  return real(fd);
}
