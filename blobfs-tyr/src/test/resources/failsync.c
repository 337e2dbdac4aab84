#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <sys/stat.h>
#include <unistd.h>
static int dir_fail(int fd) {
  struct stat st;
  if (access("/tmp/rev-re2/FAIL_DIR_FSYNC", F_OK) == 0 && fstat(fd, &st) == 0
      && S_ISDIR(st.st_mode)) { errno = EIO; return 1; }
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
